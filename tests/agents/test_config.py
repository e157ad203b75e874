import dataclasses

import pytest

from agents import GRPOAgent, GRPOConfig
from agents.sft import SFTConfig
from agents.sft.config import PROMPT_FIELDS


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
    with pytest.raises(ValueError, match="GRPOConfig.credit must be a registered credit rule"):
        GRPOConfig(credit="nope")
    with pytest.raises(ValueError, match=r"unknown taspo credit option\(s\) \['kapa'\]"):
        GRPOAgent(model="no-model-is-loaded", config=GRPOConfig(credit="taspo", credit_options={"kapa": 1.0}))
    assert GRPOConfig.from_dict(GRPOConfig(beta=0.1).to_dict()) == GRPOConfig(beta=0.1)
    with pytest.raises(ValueError, match="unknown GRPOConfig"):
        GRPOConfig.from_dict({"lr": 1})


def test_rollout_mode_and_trunk_cache_are_validated_and_resolved():
    for kwargs, name in [
        ({"rollout_mode": "chat"}, "rollout_mode"),
        ({"rollout_mode": "conversation", "decode": "static"}, "rollout_mode"),
        ({"trunk_cache": True}, "trunk_cache"),
        ({"trunk_cache": True, "lora": True}, "trunk_cache"),
        ({"trunk_cache": "yes"}, "trunk_cache"),
    ]:
        with pytest.raises(ValueError, match=f"GRPOConfig.{name}"):
            GRPOConfig(**kwargs)
    assert not GRPOConfig().use_trunk_cache and not GRPOConfig(lora=True).use_trunk_cache
    assert GRPOConfig(lora=True, lora_top_layers=6).use_trunk_cache
    assert not GRPOConfig(lora=True, lora_top_layers=6, trunk_cache=False).use_trunk_cache


@pytest.mark.parametrize("config_class", [GRPOConfig, SFTConfig])
def test_prompt_fields_reach_the_prompt_builder(config_class):
    config = config_class(
        history_length=1, history_observations=False, show_admissible=False, show_format=False, prompt_preamble=""
    )
    builder = config.prompt_builder()
    assert (builder.history_length, builder.history_observations) == (1, False)
    assert (builder.show_admissible, builder.show_format, builder.preamble) == (False, False, "")
    prompt = builder.build(task="t", observation="o", admissible_actions=["look"], action_format="raw")
    assert prompt == "Task: t\nCurrent observation (step 1): o"
    assert set(PROMPT_FIELDS) <= {f.name for f in dataclasses.fields(GRPOConfig)}


def test_options_for_the_rule_an_agent_class_sets_are_checked_when_it_sets_it(monkeypatch):
    import agents.agent
    from agents import ORSDAgent, TASPOAgent

    monkeypatch.setattr(agents.agent, "build_policy", lambda *a, **k: (_ for _ in ()).throw(AssertionError("loaded")))
    options_for_orsd = GRPOConfig(credit_options={"coef": 0.1})  # credit is still "grpo": checked later
    with pytest.raises(AssertionError, match="loaded"):  # ORSD takes coef: the agent goes on to load the model
        ORSDAgent("tiny-random-qwen3", "SearchQA-v0", options_for_orsd)
    with pytest.raises(ValueError, match=r"unknown taspo credit option\(s\) \['coef'\]"):
        TASPOAgent("tiny-random-qwen3", "SearchQA-v0", options_for_orsd)
    with pytest.raises(ValueError, match=r"unknown grpo credit option\(s\) \['coef'\]"):
        GRPOAgent("tiny-random-qwen3", "SearchQA-v0", options_for_orsd)
    with pytest.raises(ValueError, match=r"ORSDOptions\.coef must be a finite number >= 0"):
        GRPOConfig(credit="orsd", credit_options={"coef": -1.0})
