import math

import pytest
import torch

from agents.algorithms.loss import aggregate_loss, clipped_surrogate, k3_kl, policy_loss


def test_clipped_surrogate_hand_computed():
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[1.5, 1.5, 0.5, 0.5]]))  # ratios 1.5, 1.5, 0.5, 0.5
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]])
    loss = clipped_surrogate(logp, old, adv, epsilon=0.2, epsilon_high=0.28)
    # A>0, r=1.5 -> min(1.5, 1.28) = 1.28;  A<0, r=1.5 -> min(-1.5, -1.28) = -1.5
    # A>0, r=0.5 -> min(0.5, 0.8) = 0.5;    A<0, r=0.5 -> min(-0.5, -0.8) = -0.8
    assert loss[0].tolist() == pytest.approx([-1.28, 1.5, -0.5, 0.8], rel=1e-6)


def test_k3_hand_computed():
    logp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    # exp(ref - logp) - (ref - logp) - 1 = 0.5 + ln 2 - 1
    assert k3_kl(logp, ref).item() == pytest.approx(0.5 + math.log(2) - 1)


def test_aggregations_hand_computed():
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    kw = dict(total_rows=2, total_tokens=4, max_length=5)
    assert aggregate_loss(per_token, mask, loss_type="grpo", **kw).item() == pytest.approx((2.0 + 4.0) / 2)
    assert aggregate_loss(per_token, mask, loss_type="dapo", **kw).item() == pytest.approx(10 / 4)
    assert aggregate_loss(per_token, mask, loss_type="dr_grpo", **kw).item() == pytest.approx(10 / (2 * 5))
    with pytest.raises(ValueError, match="loss_type"):
        aggregate_loss(per_token, mask, loss_type="sum", **kw)


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "dr_grpo"])
def test_micro_batches_sum_to_the_full_batch(loss_type):
    generator = torch.Generator().manual_seed(0)
    logp = torch.randn(6, 5, generator=generator)
    old = logp + 0.1 * torch.randn(6, 5, generator=generator)
    ref = logp + 0.1 * torch.randn(6, 5, generator=generator)
    adv = torch.randn(6, 5, generator=generator)
    mask = (torch.rand(6, 5, generator=generator) > 0.3).long()
    mask[:, 0] = 1
    totals = dict(total_rows=6, total_tokens=int(mask.sum()), max_length=5, loss_type=loss_type, beta=0.1)
    full, _ = policy_loss(logp, old, adv, mask, ref_logprobs=ref, **totals)
    parts = sum(
        policy_loss(logp[s], old[s], adv[s], mask[s], ref_logprobs=ref[s], **totals)[0]
        for s in (slice(0, 2), slice(2, 5), slice(5, 6))
    )
    assert parts.item() == pytest.approx(full.item(), rel=1e-5)


def test_gradient_at_ratio_one_is_minus_advantage_over_tokens():
    logp = torch.zeros(1, 2, requires_grad=True)
    loss, stats = policy_loss(logp, torch.zeros(1, 2), torch.tensor([[2.0, -1.0]]), torch.ones(1, 2), loss_type="dapo")
    loss.backward()
    assert logp.grad.tolist() == [[-1.0, 0.5]]
    assert stats["ratio_mean"] == pytest.approx(1.0) and stats["clip_fraction"] == 0.0


def test_beta_without_reference_is_an_error():
    with pytest.raises(ValueError, match="ref_logprobs"):
        policy_loss(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1, 1), beta=0.1)
