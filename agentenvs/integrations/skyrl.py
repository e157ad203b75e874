"""Any agentenvs env as a SkyRL-Gym text env (``skyrl_gym.envs.base_text_env.BaseTextEnv``).

SkyRL-train's generator builds one env per trajectory with ``skyrl_gym.make(env_class,
env_config=..., extras=row)`` (``row``: the dataset row's columns besides ``prompt`` and
``env_class``, plus the generator's ``max_turns``), calls ``init(prompt)`` for the chat to start
from, then ``step(model_output)`` until ``done``. :class:`SkyRLTextEnv` does that for any
registered env: the row names the env id and the task (:func:`dataset_rows` writes such rows),
``init`` resets the env on that task and puts its first observation in a user message, and
``step`` takes the model's whole output as the raw action (the env's ``action_format`` parses
it; malformed output is the env's invalid action with its feedback), returning the next
observation as a user message, the env's reward, ``done`` once the episode terminated or was
truncated, and the env's info as ``metadata`` (task, turn, ``won``, validity, the executed
action and its span; privileged info only when the row or config asks for it).

:func:`register` registers it with SkyRL-Gym as ``"agentenvs"`` (:data:`ENV_CLASS`).

Example::

    from agentenvs.integrations import skyrl
    skyrl.register()                                   # in every process that makes envs
    skyrl.write_dataset("SearchQA-v0", "train.parquet", num_tasks=512)
    # then SkyRL-train with data.train_data=['train.parquet'] and environment.env_class=agentenvs

Importing this module imports ``skyrl_gym`` (``pip install "agentenvs[skyrl]"``).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentenvs.core.checks import check_bool, check_int, check_str
from agentenvs.core.env import TextEnv
from agentenvs.core.privileged import PRIVILEGED_KEY
from agentenvs.integrations._tasks import chosen_task_ids

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as error:
    raise ImportError(
        f'agentenvs.integrations.skyrl needs skyrl-gym ({error}): pip install "agentenvs[skyrl]"'
    ) from None

__all__ = ["ENV_CLASS", "SkyRLTextEnv", "dataset_rows", "register", "write_dataset"]

ENV_CLASS = "agentenvs"
"""The ``env_class`` the dataset rows name and :func:`register` registers."""

Message = dict[str, str]


class SkyRLTextEnv(BaseTextEnv):
    """One episode of an agentenvs env for SkyRL (see the module docstring).

    Args:
        env_config: SkyRL's per-env-class config (``environment.skyrl_gym.agentenvs``): defaults
            for the row's keys (``env_id``, ``env_kwargs``, ``privileged``).
        extras: The dataset row's columns: ``env_id`` (a registered agentenvs id), ``task_id``
            (one of the env's tasks; None draws one from ``seed``), ``seed`` (the reset's seed,
            default 0), ``env_kwargs`` (``gym.make`` arguments, a mapping or its JSON), ``privileged`` (put the env's
            privileged info into ``metadata``; default False) and ``max_turns`` (SkyRL's
            generator sets it; it becomes the env's turn limit where the env takes one: a
            diagnostic env's length is its own). Other columns are ignored.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        owner = type(self).__name__
        settings = {**_plain(env_config), **dict(extras or {})}
        self.env_id = check_str(owner, "env_id", settings.get("env_id"))
        task_id = settings.get("task_id")
        self.task_id = None if task_id is None else check_str(owner, "task_id", task_id)
        self.seed = check_int(owner, "seed", settings.get("seed", 0), minimum=0)
        self.privileged = check_bool(owner, "privileged", settings.get("privileged", False))
        env_kwargs = settings.get("env_kwargs")
        kwargs = _plain(json.loads(env_kwargs) if isinstance(env_kwargs, str) else env_kwargs)
        if settings.get("max_turns") is not None and _takes_max_turns(self.env_id):
            kwargs["max_turns"] = check_int(owner, "max_turns", settings["max_turns"], minimum=1)
        self.env = gym.make(self.env_id, **{**kwargs, "privileged": self.privileged})
        if not isinstance(self.env.unwrapped, TextEnv):
            self.env.close()
            raise TypeError(f"{owner}: {self.env_id!r} is not an agentenvs TextEnv")
        self.max_turns = self.env.unwrapped.max_turns
        self.won = False
        self.invalid_actions = 0

    def init(self, prompt: list[Message]) -> tuple[list[Message], dict[str, Any]]:
        """The chat to start from: ``prompt``'s system messages, then the env's first observation as
        a user message (a row's user messages, :func:`dataset_rows`' copy of it, are replaced)."""
        options = None if self.task_id is None else {"task_id": self.task_id}
        observation, info = self.env.reset(seed=self.seed, options=options)
        self.task_id, self.turns, self.won, self.invalid_actions = info["task_id"], 0, False, 0
        system = [dict(message) for message in prompt or () if message.get("role") == "system"]
        return [*system, {"role": "user", "content": observation}], self._metadata(info)

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Plays the model's output as the env's raw action."""
        self.turns += 1
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.won = bool(info["won"])
        self.invalid_actions += not info["action_valid"]
        done = bool(terminated or truncated)
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": observation}],
            reward=float(reward),
            done=done,
            metadata=self._metadata(info),
            postprocessed_action=None,
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode's ``won`` (0/1), turns and invalid actions (SkyRL averages them)."""
        return {"won": float(self.won), "turns": self.turns, "invalid_actions": self.invalid_actions}

    def close(self) -> None:
        self.env.close()

    def _metadata(self, info: Mapping[str, Any]) -> dict[str, Any]:
        keys = ("task_id", "turn", "won", "action_valid", "action", "action_span", "admissible_actions")
        metadata = {key: info[key] for key in keys if key in info}
        if self.privileged:
            metadata[PRIVILEGED_KEY] = info.get(PRIVILEGED_KEY, {})
        return metadata


def _takes_max_turns(env_id: str) -> bool:
    """Whether ``env_id``'s constructor takes ``max_turns`` (an unknown id: gym.make names it later)."""
    try:
        entry = gym.spec(env_id).entry_point
        creator = load_env_creator(entry) if isinstance(entry, str) else entry
    except (gym.error.Error, AttributeError, ImportError):
        return False
    return creator is not None and "max_turns" in inspect.signature(creator).parameters


def _plain(config: Any) -> dict[str, Any]:
    """A dict of ``config`` (None, a mapping, or an OmegaConf ``DictConfig``)."""
    if config is None:
        return {}
    if hasattr(config, "items"):
        try:
            from omegaconf import OmegaConf

            if OmegaConf.is_config(config):
                return dict(OmegaConf.to_container(config, resolve=True))  # type: ignore[arg-type]
        except ImportError:  # pragma: no cover - skyrl-gym depends on omegaconf
            pass
        return dict(config.items())
    raise TypeError(f"SkyRLTextEnv: env_config and env_kwargs must be mappings, got {type(config).__name__}")


def register(env_class: str = ENV_CLASS) -> str:
    """Registers :class:`SkyRLTextEnv` with SkyRL-Gym as ``env_class`` (once; later calls do nothing)."""
    env_class = check_str("register", "env_class", env_class)
    if env_class not in skyrl_gym.registry:
        skyrl_gym.register(id=env_class, entry_point=f"{__name__}:SkyRLTextEnv")
    return env_class


def dataset_rows(
    env_id: str,
    *,
    num_tasks: int | None = None,
    shuffle_seed: int | None = None,
    privileged: bool = False,
    **env_kwargs: Any,
) -> list[dict[str, Any]]:
    """SkyRL dataset rows, one per task: ``prompt`` (the task's first observation as a user message,
    for tools that read prompts), ``env_class``, ``env_id``, ``task_id``, ``seed``, ``env_kwargs``
    (a JSON string: a parquet column of mixed dicts would not round-trip) and ``privileged``.

    >>> import agentenvs
    >>> rows = dataset_rows("SearchQA-v0", num_tasks=2, shuffle_seed=0)
    >>> len(rows), rows[0]["env_class"], sorted(rows[0])[:3]
    (2, 'agentenvs', ['env_class', 'env_id', 'env_kwargs'])
    """
    owner = "dataset_rows"
    privileged = check_bool(owner, "privileged", privileged)
    env = gym.make(check_str(owner, "env_id", env_id), **env_kwargs)
    try:
        rows = []
        for task_id in chosen_task_ids(owner, env, num_tasks, shuffle_seed):
            observation, _ = env.reset(seed=0, options={"task_id": task_id})
            rows.append(
                {
                    "prompt": [{"role": "user", "content": observation}],
                    "env_class": ENV_CLASS,
                    "env_id": env_id,
                    "task_id": task_id,
                    "seed": 0,
                    "env_kwargs": json.dumps(env_kwargs),
                    "privileged": privileged,
                }
            )
    finally:
        env.close()
    return rows


def write_dataset(env_id: str, path: str | Path, **kwargs: Any) -> Path:
    """Writes :func:`dataset_rows` as a parquet file at ``path`` (SkyRL-train's ``data.train_data``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(dataset_rows(env_id, **kwargs)), path)
    return path
