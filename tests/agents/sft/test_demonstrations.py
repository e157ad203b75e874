"""Expert demonstrations are the prompts the collector shows, with the expert's actions as targets."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from agentenvs.core.prompts import PromptBuilder
from agents.collection.collector import Collector
from agents.policy.generation import Generation
from agents.sft import SFTAgent, SFTConfig
from agents.sft.demonstrations import (
    break_action,
    collect_demonstrations,
    collect_turns_of_kind,
    read_demonstrations,
)

BUILDER = PromptBuilder(history_length=3, history_observations=False)


class ReplayPolicy:
    """Answers every prompt of the collector with the demonstration made for that same prompt."""

    pad_token_id = 0

    def __init__(self, responses: dict[str, str]) -> None:
        self.responses = responses
        self.seen: list[str] = []

    def generate(self, prompts, *, greedy=False, stop=()):
        self.seen.extend(prompts)
        out = []
        for prompt in prompts:
            text = self.responses[prompt]  # a KeyError here: the collector showed a prompt SFT never made
            out.append(
                Generation(
                    prompt, [1], [5] * len(text), text, [0.0] * len(text), [(i, i + 1) for i in range(len(text))]
                )
            )
        return out


@pytest.mark.parametrize("env_id", ["WebShop-v0", "SearchQA-v0"])
def test_demonstration_prompts_are_the_collectors_prompts(env_id):
    collector = Collector(
        None, env_id, num_groups=2, group_size=1, prompt_builder=BUILDER, env_kwargs={"max_turns": 10}
    )
    tasks = list(collector.task_ids[:2])
    demonstrations, stats = collect_demonstrations(
        env_id, episodes=2, prompt_builder=BUILDER, env_kwargs={"max_turns": 10}, task_ids=tasks
    )
    policy = ReplayPolicy({d.prompt: d.response for d in demonstrations})
    collector.policy = policy
    try:
        _, collected = collector.collect(tasks, seed=0)
    finally:
        collector.close()
    assert stats.success_rate == 1.0 and collected.success_rate == 1.0
    assert sorted(policy.seen) == sorted(d.prompt for d in demonstrations)
    first = [d.turn_index for d in demonstrations if d.task_id == tasks[0]]
    assert first == list(range(len(first))) and len(first) >= 2


def test_broken_turns_put_the_envs_feedback_in_later_prompts_and_are_not_demonstrated():
    demonstrations, stats = collect_demonstrations(
        "WebShop-v0",
        episodes=6,
        prompt_builder=BUILDER,
        env_kwargs={"max_turns": 15},
        invalid_action_rate=0.5,
        seed=3,
    )
    assert stats.broken_turns > 0 and stats.success_rate == 1.0
    responses = {d.response for d in demonstrations}
    assert all(r.endswith("]") for r in responses)  # no broken action is ever a target
    broken_in_history = re.compile(r"^\[Step \d+\] Action: \w+\[[^\]]*$", re.MULTILINE)
    assert any(broken_in_history.search(d.prompt) for d in demonstrations), "no prompt shows a broken action"
    turns = {(d.task_id, d.turn_index) for d in demonstrations}
    assert len(turns) == len(demonstrations) and stats.demonstrations + stats.broken_turns >= max(t for _, t in turns)


def test_break_action_makes_an_invalid_action_for_each_env_language():
    assert break_action("search[red shoes]") == "search[red shoes"
    assert break_action("<search>Paris</search>") == "<search>Paris</search"
    assert break_action("go to desk 1") == "go to desk 1 now"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"episodes": 0}, "episodes"), ({"episodes": 2, "invalid_action_rate": 1.0}, "invalid_action_rate")],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        collect_demonstrations("SearchQA-v0", prompt_builder=BUILDER, **kwargs)


def test_a_runs_demonstrations_file_reads_back_as_the_demonstrations_it_wrote(tmp_path):
    demonstrations, _ = collect_demonstrations("WebShop-v0", episodes=2, prompt_builder=BUILDER)
    path = tmp_path / "demonstrations.jsonl"  # written as SFTAgent writes it
    path.write_text("".join(json.dumps(dataclasses.asdict(d)) + "\n" for d in demonstrations) + "\n")
    assert read_demonstrations(path) == demonstrations


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"prompt": "p", "response": "r"}\nnot json\n', "line 2: not JSON"),
        ('{"prompt": "p"}\n', 'line 1: a demonstration needs "prompt" and "response" strings'),
        ('{"prompt": 3, "response": "r"}\n', 'line 1: a demonstration needs "prompt" and "response" strings'),
        ('["p", "r"]\n', "got keys list"),
        ('{"prompt": "p", "response": "r", "turn_index": -1}\n', "line 1: turn_index must be an integer >= 0"),
        ("\n\n", "holds no demonstrations"),
    ],
)
def test_a_malformed_demonstrations_file_is_refused_naming_its_line(tmp_path, text, error):
    path = tmp_path / "demos.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(error)):
        read_demonstrations(path)


def test_sft_agent_reads_its_demonstrations_file_before_the_model_loads(tmp_path):
    path = tmp_path / "demos.jsonl"
    path.write_text('{"prompt": "p"}\n')
    config = SFTConfig(demonstrations_path=str(path), output_dir=str(tmp_path / "run"))
    with pytest.raises(ValueError, match="line 1"):  # a model that does not exist is never reached
        SFTAgent("no-such-model", "WebShop-v0", config)
    with pytest.raises(FileNotFoundError):
        missing = dataclasses.replace(config, demonstrations_path=str(tmp_path / "missing.jsonl"))
        SFTAgent("no-such-model", "WebShop-v0", missing)


WEBSHOP_RECIPE_ENV = {"results_per_page": 5, "observation_mode": "text_compact", "max_goal_options": 1}


def test_turns_of_a_kind_are_the_experts_option_clicks_from_further_episodes():
    import gymnasium as gym

    turns, stats = collect_turns_of_kind(
        "WebShop-v0", "option", count=6, prompt_builder=BUILDER, env_kwargs=WEBSHOP_RECIPE_ENV, seed=3
    )
    assert len(turns) == stats.demonstrations == 6 and stats.episodes >= 6
    env = gym.make("WebShop-v0", **WEBSHOP_RECIPE_ENV).unwrapped
    for turn in turns:
        goal = env.goals[int(turn.task_id)]
        assert turn.response in {f"click[{value}]" for value in goal.goal_options.values()}
        assert "Buy Now" in turn.prompt.split("Current observation")[-1]  # the prompt is an item page
    # the same seed's expert episodes draw their tasks in another order
    expert, _ = collect_demonstrations(
        "WebShop-v0", episodes=6, prompt_builder=BUILDER, env_kwargs=WEBSHOP_RECIPE_ENV, seed=3
    )
    assert [t.task_id for t in turns] != [d.task_id for d in expert if d.response.startswith("click[")][:6]
    again, _ = collect_turns_of_kind(
        "WebShop-v0", "option", count=6, prompt_builder=BUILDER, env_kwargs=WEBSHOP_RECIPE_ENV, seed=3
    )
    assert again == turns


@pytest.mark.parametrize(
    ("env_id", "kind", "kwargs", "message"),
    [
        ("SearchQA-v0", "option", {}, "names no action kind 'option' .its kinds: none"),
        ("WebShop-v0", "opton", {}, "its kinds: search, back, next"),
        ("WebShop-v0", "option", {"max_episodes": 1, "count": 5}, "played [0-2] 'option' turns in 1 episodes, fewer"),
        ("WebShop-v0", "option", {"count": 0}, "count must be an integer >= 1"),
    ],
)
def test_turns_of_a_kind_refuse_what_cannot_be_met(env_id, kind, kwargs, message):
    with pytest.raises(ValueError, match=message):
        collect_turns_of_kind(env_id, kind, **{"count": 2, **kwargs}, prompt_builder=BUILDER)
