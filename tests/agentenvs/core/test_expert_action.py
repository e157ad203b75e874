"""Every env's ``expert_action()`` plays its task to a win, and says None once the episode is over."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401


def play_expert(env: gym.Env, seed: int) -> tuple[bool, int]:
    env.reset(seed=seed)
    expert = env.unwrapped
    turns = 0
    while (action := expert.expert_action()) is not None:
        _, _, terminated, truncated, info = env.step(action)
        turns += 1
        assert info["action_valid"], (action, info)
        if terminated or truncated:
            break
    assert expert.expert_action() is None
    return bool(info["won"]), turns


@pytest.mark.parametrize("env_id", ["SearchQA-v0", "WebShop-v0"])
def test_the_expert_wins_generated_tasks(env_id):
    env = gym.make(env_id, max_turns=12)
    results = [play_expert(env, seed) for seed in range(8)]
    assert all(won for won, _ in results)
    assert all(turns >= 2 for _, turns in results)  # a real multi-step episode, not a one-shot answer


def test_the_alfworld_expert_follows_the_walkthrough(shared_data):
    pytest.importorskip("textworld")
    env = gym.make("ALFWorld-v0", data_path=str(shared_data / "alfworld"), split="eval_in_distribution", prefetch=False)
    won, turns = play_expert(env, seed=0)
    assert won and turns >= 2
    env.close()


def test_the_alfworld_walkthrough_survives_an_inadmissible_command(shared_data):
    """Regression: an invalid command (which changes nothing) took the agent off the walkthrough, so the
    expert gave up (None) and a third of the SFT demonstrations with broken actions ended unsolved."""
    pytest.importorskip("textworld")
    env = gym.make(
        "ALFWorld-v0",
        data_path=str(shared_data / "alfworld"),
        split="eval_in_distribution",
        prefetch=False,
        privileged=True,
    )
    env.reset(seed=0)
    expert = env.unwrapped
    first = expert.expert_action()
    *_, info = env.step(f"{first} now")
    assert not info["action_valid"] and expert.expert_action() == first
    assert info["privileged"]["expert_plan"][0] == first
    env.step("look")  # a valid command off the walkthrough does leave it
    assert expert.expert_action() is None
    env.close()


def test_the_searchqa_expert_skips_titles_already_searched():
    env = gym.make("SearchQA-v0")
    env.reset(seed=0)
    expert = env.unwrapped
    titles = expert.current_question.supporting_titles
    env.step(f"<search>{titles[0]}</search>")
    assert expert.expert_action() == (
        f"<search>{titles[1]}</search>" if len(titles) > 1 else f"<answer>{expert.current_question.answers[0]}</answer>"
    )


def test_no_expert_before_reset():
    assert gym.make("WebShop-v0").unwrapped.expert_action() is None
