"""The prompt builder: what an LLM agent reads each turn, from the info contract and the action format."""

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.actions import ACTION_FORMATS
from agentenvs.core.prompts import HISTORY_RAW_CHARS, PromptBuilder, history_action


def test_history_without_observations_lists_the_actions_only():
    history = [("obs 1", "act 1"), ("obs 2", "act 2")]
    prompt = PromptBuilder(history_length=5, history_observations=False).build(
        task="T", observation="now", history=history
    )
    assert "[Step 1] Action: act 1\n[Step 2] Action: act 2" in prompt
    assert "obs 1" not in prompt and "obs 2" not in prompt
    assert "Current observation (step 3): now" in prompt


def test_history_is_cut_to_the_last_k_turns():
    history = [(f"obs {i}", f"act {i}") for i in range(1, 5)]
    prompt = PromptBuilder(history_length=2).build(task="T", observation="now", history=history)
    assert "[Step 3] Observation: obs 3" in prompt and "[Step 4] Action: act 4" in prompt
    assert "obs 2" not in prompt and "You have taken 4 step(s). The last 2:" in prompt
    assert "Current observation (step 5): now" in prompt
    assert "[Step" not in PromptBuilder(history_length=0).build(task="T", observation="now", history=history)


def test_admissible_actions_are_listed_and_capped():
    builder = PromptBuilder(max_admissible=2)
    prompt = builder.build(task="T", observation="o", admissible_actions=["a", "b", "c"])
    assert "Admissible actions: ['a', 'b' (and 1 more)]" in prompt
    assert "Admissible" not in PromptBuilder(show_admissible=False).build(
        task="T", observation="o", admissible_actions=["a"]
    )
    assert "Admissible" not in builder.build(task="T", observation="o", admissible_actions=None)


def test_output_format_follows_the_env_or_the_override():
    prompt = PromptBuilder().build(task="T", observation="o", action_format="search_answer")
    assert prompt.endswith(ACTION_FORMATS["search_answer"].instruction)
    assert (
        PromptBuilder(output_format="think_action")
        .build(task="T", observation="o", action_format="search_answer")
        .endswith(ACTION_FORMATS["think_action"].instruction)
    )
    assert PromptBuilder(output_format="raw").stop_strings("search_answer") == ("\n",)
    assert PromptBuilder().stop_strings("search_answer") == ("</search>", "</answer>")
    assert PromptBuilder().stop_strings("raw") == ("\n",)  # a raw action is one line
    assert PromptBuilder().stop_strings("think_action_strict") == ("</action>",)
    assert ACTION_FORMATS["search_answer"].instruction not in PromptBuilder(show_format=False).build(
        task="T", observation="o", action_format="search_answer"
    )
    with pytest.raises(ValueError, match="'json'"):
        PromptBuilder().build(task="T", observation="o", action_format="json")


def test_every_format_is_prompted_with_its_own_record():
    for name, action_format in ACTION_FORMATS.items():
        builder = PromptBuilder()
        assert builder.format_for(name) is action_format and builder.resolve_format(name) == name
        assert builder.build(task="T", observation="o", action_format=name).endswith(action_format.instruction)
        assert builder.stop_strings(name) == action_format.stop_strings
        fixed = PromptBuilder(output_format=name)  # any registered format can be fixed
        assert fixed.format_for("raw") is action_format


def test_history_shows_the_executed_action_or_the_raw_output_cut():
    assert history_action("<action>look</action>", {"action_valid": True, "action": "look"}) == "look"
    assert history_action("  " + "x" * 500, {"action_valid": False}) == "x" * HISTORY_RAW_CHARS
    assert history_action(None, {}) == "None"


def test_task_is_said_once_and_long_observations_are_cut():
    prompt = PromptBuilder(max_observation_chars=10).build(task="Find X", observation="Question: Find X and more")
    assert "Task:" not in prompt and "Question: ..." in prompt
    assert "Task: Find X" in PromptBuilder().build(task="Find X", observation="You are in a room.")


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="history_length"):
        PromptBuilder(history_length=-1)
    with pytest.raises(ValueError, match="output_format"):
        PromptBuilder(output_format="xml")


def test_builds_from_a_real_env_info():
    env = gym.make("SearchQA-v0")
    observation, info = env.reset(seed=0)
    prompt = PromptBuilder().build(
        task=info["task"],
        observation=observation,
        admissible_actions=info["admissible_actions"],
        action_format=env.unwrapped.action_format,
    )
    assert info["task"] in prompt and "<search>" in prompt
