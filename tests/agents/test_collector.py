from dataclasses import dataclass

import pytest
import torch

from agents.collector import Collector
from agents.policy.transformers_policy import Generation


@dataclass
class ScriptedPolicy:
    """Answers from a script (one list of outputs per turn); token = one character."""

    script: list[str]
    pad_token_id: int = 0

    def generate(self, prompts, *, greedy=False, stop=()):
        turn = self.calls = getattr(self, "calls", -1) + 1
        outputs = []
        for index, prompt in enumerate(prompts):
            text = self.script[turn] if isinstance(self.script[turn], str) else self.script[turn][index]
            ids = [ord(c) % 97 + 1 for c in text]
            offsets = [(i, i + 1) for i in range(len(text))]
            outputs.append(Generation(prompt, [1, 2, 3], ids, text, [-0.5] * len(ids), offsets, "stop"))
        return outputs


def test_collects_groups_turns_and_token_spans():
    policy = ScriptedPolicy(["Let me look. <search>capital</search>", "<answer>nobody</answer>"])
    collector = Collector(policy, "SearchQA-v0", num_groups=2, group_size=2, invalid_action_penalty=0.5)
    task_ids = list(collector.task_ids[:2])
    batch = collector.collect(task_ids, seed=0)
    assert [g.task_id for g in batch.groups] == task_ids
    assert len(batch) == 8  # 4 trajectories x 2 turns
    first = batch.trajectories[0].turns[0]
    assert first.action == "<search>capital</search>" and first.valid
    assert first.action_span.text_of(first.raw_output) == "<search>capital</search>"
    assert (first.action_span.token_start, first.action_span.token_end) == (13, 37)
    assert batch.action_token_spans[0].tolist() == [13, 37]
    assert batch.turn_index.tolist() == [0, 1] * 4 and batch.trajectory_index.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert batch.group_ids.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert batch.old_logprobs[0, :37].eq(-0.5).all() and batch.response_mask[0].sum() == 37
    assert batch.trajectory_rewards.tolist() == [0.0] * 4
    assert collector.last_stats.invalid_rate == 0.0 and collector.last_stats.mean_episode_length == 2.0
    collector.close()


def test_invalid_actions_are_penalised_and_episodes_stop_when_done():
    # member 0 answers at once (done after 1 turn); the others write nonsense until truncation
    policy = ScriptedPolicy([["<answer>x</answer>", "blah", "blah"], "blah", "blah", "blah"])
    collector = Collector(policy, "SearchQA-v0", num_groups=1, group_size=3, invalid_action_penalty=0.25,
                          env_kwargs={"max_turns": 2})
    batch = collector.collect(seed=1)
    lengths = [len(t) for t in batch.trajectories]
    assert lengths == [1, 2, 2]
    assert batch.trajectory_rewards.tolist() == pytest.approx([0.0, -0.5, -0.5])
    assert batch.turn_rewards.tolist() == pytest.approx([0.0, -0.25, -0.25, -0.25, -0.25])
    assert not batch.turn_valid[1:].any() and batch.action_token_spans[1:].eq(-1).all()
    assert collector.last_stats.invalid_rate == pytest.approx(4 / 5)
    assert batch.trajectories[1].turns[0].info["action_valid"] is False
    collector.close()


def test_tiny_model_rollouts_carry_what_the_update_needs(tiny_policy):
    collector = Collector(tiny_policy, "SearchQA-v0", num_groups=2, group_size=2, env_kwargs={"max_turns": 2})
    batch = collector.collect(seed=0)
    assert len(batch.trajectories) == 4 and batch.prompt_ids.shape[0] == len(batch)
    rescored = tiny_policy.token_logprobs(batch.prompt_ids, batch.prompt_mask, batch.response_ids, batch.response_mask)
    assert torch.allclose(rescored, batch.old_logprobs, atol=1e-4)
    collector.close()
