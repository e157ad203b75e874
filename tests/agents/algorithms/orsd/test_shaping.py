import pytest
import torch

from agents.algorithms.orsd.shaping import normalize_shift, orsd_token_advantages, shaping_stats


def test_orsd_token_advantages_hand_computed():
    # A = [1, -1]; λ = 0.5, c = 1: row 0 tokens 0.5 -> 1 + .25, 3 -> clip 1 -> 1.5; row 1: -2 -> -1 - .5.
    A = torch.tensor([1.0, -1.0])
    delta = torch.tensor([[0.5, 3.0], [-2.0, 7.0]])
    mask = torch.tensor([[1, 1], [1, 0]])
    out = orsd_token_advantages(A, delta, mask, torch.tensor([0, 1]), coef=0.5, clip=1.0)
    assert out.tolist() == [[1.25, 1.5], [-1.5, 0.0]]
    assert torch.equal(
        orsd_token_advantages(A, delta, mask, torch.tensor([0, 1]), coef=0.0, clip=1.0),
        torch.tensor([[1.0, 1.0], [-1.0, 0.0]]),
    )


def test_normalize_shift_per_trajectory_over_masked_tokens():
    # Trajectory 0 spans rows 0 and 1: values [1, 3] and [2] (masked 9 ignored): mean 2, std sqrt(2/3).
    delta = torch.tensor([[1.0, 3.0], [2.0, 9.0], [4.0, 4.0]])
    mask = torch.tensor([[1, 1], [1, 0], [1, 1]])
    ids = torch.tensor([0, 0, 1])
    sigma = (2 / 3) ** 0.5
    mean_std = normalize_shift(delta, mask, ids, "mean_std", eps=0.0)
    assert mean_std[0].tolist() == pytest.approx([-1 / sigma, 1 / sigma])
    assert mean_std[1].tolist() == pytest.approx([0.0, 0.0])
    assert mean_std[2].tolist() == [0.0, 0.0]  # constant trajectory: centred 0
    std = normalize_shift(delta, mask, ids, "std", eps=0.0)
    assert std[1, 0].item() == pytest.approx(2 / sigma) and std[1, 1] == 0
    assert normalize_shift(delta, mask, ids, "none")[1].tolist() == [2.0, 0.0]
    with pytest.raises(ValueError, match="normalize"):
        normalize_shift(delta, mask, ids, "zscore")


def test_orsd_validation_and_stats():
    with pytest.raises(ValueError, match="clip"):
        orsd_token_advantages(torch.ones(1), torch.zeros(1, 1), torch.ones(1, 1), torch.zeros(1), coef=1, clip=0)
    A = torch.tensor([2.0])
    token = torch.tensor([[2.5, 1.5, 0.0]])
    stats = shaping_stats(A, token, torch.tensor([[1, 1, 0]]))
    assert stats == {"shaping_abs_mean": 0.5, "advantage_abs_mean": 2.0, "shaping_to_advantage": 0.25}
