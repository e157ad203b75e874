"""Shards' collections merged as one collector would have returned them (hand-computed)."""

from __future__ import annotations

import pytest
import torch

from agentenvs.core.trajectory import Trajectory, TrajectoryGroup, Turn
from agents.collection.collector import Collection, CollectStats
from agents.collection.merge import merge_collections
from agents.rollout import RolloutBatch, RolloutRow


def trajectory(task: str, reward: float, success: bool, turns: int) -> Trajectory:
    steps = [Turn("obs", "out", "act", None, reward, True) for _ in range(turns)]
    return Trajectory(task, 0, steps, success, score=max(reward, 0.0), reward=reward)


def shard(rows, trajectories, task, generated, prompt_tokens):
    batch = RolloutBatch.from_groups(rows, [TrajectoryGroup(task, 0, trajectories)], pad_token_id=0)
    return Collection(batch, CollectStats(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, generated, prompt_tokens, 9.0))


@pytest.fixture
def parts():
    first = shard(
        [
            RolloutRow("a0", [5, 6], [7, 8, 9], [-0.1, -0.2, -0.3], (1, 2), 0, 0, 0, 0.5, True),
            RolloutRow("a1", [5], [4], [-0.4], None, 1, 0, 0, -0.1, False),
        ],
        [trajectory("A", 0.5, True, 1), trajectory("A", -0.1, False, 1)],
        "A",
        generated=4,
        prompt_tokens=3,
    )
    second = shard(
        [RolloutRow("b0", [1, 2, 3], [2], [-0.5], (0, 1), 0, 0, 0, 1.0, True)],
        [trajectory("B", 1.0, True, 1)],
        "B",
        generated=1,
        prompt_tokens=3,
    )
    return [first, second]


def test_rows_are_padded_and_renumbered_in_shard_order(parts):
    batch, _ = merge_collections(parts, pad_token_id=0, seconds=1.5)
    assert batch.prompts == ["a0", "a1", "b0"]
    assert batch.prompt_ids.tolist() == [[0, 5, 6], [0, 0, 5], [1, 2, 3]]
    assert batch.prompt_mask.tolist() == [[0, 1, 1], [0, 0, 1], [1, 1, 1]]
    assert batch.response_ids.tolist() == [[7, 8, 9], [4, 0, 0], [2, 0, 0]]
    assert torch.allclose(batch.old_logprobs, torch.tensor([[-0.1, -0.2, -0.3], [-0.4, 0, 0], [-0.5, 0, 0]]))
    assert batch.action_token_spans.tolist() == [[1, 2], [-1, -1], [0, 1]]
    assert batch.trajectory_index.tolist() == [0, 1, 2] and batch.group_ids.tolist() == [0, 0, 1]
    assert batch.trajectory_group_ids.tolist() == [0, 0, 1]
    assert batch.turn_rewards.tolist() == pytest.approx([0.5, -0.1, 1.0])
    assert batch.trajectory_success.tolist() == [True, False, True]
    assert [(g.task_id, g.group_id) for g in batch.groups] == [("A", 0), ("B", 1)]
    assert [t.group_id for t in batch.trajectories] == [0, 0, 1]


def test_stats_are_recomputed_over_all_trajectories(parts):
    _, stats = merge_collections(parts, pad_token_id=0, seconds=1.5)
    assert stats.success_rate == pytest.approx(2 / 3)
    assert stats.mean_score == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert stats.mean_reward == pytest.approx((0.5 - 0.1 + 1.0) / 3)
    assert stats.mean_episode_length == 1.0 and stats.invalid_rate == pytest.approx(1 / 3)
    assert stats.mean_response_tokens == pytest.approx(5 / 3)
    assert (stats.generated_tokens, stats.prompt_tokens, stats.seconds, stats.failed_episodes) == (5, 6, 1.5, 0)


def test_one_batch_concatenated_is_itself(parts):
    batch = parts[0].batch
    again = RolloutBatch.concatenate([batch], pad_token_id=0)
    for name in ("prompt_ids", "prompt_mask", "response_ids", "response_mask", "old_logprobs", "action_token_spans",
                 "trajectory_index", "group_ids", "trajectory_rewards", "trajectory_group_ids"):  # fmt: skip
        assert torch.equal(getattr(again, name), getattr(batch, name)), name
    assert again.groups == batch.groups and again.prompts == batch.prompts


def test_reference_logprobs_and_trunk_states_survive_a_merge(parts):
    first, second = parts[0].batch, parts[1].batch
    first.ref_logprobs, second.ref_logprobs = torch.full((2, 3), -1.0), torch.full((1, 1), -2.0)
    first.trunk_hiddens, second.trunk_hiddens = [torch.zeros(4, 2), torch.zeros(1, 2)], [torch.ones(3, 2)]
    batch = RolloutBatch.concatenate([first, second], pad_token_id=0)
    assert batch.ref_logprobs.tolist() == [[-1.0] * 3, [-1.0] * 3, [-2.0, 0.0, 0.0]]
    assert [tuple(h.shape) for h in batch.trunk_hiddens] == [(4, 2), (1, 2), (3, 2)]
    second.ref_logprobs = None  # one shard without: the merged batch has none
    assert RolloutBatch.concatenate([first, second], pad_token_id=0).ref_logprobs is None


def test_nothing_to_merge_is_an_error():
    with pytest.raises(ValueError, match="at least one collection"):
        merge_collections([], pad_token_id=0, seconds=0.0)
