"""Env workers on Ray: same observations as "sync" for the same seeds; a dead worker ends only its episodes."""

from __future__ import annotations

import functools
import os
import signal
import time

import gymnasium as gym
import pytest
from gymnasium.wrappers.vector import DictInfoToList

from agentenvs.core.groups import make_group_vec
from agentenvs.core.ray_vector import WORKER_ERROR_KEY, RayVectorEnv, group_shards, worker_blocks

pytestmark = pytest.mark.usefixtures("ray_cluster")


def scripted_actions(infos: list[dict], experts: tuple, turn: int) -> list[str]:
    """Even members follow the env's expert (so purchases happen); odd ones cycle through the admissible actions."""
    actions = []
    for member, (info, expert) in enumerate(zip(infos, experts, strict=True)):
        admissible = info.get("admissible_actions") or ["search[anything]"]
        actions.append((expert or "") if member % 2 == 0 else admissible[(turn + member) % len(admissible)])
    return actions


def play(mode: str, env_id: str, turns: int, **kwargs):
    envs = DictInfoToList(make_group_vec(env_id, 2, 2, seed=7, vectorization_mode=mode, **kwargs))
    try:
        task_ids = list(envs.env.env.get_attr("task_ids")[0][:2])
        observations, infos = envs.reset(options={"task_ids": task_ids})
        record = [(list(observations), infos)]
        for turn in range(turns):
            experts = envs.env.env.call("expert_action")
            observations, rewards, terminated, truncated, infos = envs.step(scripted_actions(infos, experts, turn))
            record.append((list(observations), rewards.tolist(), terminated.tolist(), truncated.tolist(), infos))
        return record
    finally:
        envs.close()


def test_ray_workers_play_what_sync_plays():
    # WebShop: multi-turn, admissible actions, nested infos (reward parts on Buy Now)
    sync = play("sync", "WebShop-v0", turns=5)
    ray = play("ray", "WebShop-v0", turns=5, num_workers=2)
    assert ray == sync
    assert any("reward_parts" in info for _, _, _, _, infos in sync[1:] for info in infos)  # purchases were made
    assert len({info["task_id"] for info in sync[0][1][:2]}) == 1  # a group shares its task


def test_workers_hold_whole_groups_and_bad_settings_are_named():
    assert group_shards(3, 2) == [range(0, 2), range(2, 3)]
    assert worker_blocks(3, 2, 2) == [range(0, 4), range(4, 6)]
    assert worker_blocks(2, 3, 1) == [range(0, 6)]
    with pytest.raises(ValueError, match=r"num_workers must be an integer in \[1, num_groups=2\], got 3"):
        worker_blocks(2, 1, 3)
    with pytest.raises(ValueError, match="num_workers is for vectorization_mode='ray'"):
        make_group_vec("SearchQA-v0", 2, 1, vectorization_mode="sync", num_workers=2)
    with pytest.raises(ValueError, match="vectorization_mode must be one of 'sync', 'async', 'ray'"):
        make_group_vec("SearchQA-v0", 2, 1, vectorization_mode="threads")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="SearchQAEnv.max_turns must be an integer >= 1, got 0"):
        make_group_vec("SearchQA-v0", 2, 1, vectorization_mode="ray", num_workers=1, max_turns=0)


def worker_pid(worker) -> int | None:
    """The process id of a worker (None while it is restarting)."""
    import ray

    try:
        return ray.get(worker.__ray_call__.remote(lambda _: os.getpid()))
    except ray.exceptions.RayActorError:
        return None


def test_a_restarted_worker_fails_only_its_members_and_serves_the_next_episode():
    # (a worker that dies while it steps: tests/agents/collection/test_collector_ray.py)
    envs = DictInfoToList(
        make_group_vec(
            "tests.support.crashing_env:CrashOnCue-v0", 2, 2, seed=0, vectorization_mode="ray", num_workers=2
        )
    )
    try:
        _, infos = envs.reset()
        _, _, _, truncated, step_infos = envs.step(["<search>a</search>"] * 4)
        assert not truncated.any() and all(info["action_valid"] for info in step_infos)
        # worker 1 (members 2 and 3) is killed between steps; Ray brings it back with fresh envs
        worker = envs.env.env.workers[1]
        pid = worker_pid(worker)
        os.kill(pid, signal.SIGKILL)
        while worker_pid(worker) in (pid, None):
            time.sleep(0.1)
        _, rewards, terminated, truncated, step_infos = envs.step(["<search>b</search>"] * 4)
        assert truncated.tolist() == [False, False, True, True] and not terminated.any()
        assert [WORKER_ERROR_KEY in info for info in step_infos] == [False, False, True, True]
        assert step_infos[3][WORKER_ERROR_KEY] == "the env worker was restarted since this episode's reset"
        assert step_infos[3]["task_id"] == infos[3]["task_id"] and not step_infos[3]["won"]
        assert rewards[3] == 0.0 and step_infos[0]["action_valid"]
        # later steps of the lost members report the same failure without reaching the worker
        _, _, terminated, truncated, step_infos = envs.step(["<answer>z</answer>"] * 4)
        assert terminated.tolist() == [True, True, False, False] and truncated.tolist() == [False, False, True, True]
        assert WORKER_ERROR_KEY in step_infos[2] and WORKER_ERROR_KEY not in step_infos[0]
        # the restarted worker plays the next episode
        observations, infos = envs.reset(seed=0)
        assert all(observations) and not any(WORKER_ERROR_KEY in info for info in infos)
        _, _, _, truncated, step_infos = envs.step(["<search>a</search>"] * 4)
        assert not truncated.any() and all(info["action_valid"] for info in step_infos)
    finally:
        envs.close()


def test_workers_that_cannot_start_are_an_error_not_a_hang():
    env_fn = functools.partial(gym.make, "agentenvs:SearchQA-v0")
    with pytest.raises(RuntimeError, match=r"1 Ray env workers \(3 CPU each\) did not start within start_timeout_s=1"):
        RayVectorEnv([env_fn], [range(1)], num_cpus=3, start_timeout_s=1)  # the local cluster has 2 CPUs
