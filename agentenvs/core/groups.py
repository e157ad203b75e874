"""Trajectory groups over Gymnasium vector envs: G copies of each task, in lockstep.

GRPO-style credit compares rollouts of the *same* task. :func:`make_group_vec`
builds a vector env of ``num_groups * group_size`` sub-envs where consecutive
blocks of ``group_size`` form a group; every member of a group is reset with the
same seed and the same task. Autoreset is disabled (a finished member stays
finished until the next reset: :class:`HoldWhenFinished` answers the actions a lockstep step
still hands it) and no shared memory is used (text observations).
The members run in this process (``"sync"``), one subprocess each (``"async"``), or in
``num_workers`` Ray actors holding whole groups (``"ray"``, :mod:`agentenvs.core.ray_vector`).

Example:
    >>> import agentenvs
    >>> envs = make_group_vec("SearchQA-v0", num_groups=2, group_size=3, seed=0)
    >>> obs, info = envs.reset()
    >>> envs.group_ids.tolist()
    [0, 0, 0, 1, 1, 1]
    >>> len(set(info["task_id"][:3])) == 1
    True
    >>> envs.close()
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorWrapper

from agentenvs.core.checks import check_choice, check_int, check_str, is_integer, shown
from agentenvs.core.privileged import PRIVILEGED_KEY
from agentenvs.core.ray_vector import RayVectorEnv, worker_blocks

VECTORIZATION_MODES: tuple[str, ...] = ("sync", "async", "ray")


def draw_group_seeds(rng: np.random.Generator, num_groups: int) -> list[int]:
    """The next reset's group seeds from a group-seed generator (what :class:`GroupVectorEnv` draws).

    >>> draw_group_seeds(np.random.default_rng(0), 2) == draw_group_seeds(np.random.default_rng(0), 2)
    True
    """
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=num_groups)]


class GroupVectorEnv(VectorWrapper):
    """A vector env whose sub-envs form task groups (see :func:`make_group_vec`).

    Attributes:
        num_groups: Number of groups.
        group_size: Members per group (G).
        group_ids: Group index of each sub-env, shape ``(num_groups * group_size,)``.
        last_group_seeds: The seed each group was reset with by the last successful reset (None
            before one): a member's episode replays from ``reset(seed=..., options={"task_id": ...})``.
    """

    env: SyncVectorEnv | AsyncVectorEnv | RayVectorEnv

    def __init__(
        self,
        env: SyncVectorEnv | AsyncVectorEnv | RayVectorEnv,
        num_groups: int,
        group_size: int,
        seed: int | None = None,
    ) -> None:
        super().__init__(env)
        if env.num_envs != num_groups * group_size:
            raise ValueError(f"vector env has {env.num_envs} sub-envs, expected {num_groups} x {group_size}")
        self.num_groups = num_groups
        self.group_size = group_size
        self.group_ids = np.repeat(np.arange(num_groups), group_size)
        self._rng = np.random.default_rng(seed)
        self.last_group_seeds: list[int] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Resets all sub-envs; each group gets one seed and one task.

        Args:
            seed: Reseeds the group-seed generator (then seeds are drawn from it).
            options: May hold ``task_ids``: one task id (a string) per group, and ``group_seeds``:
                one seed per group instead of drawing them (the generator is then not advanced).
                Other options are passed to every sub-env.

        A reset that fails (bad options, an unknown task id) leaves the groups as they were: no
        sub-env keeps a task it was handed, and the group-seed generator is where it was, so the
        next reset gives what it would have given without the failed one.

        Raises:
            ValueError: naming the bad option or task id.
        """
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"GroupVectorEnv.reset: options must be a dict or None, got {shown(options)}")
        options = dict(options or {})
        task_ids = _per_group("task_ids", options.pop("task_ids", None), self.num_groups, str)
        group_seeds = _per_group("group_seeds", options.pop("group_seeds", None), self.num_groups, int)
        for task_id in dict.fromkeys(task_ids or ()):  # before any sub-env is touched
            if not self.env.call("has_task", task_id)[0]:
                raise ValueError(
                    f"GroupVectorEnv.reset: unknown task id {shown(task_id)} in options['task_ids'] "
                    "(see GroupVectorEnv.task_ids)"
                )
        if options:  # passed to every sub-env: checked first, as a worker whose reset raises is shut down
            problem = next((found for found in self.env.call("reset_options_error", options) if found), None)
            if problem is not None:
                raise ValueError(f"GroupVectorEnv.reset: {problem}")
        rng = np.random.default_rng(seed) if seed is not None else self._rng
        saved = rng.bit_generator.state
        if group_seeds is None:
            group_seeds = draw_group_seeds(rng, self.num_groups)
        seeds = [int(group_seeds[int(g)]) for g in self.group_ids]
        try:
            if task_ids is not None:
                self.env.set_attr("next_task_id", [task_ids[int(g)] for g in self.group_ids])
            # Sync and async vector envs take one seed per sub-env (VectorEnv's signature says one int).
            result = self.env.reset(seed=seeds, options=options or None)  # type: ignore[arg-type]
        except Exception:
            rng.bit_generator.state = saved
            if task_ids is not None:
                self.env.set_attr("next_task_id", None)
            raise
        self._rng = rng
        self.last_group_seeds = [int(s) for s in group_seeds]
        return result

    @property
    def task_ids(self) -> tuple[str, ...]:
        """The tasks the groups can play (the sub-envs' common pool)."""
        return tuple(self.env.get_attr("task_ids")[0])

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Calls method ``name`` of every sub-env with the same arguments, in sub-env order (the vector env's
        ``call``: e.g. ``call("snapshot")``, ``call("restore", snapshot)``, ``call("expert_action")``)."""
        return tuple(self.env.call(name, *args, **kwargs))

    def group_slices(self) -> list[slice]:
        """Sub-env index ranges of each group."""
        return [slice(g * self.group_size, (g + 1) * self.group_size) for g in range(self.num_groups)]


def _per_group(name: str, values: Any, num_groups: int, kind: type) -> list[Any] | None:
    """``options[name]`` checked: None, or a list of ``num_groups`` values of ``kind``."""
    if values is None:
        return None
    expected = f"a list of {num_groups} {'strings' if kind is str else 'integers'} (one per group)"
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ValueError(f"GroupVectorEnv.reset: options[{name!r}] must be {expected}, got {shown(values)}")
    items = list(values)
    wrong = [v for v in items if not (isinstance(v, str) if kind is str else is_integer(v))]
    if len(items) != num_groups or wrong:
        raise ValueError(f"GroupVectorEnv.reset: options[{name!r}] must be {expected}, got {shown(items)}")
    return [kind(v) for v in items]


def make_group_vec(
    env_id: str,
    num_groups: int,
    group_size: int,
    seed: int | None = None,
    vectorization_mode: Literal["sync", "async", "ray"] = "sync",
    num_workers: int | None = None,
    **env_kwargs: Any,
) -> GroupVectorEnv:
    """Builds ``num_groups`` groups of ``group_size`` envs of ``env_id``.

    Args:
        env_id: A registered env id (e.g. ``"SearchQA-v0"``), or ``"module:EnvId"`` as ``gym.make``
            takes it (the module registers the id, in every worker process too).
        num_groups: Number of distinct tasks per reset.
        group_size: Rollouts per task (G).
        seed: Seed of the group-seed generator.
        vectorization_mode: ``"sync"`` (one process), ``"async"`` (a subprocess per env) or
            ``"ray"`` (``num_workers`` Ray actors, whole groups each; needs the ``scale`` extra).
        num_workers: Ray actors (``"ray"`` only; default: one per group, at most the number of groups).
        **env_kwargs: Passed to ``gym.make`` for every sub-env.
    """
    check_str("make_group_vec", "env_id", env_id)
    check_int("make_group_vec", "num_groups", num_groups, minimum=1)
    check_int("make_group_vec", "group_size", group_size, minimum=1)
    check_int("make_group_vec", "seed", seed, minimum=0, optional=True)
    check_choice("make_group_vec", "vectorization_mode", vectorization_mode, VECTORIZATION_MODES)
    module, _, registered_id = env_id.rpartition(":")
    if module:  # "module:EnvId", as gym.make takes it: importing the module registers the id
        importlib.import_module(module)
    gym.spec(registered_id)  # fails early, naming the id, if it is not registered
    env_fns = [_EnvFactory(env_id, env_kwargs) for _ in range(num_groups * group_size)]
    if num_workers is not None and vectorization_mode != "ray":
        raise ValueError(f"num_workers is for vectorization_mode='ray', got vectorization_mode={vectorization_mode!r}")
    vector: SyncVectorEnv | AsyncVectorEnv | RayVectorEnv
    if vectorization_mode == "sync":
        vector = _LockstepSyncVectorEnv(env_fns, autoreset_mode=AutoresetMode.DISABLED)
    elif vectorization_mode == "async":
        vector = AsyncVectorEnv(env_fns, shared_memory=False, autoreset_mode=AutoresetMode.DISABLED)
    elif vectorization_mode == "ray":
        blocks = worker_blocks(num_groups, group_size, num_groups if num_workers is None else num_workers)
        vector = RayVectorEnv(env_fns, blocks)
    else:
        raise ValueError(f"vectorization_mode must be one of {VECTORIZATION_MODES}, got {vectorization_mode!r}")
    return GroupVectorEnv(vector, num_groups, group_size, seed=seed)


class _LockstepSyncVectorEnv(SyncVectorEnv):
    """SyncVectorEnv that lets finished sub-envs keep receiving actions.

    Group rollouts run in lockstep, so a member that finished early is still handed
    an action each step; :class:`HoldWhenFinished` answers those with a no-op. Gymnasium's sync
    env asserts against this in ``DISABLED`` mode (its async env does not), so the
    finished-flags it keeps for that assertion are cleared before each step.
    """

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        self._autoreset_envs[:] = False
        return super().step(actions)


class _EnvFactory:
    """A picklable ``gym.make`` call.

    A subprocess that unpickles it imports this module, and with it the ``agentenvs`` package,
    which registers the ids (no ``import agentenvs`` here: that would close an import cycle).
    """

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        self.env_id = env_id
        self.kwargs = kwargs

    def __call__(self) -> gym.Env:
        return HoldWhenFinished(gym.make(self.env_id, **self.kwargs))


HELD_INFO_KEYS = ("task_id", "task", "turn", "won", PRIVILEGED_KEY)
"""What the info of a held step keeps from the episode's last info (when there)."""


class HoldWhenFinished(gym.Wrapper[Any, Any, Any, Any]):
    """A group member that finished stays finished: steps after its end change nothing.

    An agentenvs env raises ``ResetNeeded`` on a step after its episode ended, as a lone env
    should; a lockstep group still hands its finished members an action each step. This
    wrapper answers those itself: the last observation, reward 0, the same
    ``terminated``/``truncated``, and an info with ``action_valid=False``, no action, no
    admissible actions and an ``error`` (``task_id``, ``task``, ``turn``, ``won`` and
    ``privileged`` as they ended).
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self._ended: tuple[Any, bool, bool, dict[str, Any]] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        result = self.env.reset(seed=seed, options=options)
        self._ended = None
        return result

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._ended is not None:
            observation, terminated, truncated, last = self._ended
            info = {key: last[key] for key in HELD_INFO_KEYS if key in last}
            info.update(
                action_valid=False,
                admissible_actions=None,
                action="",
                action_span=None,
                error="The episode is over; call reset().",
            )
            return observation, 0.0, terminated, truncated, info
        observation, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self._ended = (observation, bool(terminated), bool(truncated), info)
        return observation, float(reward), terminated, truncated, info
