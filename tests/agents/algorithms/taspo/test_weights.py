import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.algorithms.taspo.weights import (
    action_support,
    taspo_weights,
    token_support,
    trajectory_row_weights,
    weight_stats,
    weighted_token_advantages,
)


def test_action_support_hand_computed():
    shift = torch.tensor([5.0, 0.4, 0.01, -0.2, 9.0])
    # span [1, 4): 0.4 and -0.2 pass κ = 0.05, 0.01 does not; divided by the full length 3.
    assert action_support(shift, 1, 4, kappa=0.05) == pytest.approx(0.2 / 3)
    assert action_support(shift, 1, 4, kappa=0.0) == pytest.approx(0.21 / 3)
    assert action_support(shift, 2, 2, kappa=0.05) == 0.0
    with pytest.raises(ValueError, match="outside"):
        action_support(shift, 3, 9, kappa=0.0)


def test_token_support_filters_below_kappa():
    assert token_support(torch.tensor([0.01, -0.3, 0.2]), kappa=0.1).tolist() == pytest.approx([0.0, -0.3, 0.2])


def test_weights_hand_computed_positive_and_negative_advantage():
    s = torch.tensor([0.3, 0.1, 0.2, 9.0])
    aligned = torch.tensor([True, True, True, False])
    # mean over aligned = 0.2; d = [0.1, -0.1, 0]; max |d| = 0.1.
    assert taspo_weights(s, aligned, 2.0, epsilon=0.5).tolist() == pytest.approx([1.5, 0.5, 1.0, 1.0])
    # A < 0: d flips, the most supported turn gets the smallest weight (weakest penalty).
    assert taspo_weights(s, aligned, -1.0, epsilon=0.5).tolist() == pytest.approx([0.5, 1.5, 1.0, 1.0])


def test_weights_fallbacks_to_ones():
    s = torch.tensor([0.3, 0.1, 0.2])
    assert taspo_weights(s, torch.tensor([True, True, True]), 0.0, epsilon=0.5).tolist() == [1, 1, 1]
    assert taspo_weights(s, torch.tensor([True, False, False]), 1.0, epsilon=0.5).tolist() == [1, 1, 1]
    assert taspo_weights(torch.tensor([0.2, 0.2]), torch.tensor([True, True]), 1.0, epsilon=0.5).tolist() == [1, 1]
    with pytest.raises(ValueError, match="epsilon"):
        taspo_weights(s, torch.tensor([True] * 3), 1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="shape"):
        taspo_weights(s, torch.tensor([True]), 1.0, epsilon=0.5)


def test_weight_stats():
    assert weight_stats(torch.tensor([0.5, 1.5])) == {"weight_min": 0.5, "weight_max": 1.5, "weight_std": 0.5}


floats = st.floats(-5, 5, allow_nan=False, width=32)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(floats, st.booleans()), min_size=1, max_size=12),
    st.floats(-3, 3, allow_nan=False).filter(lambda a: abs(a) > 1e-3),
    st.floats(0, 0.99),
)
def test_weight_properties(units, advantage, epsilon):
    support = torch.tensor([s for s, _ in units], dtype=torch.float64)
    aligned = torch.tensor([a for _, a in units])
    w = taspo_weights(support, aligned, advantage, epsilon=epsilon)
    assert w.mean().item() == pytest.approx(1.0, abs=1e-9)  # mean exactly 1
    assert (w >= 1 - epsilon - 1e-9).all() and (w <= 1 + epsilon + 1e-9).all() and (w > 0).all()
    assert (w[~aligned] == 1).all()
    if int(aligned.sum()) < 2:
        assert (w == 1).all()
    # Sign behaviour: among aligned units, more support -> larger weight for A > 0, smaller for A < 0.
    idx = aligned.nonzero().flatten().tolist()
    for i in idx:
        for j in idx:
            if support[i] > support[j]:
                assert (w[i] >= w[j]) if advantage > 0 else (w[i] <= w[j])
    # Scaling A by a positive factor does not change the weights; the sign of w·A is the sign of A.
    assert torch.allclose(taspo_weights(support, aligned, advantage * 3.7, epsilon=epsilon), w)
    assert ((w * advantage) * advantage > 0).all()


def test_trajectory_row_weights_action_level_hand_computed():
    # Three aligned turns of an A > 0 trajectory. Supports (κ = 0.05, divided by the action length):
    # row 0: span [1, 3) of [9, 0.2, 0.4] -> 0.3; row 1: [0, 2) of [0.01, -0.2] -> -0.1; row 2: [0, 1) of [0.2] -> 0.2.
    # mean 0.4/3; d = [0.1667, -0.2333, 0.0667]; max |d| = 0.2333; w = 1 + 0.5 d / 0.2333.
    shifts = [torch.tensor([9.0, 0.2, 0.4]), torch.tensor([0.01, -0.2]), torch.tensor([0.2])]
    rows = trajectory_row_weights(shifts, [(1, 3), (0, 2), (0, 1)], 2.0, kappa=0.05, epsilon=0.5)
    expected = [1 + 0.5 * (0.5 / 3) / (0.7 / 3), 0.5, 1 + 0.5 * (0.2 / 3) / (0.7 / 3)]
    assert [len(row) for row in rows] == [3, 2, 1]
    for row, weight in zip(rows, expected, strict=True):
        assert row.tolist() == pytest.approx([weight] * len(row))
    # The same supports with A < 0: the deviations flip.
    flipped = trajectory_row_weights(shifts, [(1, 3), (0, 2), (0, 1)], -1.0, kappa=0.05, epsilon=0.5)
    assert [float(row[0]) for row in flipped] == pytest.approx([2 - w for w in expected])
    # A row without an action (span -1, -1) has support 0.
    no_action = trajectory_row_weights(
        [torch.tensor([0.5]), torch.tensor([0.1])], [(-1, -1), (0, 1)], 1.0, kappa=0.0, epsilon=0.4
    )
    assert [float(row[0]) for row in no_action] == pytest.approx([0.6, 1.4])


def test_trajectory_row_weights_token_level_pools_the_trajectory_tokens():
    # Tokens [0.3, 0.0 | 0.1, 0.2]: κ = 0.05 keeps them; mean 0.15; d = [0.15, -0.15, -0.05, 0.05]; max 0.15.
    rows = trajectory_row_weights(
        [torch.tensor([0.3, 0.0]), torch.tensor([0.1, 0.2])],
        [(0, 1), (0, 1)],
        1.0,
        kappa=0.05,
        epsilon=0.3,
        level="token",
    )
    assert [row.tolist() for row in rows] == [pytest.approx([1.3, 0.7]), pytest.approx([0.9, 1.1])]
    with pytest.raises(ValueError, match="level"):
        trajectory_row_weights([torch.tensor([0.1])], [(0, 1)], 1.0, kappa=0.0, epsilon=0.3, level="turn")
    with pytest.raises(ValueError, match="action spans"):
        trajectory_row_weights([torch.tensor([0.1])], [], 1.0, kappa=0.0, epsilon=0.3)


def test_weighted_token_advantages_hand_computed():
    advantages = torch.tensor([2.0, -1.0, 0.0])
    weights = torch.tensor([[1.5, 1.5, 1.5], [0.5, 0.5, 1.0], [1.2, 1.2, 1.2]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 0, 0]])
    out = weighted_token_advantages(advantages, weights, mask)
    assert out.tolist() == [[3.0, 3.0, 0.0], [-0.5, -0.5, -1.0], [0.0, 0.0, 0.0]]
