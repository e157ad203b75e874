"""The tasks an adapter's dataset holds: an env's task ids, shuffled and cut as asked (checked once)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from agentenvs.core.checks import check_int
from agentenvs.core.env import TextEnv


def chosen_task_ids(owner: str, env: gym.Env, num_tasks: int | None, shuffle_seed: int | None) -> list[str]:
    """``env``'s task ids, shuffled with ``shuffle_seed`` (None: the env's order), the first ``num_tasks`` kept.

    Raises:
        TypeError: for an env that is not an agentenvs TextEnv, or bad ``num_tasks`` / ``shuffle_seed``.
        ValueError: for ``num_tasks`` < 1 or ``shuffle_seed`` < 0.
    """
    num_tasks = check_int(owner, "num_tasks", num_tasks, minimum=1, optional=True)
    shuffle_seed = check_int(owner, "shuffle_seed", shuffle_seed, minimum=0, optional=True)
    if not isinstance(env.unwrapped, TextEnv):
        name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
        raise TypeError(f"{owner}: {name!r} is not an agentenvs TextEnv")
    task_ids = list(env.unwrapped.task_ids)
    if shuffle_seed is not None:
        task_ids = [task_ids[i] for i in np.random.default_rng(shuffle_seed).permutation(len(task_ids))]
    return task_ids[:num_tasks]
