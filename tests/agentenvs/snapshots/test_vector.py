"""Snapshots through vector envs: ``call("snapshot")`` and ``call("restore", s)`` in sync, async
(shared memory) and Ray vector envs, whose members live in other processes."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium.vector import AutoresetMode

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.groups import make_group_vec
from agentenvs.core.snapshots import EnvSnapshot


def _member_steps(envs: Any, actions: list[str]) -> list[tuple[Any, ...]]:
    """Each member's (observation, reward, terminated, truncated) over ``actions`` sent to every member."""
    record = []
    for action in actions:
        observations, rewards, terminated, truncated, _ = envs.step([action] * envs.num_envs)
        record.append(
            tuple(zip(list(observations), rewards.tolist(), terminated.tolist(), truncated.tolist(), strict=True))
        )
    return record


def _check(envs: Any) -> None:
    try:
        observations, _ = envs.reset(seed=3)
        envs.step(["<search>river</search>"] * envs.num_envs)
        snapshots = envs.call("snapshot")
        assert len(snapshots) == envs.num_envs and all(isinstance(s, EnvSnapshot) for s in snapshots)
        assert snapshots[0].task_id != snapshots[1].task_id  # the members play different tasks
        later = ["<search>city</search>", "<answer>no idea</answer>"]
        recorded = _member_steps(envs, later)
        envs.reset(seed=4)  # Gymnasium's vector envs keep their own record of ended members: a reset clears it
        restored = envs.call("restore", snapshots[0])  # every member into member 0's state
        assert len({observation for observation, _ in restored}) == 1
        assert all(info["task_id"] == snapshots[0].task_id and info["turn"] == 1 for _, info in restored)
        again = _member_steps(envs, later)
        assert all(
            step == (recorded_step[0],) * envs.num_envs for step, recorded_step in zip(again, recorded, strict=True)
        )
    finally:
        envs.close()


# A vector env that autoresets would reset a restored member whose old episode ended on its next step.
NO_AUTORESET = {"autoreset_mode": AutoresetMode.DISABLED}


@pytest.mark.parametrize(
    ("mode", "vector_kwargs"),
    [("sync", NO_AUTORESET), ("async", NO_AUTORESET), ("async", {**NO_AUTORESET, "shared_memory": False})],
)
def test_make_vec_members_snapshot_and_restore_through_call(mode: str, vector_kwargs: dict[str, Any]) -> None:
    _check(gym.make_vec("SearchQA-v0", num_envs=2, vectorization_mode=mode, vector_kwargs=vector_kwargs))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_group_vector_envs_pass_calls_to_their_members(mode: str) -> None:
    _check(make_group_vec("SearchQA-v0", 2, 1, seed=0, vectorization_mode=mode))


def test_ray_env_workers_snapshot_and_restore(ray_cluster: Any) -> None:
    _check(make_group_vec("SearchQA-v0", 2, 1, seed=0, vectorization_mode="ray", num_workers=2))
