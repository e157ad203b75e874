"""agents.recipes: each env's settings, GRPOConfig.for_env and SFTConfig.for_env."""

from __future__ import annotations

import dataclasses

import pytest

from agents.cli.quickstart import PRESETS
from agents.config import GRPOConfig
from agents.recipes import RECIPES, rl_settings
from agents.settings import EnvSettings, PromptSettings
from agents.sft import SFTConfig


@pytest.mark.parametrize("env_id", sorted(RECIPES))
def test_every_recipe_builds_and_fits_its_env(env_id):
    config = GRPOConfig.for_env(env_id)
    config.check_env(env_id)  # every env kwarg is one the env takes
    if RECIPES[env_id].sft is not None:
        sft = SFTConfig.for_env(env_id)
        sft.check_env(env_id)
        assert PromptSettings.of(sft) == PromptSettings.of(config) and EnvSettings.of(sft) == EnvSettings.of(config)


def test_the_webshop_recipe_is_the_quick_starts_and_overrides_win():
    config = GRPOConfig.for_env("WebShop-v0")
    assert config == PRESETS["webshop"].rl and SFTConfig.for_env("WebShop-v0") == PRESETS["webshop"].sft
    assert GRPOConfig.for_env("WebShop-v0", group_size=2, output_dir="runs/x").group_size == 2
    assert (config.max_new_tokens, config.max_turns, config.rollouts_per_step) == (32, 5, 16)


def test_a_config_never_shares_the_recipes_mutable_values():
    config = GRPOConfig.for_env("WebShop-v0")
    config.env_kwargs["results_per_page"] = 50
    assert rl_settings("WebShop-v0")["env_kwargs"]["results_per_page"] == 5
    assert dataclasses.replace(config).env_kwargs is not RECIPES["WebShop-v0"].both["env_kwargs"]


def test_unknown_envs_missing_warm_starts_and_bad_overrides_are_named():
    with pytest.raises(ValueError, match="no agent recipe for env 'CartPole-v1'; recipes: ALFWorld-v0"):
        GRPOConfig.for_env("CartPole-v1")
    with pytest.raises(ValueError, match="'SearchQA-v0' has no warm start"):
        SFTConfig.for_env("SearchQA-v0")
    with pytest.raises(ValueError, match="GRPOConfig.group_size must be"):
        GRPOConfig.for_env("WebShop-v0", group_size=0)


def test_the_webshop_recipe_reports_on_goals_apart_from_its_training_and_tuning_goals():
    import gymnasium as gym

    config = GRPOConfig.for_env("WebShop-v0")
    sft = SFTConfig.for_env("WebShop-v0")
    assert config.evaluation_env_kwargs("WebShop-v0") == sft.evaluation_env_kwargs("WebShop-v0")

    def goals(**kwargs):
        with gym.make("WebShop-v0", **kwargs) as env:
            return set(env.unwrapped.task_ids)

    report = goals(**config.evaluation_env_kwargs("WebShop-v0"))
    training = goals(**config.env_kwargs_with_limit())
    tuning = goals(**{**config.env_kwargs_with_limit(), "split": "test"})
    assert len(report) >= 96 and len(tuning) >= 96  # room for the wider evaluation; the tuning runs' 104
    assert not report & training and not report & tuning and not tuning & training
