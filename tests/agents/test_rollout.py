import pytest
import torch

from agents.rollout import RolloutBatch, RolloutRow


def _rows(trunk: bool):
    def kept(length):
        return torch.arange(length * 2, dtype=torch.float32).reshape(length, 2) if trunk else None

    return [
        RolloutRow("a", [1, 2], [3, 4], [-0.1, -0.2], None, 0, 0, 0, 0.0, True, kept(3)),
        RolloutRow("b", [1, 2, 3, 4, 5], [6], [-0.3], None, 0, 1, 0, 0.0, True, kept(5)),
        RolloutRow("c", [7], [8], [-0.4], None, 1, 0, 0, 1.0, True, kept(1)),
    ]


def _batch(rows):
    return RolloutBatch.from_rows(
        rows,
        trajectory_rewards=[0.0, 1.0],
        trajectory_success=[False, True],
        trajectory_group_ids=[0, 0],
        pad_token_id=0,
    )


def test_prefix_chains_join_a_conversation_s_turns_only():
    batch = _batch(_rows(trunk=False))
    assert batch.trunk_hiddens is None
    assert batch.prefix_chains() == [[0, 1], [2]]
    assert batch.row_tokens(1) == ([1, 2, 3, 4, 5], [6])
    assert batch.select([1, 2]).prefix_chains() == [[0], [1]]  # the chain's start is gone


def test_trunk_states_travel_with_their_rows():
    batch = _batch(_rows(trunk=True))
    assert batch.trunk_hiddens is not None and [len(t) for t in batch.trunk_hiddens] == [3, 5, 1]
    assert [len(t) for t in batch.select([2, 0]).trunk_hiddens] == [1, 3]
    mixed = _rows(trunk=True)
    mixed[1].trunk_hiddens = None
    assert _batch(mixed).trunk_hiddens is None  # all rows or none


def test_env_snapshots_travel_with_their_rows():
    rows = _rows(trunk=False)
    for row, state in zip(rows, ("s-a", "s-b", "s-c"), strict=True):
        row.snapshot = state
    batch = _batch(rows)
    assert batch.snapshots == ["s-a", "s-b", "s-c"] and batch.select([2, 0]).snapshots == ["s-c", "s-a"]
    both = RolloutBatch.concatenate([batch, batch.select([1])], pad_token_id=0)
    assert both.snapshots == ["s-a", "s-b", "s-c", "s-b"]
    assert RolloutBatch.concatenate([batch, _batch(_rows(trunk=False))], pad_token_id=0).snapshots is None
    rows[0].snapshot = None
    assert _batch(rows).snapshots is None  # all rows or none


def test_rows_by_trajectory_and_from_groups():
    from agentenvs.core.trajectory import Trajectory, TrajectoryGroup

    rows = [
        RolloutRow("t1-turn1", [1], [2], [0.0], None, 1, 1, 0, 0.0, True),
        RolloutRow("t0-turn0", [1], [2], [0.0], None, 0, 0, 0, 0.0, True),
        RolloutRow("t1-turn0", [1], [2], [0.0], None, 1, 0, 0, 0.0, False),
    ]
    won = Trajectory("task", 0, [], True, score=1.0)
    lost = Trajectory("task", 0, [], False, score=0.0, reward=-0.2)  # an invalid turn's penalty
    batch = RolloutBatch.from_groups(rows, [TrajectoryGroup("task", 0, [won, lost])], pad_token_id=0)
    assert batch.trajectory_rewards.tolist() == pytest.approx([1.0, -0.2])  # the trainer's return, not the score
    assert batch.trajectory_success.tolist() == [True, False] and batch.num_trajectories == 2
    assert batch.rows_by_trajectory() == [[1], [2, 0]]  # turn order
    assert batch.rows_of_trajectory(1) == [2, 0]
    with pytest.raises(IndexError, match="trajectory 2 is not in a batch of 2"):
        batch.rows_of_trajectory(2)
