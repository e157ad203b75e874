import warnings

import gymnasium as gym
import pytest

import agentenvs
from agentenvs.core.registration import register_env, with_privileged


def test_plain_and_namespaced_ids_work():
    assert gym.make("SearchQA-v0").unwrapped.max_turns == 4
    assert gym.make("agentenvs:SearchQA-v0", max_turns=2).unwrapped.max_turns == 2


def test_unknown_kwargs_are_named():
    with pytest.raises(TypeError, match="SearchQAEnv takes no argument 'colour'; it takes: cache_index, "):
        gym.make("SearchQA-v0", colour="red")


@pytest.mark.parametrize(
    ("env_id", "key", "close"),
    [
        ("SearchQA-v0", "topk", "top_k"),
        ("WebShop-v0", "max_turn", "max_turns"),
        ("ALFWorld-v0", "task_type", "task_types"),
        ("Umbrella-v0", "lenght", "length"),
    ],
)
def test_a_misspelt_keyword_is_answered_with_the_closest_one(env_id, key, close):
    from agentenvs.core.registration import check_env_kwargs

    with pytest.raises(TypeError, match=f"takes no argument '{key}' \\(did you mean '{close}'\\?\\); it takes: "):
        gym.make(env_id, **{key: 1})
    with pytest.raises(ValueError, match=f"has '{key}', which {env_id} does not take \\(did you mean '{close}'\\?\\)"):
        check_env_kwargs("GRPOConfig", "env_kwargs", env_id, {key: 1})


def test_registration_is_idempotent():
    spec = gym.spec("SearchQA-v0")
    register_env("SearchQA-v0", "somewhere:Else")
    assert gym.spec("SearchQA-v0") is spec
    assert agentenvs.__version__


def play_until_the_end(env: gym.Env) -> list[tuple[bool, bool]]:
    """(terminated, truncated) of every step of one searching episode, which never answers."""
    env.reset(seed=0)
    flags = []
    while not (flags and any(flags[-1])):
        flags.append(env.step("<search>capital</search>")[2:4])
    return flags


@pytest.mark.parametrize("steps", [2, 4, 7])
def test_max_episode_steps_is_the_one_turn_limit(steps):
    env = gym.make("SearchQA-v0", max_episode_steps=steps)
    assert env.spec.max_episode_steps == steps and env.unwrapped.max_turns == steps
    flags = play_until_the_end(env)
    assert flags == [(False, False)] * (steps - 1) + [(False, True)]  # truncated once, at the limit
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.step("<search>capital</search>")
    again = gym.make(env.spec)  # the spec rebuilds the same limit
    assert again.spec.max_episode_steps == steps and again.unwrapped.max_turns == steps


def test_spec_reports_max_turns():
    assert gym.make("SearchQA-v0").spec.max_episode_steps == 4
    assert gym.make("WebShop-v0", num_products=100, split="all").spec.max_episode_steps == 15
    env = gym.make("SearchQA-v0", max_turns=3)
    assert env.spec.max_episode_steps == 3 and env.spec.kwargs["max_turns"] == 3
    assert play_until_the_end(env)[-1] == (False, True) and env.unwrapped._turn == 3
    assert gym.make("SearchQA-v0", max_turns=3, max_episode_steps=3).unwrapped.max_turns == 3
    assert gym.make("SearchQA-v0", max_episode_steps=-1).spec.max_episode_steps == 4  # no TimeLimit: the env's own


def test_two_different_limits_are_refused():
    with pytest.raises(ValueError, match=r"max_turns=3 and max_episode_steps=5 set two turn limits"):
        gym.make("SearchQA-v0", max_turns=3, max_episode_steps=5)


def test_human_render_mode_is_supported_without_warning(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make("SearchQA-v0", render_mode="human")
    env.reset(seed=0)
    assert "turn 0/4" in capsys.readouterr().out


def test_with_privileged_asks_envs_that_take_it():
    assert with_privileged("SearchQA-v0", {"top_k": 2}) == {"top_k": 2, "privileged": True}
    assert with_privileged("SearchQA-v0", {"privileged": False}) == {"privileged": False}
    gym.register("PlainCartPole-v9", entry_point="gymnasium.envs.classic_control:CartPoleEnv")
    try:
        assert with_privileged("PlainCartPole-v9", {}) == {}
    finally:
        del gym.registry["PlainCartPole-v9"]
