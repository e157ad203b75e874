"""Where each turn of a collected batch started, and envs put back there.

A :class:`TurnStart` is the state before one row's turn: the recorded snapshot
(``env.unwrapped.snapshot()``, when the collector kept one: ``Collector(record_snapshots=True)``),
the recipe to replay it from reset (the trajectory's task, its reset seed and the raw outputs of
the turns before), the prompt history the policy saw there, and the observation the env showed.
:func:`put_at` puts an env at a start (restore, else replay) and checks the observation it gets
is the recorded one, so a non-deterministic replay fails loudly instead of measuring another
state. Two starts with the same :attr:`TurnStart.key` (same task and seed, same history and
observation) are one state: a group's first turns, for instance.

Example:
    >>> start = TurnStart("t1", 3, ("<a>x</a>",), (("room", "x"),), "hall")
    >>> start.key == TurnStart("t1", 3, ("<a> x</a>",), (("room", "x"),), "hall").key
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from agentenvs.core.prompts import history_action
from agentenvs.core.registration import with_privileged
from agentenvs.core.trajectory import to_json_value
from agents.rollout import RolloutBatch


@dataclass(frozen=True)
class TurnStart:
    """The state before one turn (see the module docstring).

    Attributes:
        task_id: The trajectory's task.
        seed: Its reset seed (``Trajectory.metadata["seed"]``; None: unknown, replay impossible).
        outputs: The raw outputs of the turns before, in order (what a replay steps).
        history: The prompt history the policy saw: ``(observation, history action)`` per turn before.
        observation: What the env showed at this state.
        snapshot: The env's snapshot at this state, or None (replay).
        group_id: The trajectory's group (tells states apart when the seed is unknown).
    """

    task_id: str
    seed: int | None
    outputs: tuple[str, ...]
    history: tuple[tuple[str, str], ...]
    observation: str
    snapshot: Any = None
    group_id: int = 0

    @property
    def key(self) -> tuple[Any, ...]:
        """Equal for equal states: the task, the seed (the group where it is unknown), the history
        and the observation (raw outputs that the env read as the same action do not matter)."""
        seed = ("group", self.group_id) if self.seed is None else self.seed
        return (self.task_id, seed, self.history, self.observation)


def turn_starts(batch: RolloutBatch) -> list[TurnStart]:
    """The start of every row's turn, row by row (snapshots from ``batch.snapshots`` when recorded)."""
    trajectories = batch.trajectories
    starts = []
    for row, (index, turn) in enumerate(zip(batch.trajectory_index.tolist(), batch.turn_index.tolist(), strict=True)):
        trajectory = trajectories[index]
        before = trajectory.turns[:turn]
        seed = trajectory.metadata.get("seed")
        starts.append(
            TurnStart(
                task_id=trajectory.task_id,
                seed=None if seed is None else int(seed),
                outputs=tuple(t.raw_output for t in before),
                history=tuple((t.observation, history_action(t.raw_output, t.info)) for t in before),
                observation=trajectory.turns[turn].observation,
                snapshot=None if batch.snapshots is None else batch.snapshots[row],
                group_id=trajectory.group_id,
            )
        )
    return starts


def put_at(env: gym.Env[str, str], start: TurnStart) -> tuple[str, dict[str, Any]]:
    """Puts ``env`` (reset at least once) at ``start``; returns the observation and info there.

    Restores the snapshot when the start has one, else resets with the task and seed and steps
    the earlier raw outputs.

    Raises:
        ValueError: when a replay is asked of a start without a seed.
        RuntimeError: when the env's observation there is not the recorded one.
    """
    if start.snapshot is not None:
        observation, info = env.get_wrapper_attr("restore")(start.snapshot)
    else:
        if start.seed is None:
            raise ValueError(
                f"TurnStart of task {start.task_id!r} has neither a snapshot nor a seed to replay from "
                "(collect with record_snapshots=True, or keep Trajectory.metadata['seed'])"
            )
        observation, info = env.reset(seed=start.seed, options={"task_id": start.task_id})
        for output in start.outputs:
            observation, _, _, _, info = env.step(output)
    if str(observation) != start.observation:
        way = "restore" if start.snapshot is not None else "replay"
        raise RuntimeError(
            f"{way} of task {start.task_id!r} after {len(start.outputs)} turns gave the observation "
            f"{str(observation)[:200]!r}, but the batch recorded {start.observation[:200]!r}"
        )
    return str(observation), dict(to_json_value(info))  # type: ignore[arg-type]


class EnvPool:
    """Envs of one id, made as needed (``gym.make`` with ``env_kwargs``, privileged where the env
    takes it, as the collector makes them), each reset once so that it can be restored and stepped.

    Args:
        env_id: A registered env id.
        env_kwargs: Passed to every env (the collector's).
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
        self.env_id = env_id
        self.env_kwargs = with_privileged(env_id, env_kwargs or {})
        self.envs: list[gym.Env[str, str]] = []

    def take(self, starts: Sequence[TurnStart]) -> list[gym.Env[str, str]]:
        """One env per start (the pool grows to the largest request); a new env is reset on its start's task."""
        while len(self.envs) < len(starts):
            env = gym.make(self.env_id, **self.env_kwargs)
            start = starts[len(self.envs)]
            env.reset(seed=start.seed, options={"task_id": start.task_id})
            self.envs.append(env)
        return self.envs[: len(starts)]

    def close(self) -> None:
        """Closes every env."""
        for env in self.envs:
            env.close()
        self.envs = []


def env_has_snapshots(env_id: str) -> bool:
    """Whether the env class registered as ``env_id`` has working ``snapshot()`` and ``restore()``
    (read from its entry point; no env is built): a :class:`~agentenvs.core.env.TextEnv` that
    implements the snapshot hooks (:meth:`~agentenvs.core.env.TextEnv.supports_snapshots`), or
    another class with both methods."""
    import importlib

    from gymnasium.envs.registration import load_env_creator

    module, _, registered_id = env_id.rpartition(":")
    if module:  # "module:EnvId", as gym.make takes it
        importlib.import_module(module)
    entry_point = gym.spec(registered_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    supports = getattr(creator, "supports_snapshots", None)
    if callable(supports):
        return bool(supports())
    return callable(getattr(creator, "snapshot", None)) and callable(getattr(creator, "restore", None))
