"""Any agentenvs env as an environment of TRL's ``GRPOTrainer(environment_factory=...)``.

TRL (1.16) builds one environment per rollout by calling ``environment_factory()``, calls
``reset(**row)`` with the dataset row of the rollout's prompt and appends the text it returns
to the prompt's last user message, offers every other public method as a tool the model
calls (the result comes back as a tool message), and scores a finished rollout with
``get_reward()``. :class:`ToolEnvironment` is that for any registered env: one tool,
:meth:`ToolEnvironment.act`, takes the env's action; ``get_reward`` is the episode's summed
reward. :func:`task_dataset` makes rows with a ``task_id`` column, and every rollout of a
prompt is reset with the same row, so the ``num_generations`` rollouts of a prompt play the
same task: they form a GRPO group. The model needs a chat template that can call tools
(TRL checks it; Qwen3's, Llama 3.1's, ...).

Example::

    from trl import GRPOConfig, GRPOTrainer
    from agentenvs.integrations.trl import environment_factory, task_dataset
    trainer = GRPOTrainer(model="Qwen/Qwen3-0.6B", args=GRPOConfig(num_generations=4, max_steps=50),
                          train_dataset=task_dataset("SearchQA-v0"), environment_factory=environment_factory("SearchQA-v0"))
    trainer.train()

Nothing here imports TRL; :func:`task_dataset` imports ``datasets`` (a TRL dependency) when called.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from agentenvs.core.checks import check_bool, check_int, check_str
from agentenvs.core.env import TextEnv
from agentenvs.integrations._tasks import chosen_task_ids

if TYPE_CHECKING:
    from datasets import Dataset

TOOL_NAME = "act"
"""The name of the one tool the model calls (the method :meth:`ToolEnvironment.act`)."""

DEFAULT_INSTRUCTION = (
    f"Do the task below by calling the `{TOOL_NAME}` tool with one action at a time, written as the task "
    "describes; each call returns what you see next.\n\n"
)
"""The user message each prompt starts with; TRL appends the env's first observation to it."""

EPISODE_OVER = "The episode is over."


@dataclass(frozen=True)
class ToolStep:
    """One ``act`` call as the env saw it (what a credit rule reads back from TRL's env instances).

    Attributes:
        action: The action the model passed.
        shown: The text ``act`` returned (the tool result TRL appended to the conversation).
        reward: The env's reward for the step (0.0 when the episode was already over).
        valid: Whether the env accepted the action (``info["action_valid"]``).
        info: The env's info after the step (``{}`` when the episode was already over).
        stepped: Whether the env stepped (False for a call after the episode ended).
    """

    action: str
    shown: str
    reward: float
    valid: bool
    info: dict[str, Any] = field(default_factory=dict)
    stepped: bool = True


