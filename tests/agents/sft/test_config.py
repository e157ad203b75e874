"""SFTConfig: the shared groups with SFT's defaults, its own fields checked, prompts comparable with RL's."""

import dataclasses

import pytest

from agents import GRPOConfig
from agents.settings import PromptSettings
from agents.sft.config import PROMPT_FIELDS, SFTConfig


def test_sft_defaults_differ_where_the_stage_does():
    sft, rl = SFTConfig(), GRPOConfig()
    assert (sft.learning_rate, sft.lora, sft.output_dir) == (2e-4, True, None)  # None: a new numbered folder
    assert (rl.learning_rate, rl.lora, rl.output_dir) == (1e-6, False, None)  # TRL's default
    assert PROMPT_FIELDS == tuple(f.name for f in dataclasses.fields(PromptSettings))


def test_prompt_settings_compare_with_the_rl_stage():
    sft = SFTConfig(history_length=3, prompt_preamble="")
    assert sft.prompt_settings() == dataclasses.asdict(
        PromptSettings.of(GRPOConfig(history_length=3, prompt_preamble=""))
    )
    assert sft.prompt_settings() != dataclasses.asdict(PromptSettings.of(GRPOConfig()))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"epochs": 0}, "epochs"),
        ({"invalid_action_rate": 1.0}, "invalid_action_rate"),
        ({"eval_episodes": -1}, "eval_episodes"),
        ({"batch_size": 2.0}, "batch_size"),
        ({"trunk_cache": True, "lora_top_layers": None}, "trunk_cache"),  # no frozen trunk to keep
    ],  # fmt: skip
)
def test_sft_fields_are_checked(kwargs, field):
    with pytest.raises(ValueError, match=rf"^SFTConfig\.{field} must be"):
        SFTConfig(**kwargs)
    assert SFTConfig.from_dict(SFTConfig(epochs=3).to_dict()) == SFTConfig(epochs=3)
