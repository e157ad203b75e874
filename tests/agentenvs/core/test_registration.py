import gymnasium as gym
import pytest

import agentenvs
from agentenvs.core.registration import register_env


def test_plain_and_namespaced_ids_work():
    assert gym.make("SearchQA-v0").unwrapped.max_turns == 4
    assert gym.make("agentenvs:SearchQA-v0", max_turns=2).unwrapped.max_turns == 2


def test_unknown_kwargs_are_named():
    with pytest.raises(TypeError, match="colour"):
        gym.make("SearchQA-v0", colour="red")


def test_registration_is_idempotent():
    spec = gym.spec("SearchQA-v0")
    register_env("SearchQA-v0", "somewhere:Else")
    assert gym.spec("SearchQA-v0") is spec
    assert agentenvs.__version__
