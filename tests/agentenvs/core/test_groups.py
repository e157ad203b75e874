import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401
from agentenvs.core.groups import make_group_vec


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_group_member_gets_the_same_task(mode):
    envs = make_group_vec("SearchQA-v0", num_groups=3, group_size=4, seed=11, vectorization_mode=mode)
    try:
        assert envs.group_ids.tolist() == [0] * 4 + [1] * 4 + [2] * 4
        for _ in range(3):
            observations, info = envs.reset()
            for block in envs.group_slices():
                assert len(set(info["task_id"][block])) == 1
                assert len(set(observations[block])) == 1
            assert len(set(info["task_id"])) > 1  # groups differ (3 draws from ~700 tasks)
    finally:
        envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_autoreset_disabled_and_lockstep_steps(mode):
    envs = make_group_vec("SearchQA-v0", num_groups=1, group_size=2, seed=0, vectorization_mode=mode)
    envs.reset()
    observations, rewards, terminated, truncated, info = envs.step(["<answer>x</answer>", "<search>y</search>"])
    assert terminated.tolist() == [True, False]
    # the finished member stays finished (no autoreset), the other one keeps playing
    observations, rewards, terminated, truncated, info = envs.step(["<answer>x</answer>", "<answer>x</answer>"])
    assert terminated.tolist() == [True, True] and info["action_valid"].tolist() == [False, True]
    envs.close()


def test_seeding_reproduces_task_sequences_and_explicit_task_ids():
    def tasks(seed):
        envs = make_group_vec("SearchQA-v0", num_groups=2, group_size=2, seed=seed)
        sequence = [tuple(envs.reset()[1]["task_id"]) for _ in range(3)]
        envs.close()
        return sequence

    assert tasks(5) == tasks(5)
    assert tasks(5) != tasks(6)
    envs = make_group_vec("SearchQA-v0", num_groups=2, group_size=2, seed=0)
    chosen = list(envs.unwrapped.get_attr("task_ids")[0][:2])
    _, info = envs.reset(options={"task_ids": chosen})
    assert info["task_id"].tolist() == [chosen[0], chosen[0], chosen[1], chosen[1]]
    with pytest.raises(ValueError, match="must be a list of 2 strings"):
        envs.reset(options={"task_ids": chosen[:1]})
    envs.close()


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="group_size"):
        make_group_vec("SearchQA-v0", num_groups=1, group_size=0)
    with pytest.raises(ValueError, match="vectorization_mode"):
        make_group_vec("SearchQA-v0", num_groups=1, group_size=1, vectorization_mode="gpu")
    with pytest.raises(gym.error.Error, match="NoSuchEnv"):
        make_group_vec("NoSuchEnv-v0", num_groups=1, group_size=1)


def test_env_kwargs_reach_every_member():
    envs = make_group_vec("SearchQA-v0", num_groups=1, group_size=2, seed=0, max_turns=1)
    envs.reset()
    _, _, terminated, truncated, _ = envs.step(["<search>a</search>"] * 2)
    assert np.all(truncated) and not np.any(terminated)
    envs.close()


def test_last_group_seeds_are_the_seeds_each_group_was_reset_with():
    from agentenvs.core.groups import draw_group_seeds

    envs = make_group_vec("SearchQA-v0", num_groups=2, group_size=2)
    assert envs.last_group_seeds is None
    envs.reset(seed=5)
    assert envs.last_group_seeds == draw_group_seeds(np.random.default_rng(5), 2)
    envs.reset(options={"group_seeds": [11, 12]})
    assert envs.last_group_seeds == [11, 12]
    with pytest.raises(ValueError, match="unknown task id"):
        envs.reset(options={"task_ids": ["nope", "nope"], "group_seeds": [1, 2]})
    assert envs.last_group_seeds == [11, 12]  # a failed reset changes nothing
    # A member replays its episode from reset(seed, task_id) alone.
    observations, infos = envs.reset(seed=3)
    single = gym.make("SearchQA-v0")
    again, _ = single.reset(seed=envs.last_group_seeds[1], options={"task_id": infos["task_id"][2]})
    assert again == observations[2]
    single.close()
    envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("bad", [{"task_id": "nope"}, {"bogus": 1}, {"task_id": 3}])
def test_a_reset_with_bad_sub_env_options_fails_in_the_parent_and_the_envs_live_on(mode, bad):
    # Gymnasium's async vector env shuts down a worker whose reset raises: the options are checked first.
    vec = make_group_vec("SearchQA-v0", 2, 2, seed=0, vectorization_mode=mode)
    try:
        first, _ = vec.reset(seed=0)
        with pytest.raises(ValueError, match="GroupVectorEnv.reset: SearchQAEnv.reset: "):
            vec.reset(options=bad)
        again, _ = vec.reset(seed=0)
        assert list(again) == list(first)  # the failed reset changed nothing, in any process
        task = vec.env.call("task_ids")[0][0]
        _, info = vec.reset(options={"task_id": task})  # a good option still reaches every sub-env
        assert list(info["task_id"]) == [task] * 4
    finally:
        vec.close()
