"""Held-out evaluation: the first tasks of the pool, summary metrics, and training's sampling untouched."""

import pytest
import torch

from agentenvs.core.trajectory import read_jsonl
from agents.collection.collector import Collector
from agents.collection.evaluation import evaluate_policy, held_out_tasks
from agents.policy.generation import Generation


class AnswerPolicy:
    """Answers every question with the same text (one token per character)."""

    pad_token_id = 0

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.generator = torch.Generator().manual_seed(7)

    def generate(self, prompts, *, greedy=False, stop=()):
        text = f"<answer>{self.answer}</answer>"
        ids = [ord(c) % 97 + 1 for c in text]
        offsets = [(i, i + 1) for i in range(len(text))]
        return [Generation(p, [1], ids, text, [-0.5] * len(ids), offsets, "stop") for p in prompts]


def test_held_out_tasks_are_the_first_of_the_pool_cycled():
    assert held_out_tasks(["a", "b", "c"], 2) == ["a", "b"]
    assert held_out_tasks(["a", "b"], 5) == ["a", "b", "a", "b", "a"]
    with pytest.raises(ValueError, match="no tasks"):
        held_out_tasks([], 1)


def test_evaluation_reports_the_summary_writes_the_episodes_and_restores_the_generator(tmp_path):
    policy = AnswerPolicy("nobody")
    generator = policy.generator
    state = generator.get_state()
    collector = Collector(policy, "SearchQA-v0", num_groups=3, group_size=1, env_kwargs={"split": "test"})
    try:
        metrics = evaluate_policy(
            policy, collector, episodes=3, seed=0, greedy=False, prefix="eval/", trajectories_path=tmp_path / "e.jsonl"
        )
    finally:
        collector.close()
    assert metrics["eval/success_rate"] == 0.0 and metrics["eval/invalid_rate"] == 0.0
    assert metrics["eval/mean_episode_length"] == 1.0 and metrics["time/eval_s"] > 0
    assert policy.generator is generator and torch.equal(generator.get_state(), state)  # training's draws unchanged
    groups = read_jsonl(tmp_path / "e.jsonl")
    assert [group.task_id for group in groups] == held_out_tasks(collector.task_ids, 3)