class ToolEnvironment:
    """An agentenvs env behind TRL's environment protocol: ``reset``, one tool, ``get_reward``.

    TRL offers every public method of this class other than ``reset`` and ``get_reward`` to the
    model as a tool, so :meth:`act` is the only other public method: what a reward function
    may read (``won``, ``info``, ``done``, ``task_ids``) are properties, and the env is closed
    by ``with`` rather than a ``close()`` method.

    Args:
        env_id: A registered agentenvs id (``"SearchQA-v0"``, ``"WebShop-v0"``, ``"ALFWorld-v0"``).
        show_admissible_actions: Append the env's admissible actions (where it lists them) to
            every observation, for envs such as ALFWorld whose observations do not name them.
        **env_kwargs: Passed to ``gym.make`` (``split=``, ``max_turns=``, ...).

    Example:
        >>> import agentenvs
        >>> env = ToolEnvironment("SearchQA-v0")
        >>> env.reset(task_id=env.task_ids[0], prompt=[]).startswith("Question:")
        True
        >>> env.act("<search>capital</search>").startswith("<information>")
        True
        >>> env.get_reward(), env.done
        (0.0, False)
    """

    def __init__(self, env_id: str, *, show_admissible_actions: bool = False, **env_kwargs: Any) -> None:
        owner = type(self).__name__
        self.env_id = check_str(owner, "env_id", env_id)
        self.show_admissible_actions = check_bool(owner, "show_admissible_actions", show_admissible_actions)
        self._env = gym.make(self.env_id, **env_kwargs)
        if not isinstance(self._env.unwrapped, TextEnv):
            self._env.close()
            raise TypeError(f"{owner}: {env_id!r} is not an agentenvs TextEnv")
        self._text_env: TextEnv = self._env.unwrapped
        self._started = False
        self._done = False
        self._reward = 0.0
        self._info: dict[str, Any] = {}
        self._reset_shown = ""
        self._reset_info: dict[str, Any] = {}
        self._steps: list[ToolStep] = []

    @property
    def steps(self) -> tuple[ToolStep, ...]:
        """Every ``act`` call of the current episode, in order (what credit rules read per turn)."""
        return tuple(self._steps)

    @property
    def reset_observation(self) -> str:
        """The text :meth:`reset` returned for the current episode (what TRL appended to the prompt)."""
        return self._reset_shown

    @property
    def reset_info(self) -> dict[str, Any]:
        """The env's ``info`` at the current episode's reset (``task``, ``privileged``, ...)."""
        return self._reset_info

    @property
    def task_ids(self) -> tuple[str, ...]:
        """The ids of the tasks the env plays (what a ``task_id`` column may hold)."""
        return tuple(self._text_env.task_ids)

    @property
    def done(self) -> bool:
        """Whether the current episode has ended (terminated or truncated)."""
        return self._done

    @property
    def won(self) -> bool:
        """Whether the current episode's task was accomplished."""
        return bool(self._info.get("won", False))

    @property
    def info(self) -> dict[str, Any]:
        """The env's last ``info`` (the agentenvs contract: ``task_id``, ``won``, ``action_valid``, ...)."""
        return self._info

    def reset(self, task_id: str | None = None, seed: int | None = None, **row: Any) -> str:
        """Starts the row's task and returns the first observation (TRL appends it to the prompt).

        Args:
            task_id: The task to play (the row's ``task_id`` column).
            seed: The episode's seed (the row's ``seed`` column); without a ``task_id`` it also
                picks the task, the same one for every rollout of the row.
            **row: The row's other columns (``prompt``, ...); not used.

        Raises:
            ValueError: for a row with neither ``task_id`` nor ``seed`` (the rollouts of one
                prompt would play different tasks) or an unknown ``task_id``.
        """
        owner = f"{type(self).__name__}.reset"
        if task_id is None and seed is None:
            raise ValueError(
                f"{owner}: the dataset row needs a 'task_id' or a 'seed' column, so that every rollout of a "
                "prompt plays the same task (task_dataset() makes such rows)"
            )
        task_id = check_str(owner, "task_id", task_id, optional=True)
        seed = check_int(owner, "seed", seed, minimum=0, optional=True)
        try:
            observation, info = self._env.reset(seed=seed, options=None if task_id is None else {"task_id": task_id})
        except ValueError as error:  # the env names the unknown task
            raise ValueError(f"{owner}: {error}") from None
        self._started, self._done, self._reward, self._info = True, False, 0.0, info
        self._reset_info, self._steps = info, []
        self._reset_shown = self._shown(observation, info)
        return self._reset_shown

    def act(self, action: str) -> str:
        """Takes one action in the environment and returns what the environment shows next.

        Args:
            action: The action, written exactly as the task describes.

        Returns:
            The next observation.
        """
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}: call reset() before act()")
        if self._done:
            self._steps.append(ToolStep(action, EPISODE_OVER, 0.0, False, stepped=False))
            return EPISODE_OVER
        observation, reward, terminated, truncated, info = self._env.step(action)
        self._reward += float(reward)
        self._done = bool(terminated or truncated)
        self._info = info
        shown = self._shown(observation, info) + (f"\n{EPISODE_OVER}" if self._done else "")
        self._steps.append(ToolStep(action, shown, float(reward), bool(info.get("action_valid", True)), info))
        return shown

    def get_reward(self) -> float:
        """The summed reward of the current episode (0.0 when the model never acted)."""
        return self._reward

    def _shown(self, observation: str, info: dict[str, Any]) -> str:
        admissible = info.get("admissible_actions")
        if self.show_admissible_actions and admissible:
            return f"{observation}\nAdmissible actions: {', '.join(admissible)}"
        return observation

    # No public ``close``: TRL would offer it to the model as a tool. ``with`` closes the env.
    def __enter__(self) -> ToolEnvironment:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._env.close()


def environment_factory(env_id: str, **kwargs: Any) -> Callable[[], ToolEnvironment]:
    """``GRPOTrainer(environment_factory=...)``: a callable that makes a :class:`ToolEnvironment`.

    Args:
        env_id: A registered agentenvs id.
        **kwargs: :class:`ToolEnvironment` arguments (``show_admissible_actions=``) and
            ``gym.make`` arguments (``split=``, ...).

    The arguments are checked now: a bad one fails here, not inside the trainer.

    >>> import agentenvs
    >>> make = environment_factory("SearchQA-v0", max_turns=2)
    >>> make().reset(seed=0).startswith("Question:")
    True
    """
    with ToolEnvironment(env_id, **kwargs):
        pass
    return functools.partial(ToolEnvironment, env_id, **kwargs)


def task_dataset(
    env_id: str,
    *,
    num_tasks: int | None = None,
    shuffle_seed: int | None = None,
    instruction: str = DEFAULT_INSTRUCTION,
    **env_kwargs: Any,
) -> Dataset:
    """A TRL training dataset: one row per task, ``prompt`` (conversational) and ``task_id``.

    Args:
        env_id: A registered agentenvs id.
        num_tasks: Keep the first ``num_tasks`` tasks (after shuffling); None keeps all.
        shuffle_seed: Shuffle the tasks with this seed first; None keeps the env's order.
        instruction: The user message each prompt starts with (the env's first observation
            is appended to it by TRL).
        **env_kwargs: ``gym.make`` arguments; pass the same to :func:`environment_factory`
            so that the task ids are the env's.

    >>> import agentenvs
    >>> rows = task_dataset("SearchQA-v0", num_tasks=2, shuffle_seed=0)
    >>> len(rows), sorted(rows.column_names)
    (2, ['prompt', 'task_id'])
    """
    from datasets import Dataset

    owner = "task_dataset"
    instruction = check_str(owner, "instruction", instruction, non_empty=False)
    env = gym.make(check_str(owner, "env_id", env_id), **env_kwargs)
    try:
        task_ids = chosen_task_ids(owner, env, num_tasks, shuffle_seed)
    finally:
        env.close()
    prompt = [{"role": "user", "content": instruction}]
    return Dataset.from_dict({"prompt": [prompt] * len(task_ids), "task_id": task_ids})
