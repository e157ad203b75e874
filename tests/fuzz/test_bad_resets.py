"""A bad reset leaves an env, a group vector env and an OpenEnv session as they were (issue: hardening).

Each case failed before: after ``reset(options={"task_id": "nope"})`` a ``gym.make`` env raised
``TypeError`` in gymnasium's passive checker on every later step; a failed group reset left
stale task ids in its sub-envs and advanced its seed generator; malformed options raised
``TypeError``/``AttributeError`` that named nothing.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs import make_group_vec
from agentenvs.core.registration import agentenvs_ids

BAD_OPTIONS = [
    ({"task_id": "nope"}, r"unknown task_id 'nope'"),
    ({"task_id": ["kb0-q1"]}, r"task_id must be a string"),
    ({"task_id": 3}, r"task_id must be a string"),
    ({"task_id": None, "colour": "red"}, r"unknown option\(s\) \['colour'\]"),
    (5, r"options must be a dict or None, got 5"),
    ({"task_id": "x" * (1 << 20)}, r"unknown task_id 'xxx"),
]


@pytest.mark.parametrize("env_id", agentenvs_ids())
@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS, ids=[str(i) for i in range(len(BAD_OPTIONS))])
def test_a_failed_reset_names_the_problem_and_changes_nothing(env_id, options, message):
    env = gym.make(env_id)
    try:
        with pytest.raises(ValueError, match=message) as error:
            env.reset(options=options)
        assert len(str(error.value)) < 300  # a 1 MB task id is not echoed whole
        observation, info = env.reset(seed=0)  # the env works as if nothing had happened
        fresh = gym.make(env_id)
        assert (observation, info["task_id"]) == fresh.reset(seed=0)[0:1] + (fresh.unwrapped.task_id,)
        fresh.close()
        result = env.step(env.unwrapped.expert_action() or "look")
        assert isinstance(result[0], str) and isinstance(result[4], dict)
    finally:
        env.close()


def test_a_failed_reset_does_not_consume_the_generator_or_the_next_task():
    env = gym.make("SearchQA-v0").unwrapped
    env.reset(seed=5)
    state = env.np_random.bit_generator.state
    env.next_task_id = env.task_ids[3]
    with pytest.raises(ValueError):
        env.reset(options={"task_id": "nope"})
    assert env.np_random.bit_generator.state == state and env.next_task_id == env.task_ids[3]
    assert env.reset()[1]["task_id"] == env.task_ids[3]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_failed_group_reset_leaves_no_stale_task_and_keeps_the_seed_stream(mode):
    envs = make_group_vec("SearchQA-v0", 2, 2, seed=1, vectorization_mode=mode)
    twin = make_group_vec("SearchQA-v0", 2, 2, seed=1, vectorization_mode=mode)
    try:
        good = envs.task_ids[1]
        with pytest.raises(ValueError, match="unknown task id 'no-such-task'"):
            envs.reset(options={"task_ids": ["no-such-task", good]})
        for bad, message in [
            ([None, None], r"options\['task_ids'\] must be a list of 2 strings"),
            ("kb0-q1", r"options\['task_ids'\] must be a list of 2 strings"),
            ([good], r"options\['task_ids'\] must be a list of 2 strings"),
            (7, r"must be a list of 2 strings"),
        ]:
            with pytest.raises(ValueError, match=message):
                envs.reset(options={"task_ids": bad})
        with pytest.raises(ValueError, match="options must be a dict or None"):
            envs.reset(options=5)
        # What a fresh env with the same seed gives: the failed resets changed nothing.
        assert list(envs.reset()[1]["task_id"]) == list(twin.reset()[1]["task_id"])
        assert list(envs.reset(seed=123)[1]["task_id"]) == list(twin.reset(seed=123)[1]["task_id"])
        chosen = envs.reset(options={"task_ids": [good, good]})[1]["task_id"]
        assert list(chosen) == [good] * 4
    finally:
        envs.close()
        twin.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_groups": "2"}, r"make_group_vec\.num_groups must be an integer >= 1, got '2'"),
        ({"num_groups": 2.0}, r"make_group_vec\.num_groups must be an integer >= 1, got 2\.0"),
        ({"num_groups": None}, r"make_group_vec\.num_groups must be an integer >= 1, got None"),
        ({"group_size": 0}, r"make_group_vec\.group_size must be an integer >= 1, got 0"),
        ({"env_id": 123}, r"make_group_vec\.env_id must be a non-empty string, got 123"),
        ({"vectorization_mode": "threads"}, r"make_group_vec\.vectorization_mode must be one of"),
        ({"seed": -1}, r"make_group_vec\.seed must be an integer >= 0"),
    ],
)
def test_make_group_vec_names_a_bad_argument(kwargs, message):
    arguments = {"env_id": "SearchQA-v0", "num_groups": 2, "group_size": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        make_group_vec(**arguments)


def test_gym_make_adds_no_checker_that_a_failed_first_reset_breaks():
    env = gym.make("WebShop-v0")
    with pytest.raises(ValueError):
        env.reset(options={"task_id": "nope"})
    env.reset(seed=0)
    assert np.isfinite(env.step("search[shirt]")[1])
