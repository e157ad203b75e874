import pytest

from agents import GRPOAgent, GRPOConfig


def test_config_validation_names_the_field():
    for kwargs, name in [
        ({"group_size": 0}, "group_size"),
        ({"temperature": 0}, "temperature"),
        ({"scale_rewards": "std"}, "scale_rewards"),
        ({"max_turns": 0}, "max_turns"),
        ({"epsilon": 1.5}, "epsilon"),
        ({"decode": "paged"}, "decode"),
        ({"compile_decode": True}, "compile_decode"),
    ]:
        with pytest.raises(ValueError, match=f"GRPOConfig.{name}"):
            GRPOConfig(**kwargs)
    with pytest.raises(ValueError, match="credit='nope'"):
        GRPOAgent(model="tiny-random-qwen3", config=GRPOConfig(credit="nope"))
    assert GRPOConfig.from_dict(GRPOConfig(beta=0.1).to_dict()) == GRPOConfig(beta=0.1)
    with pytest.raises(ValueError, match="unknown GRPOConfig"):
        GRPOConfig.from_dict({"lr": 1})
