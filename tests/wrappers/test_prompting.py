import gymnasium as gym
import pytest

import agentenvs  # noqa: F401
from wrappers.prompting import FORMAT_INSTRUCTIONS, PromptBuilder, output_format_for


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
    assert prompt.endswith(FORMAT_INSTRUCTIONS["search_answer"])
    assert (
        PromptBuilder(output_format="think_action")
        .build(task="T", observation="o", action_format="search_answer")
        .endswith(FORMAT_INSTRUCTIONS["think_action"])
    )
    assert output_format_for("think_action_strict") == "think_action"
    assert PromptBuilder().stop_strings("search_answer") == ("</search>", "</answer>")
    assert FORMAT_INSTRUCTIONS["search_answer"] not in PromptBuilder(show_format=False).build(
        task="T", observation="o", action_format="search_answer"
    )
    with pytest.raises(ValueError, match="action_format"):
        output_format_for("json")


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
