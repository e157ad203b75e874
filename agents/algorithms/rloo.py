"""RLOO credit: a leave-one-out baseline per group, broadcast to every response token.

For trajectory ``i`` of a group of ``G`` with outcome ``R_i`` (Ahmadian et al., 2024,
"Back to Basics: Revisiting REINFORCE Style Optimization for Learning from Human Feedback"):

    b_i = (1 / (G − 1)) · Σ_{j ≠ i} R_j,        A_i = R_i − b_i = G / (G − 1) · (R_i − mean_g(R))

then divided like GRPO's centred rewards by ``config.scale_rewards``: nothing (``"none"``:
the paper's estimator), the group std (``"group"``) or the batch std (``"batch"``), plus
``config.advantage_eps``. A group of one (or zero spread with ``eps = 0``) gets advantage 0. The losses
(``loss_type`` ``grpo``, ``dapo``, ``dr_grpo``) are the same for every rule.

With ``scale_rewards="none"`` RLOO is Dr. GRPO's advantage times ``G / (G − 1)``; with equal
group sizes the difference is a constant scale, which an adaptive optimizer mostly absorbs.
It is here as the baseline peers report, so comparisons need not argue the equivalence.

Example:
    >>> rloo_advantages(torch.tensor([1.0, 0.0, 0.0, 2.0]), torch.tensor([0, 0, 0, 1]), scale_rewards="none")
    tensor([ 1.0000, -0.5000, -0.5000,  0.0000])
"""

from __future__ import annotations

import torch

from agents.algorithms.base import CreditContext, CreditResult, broadcast_to_tokens, register_credit_rule
from agents.algorithms.grpo import GRPOCredit, check_scale_rewards, group_mean_std
from agents.rollout import RolloutBatch


def rloo_advantages(
    rewards: torch.Tensor, group_ids: torch.Tensor, *, scale_rewards: str = "none", eps: float = 1e-4
) -> torch.Tensor:
    """Per-trajectory leave-one-out advantages (see the module docstring for the formula).

    Args:
        rewards: ``[N]`` trajectory outcomes R.
        group_ids: ``[N]`` group of each trajectory.
        scale_rewards: ``"none"``, ``"group"`` or ``"batch"`` (the divisor of ``R_i − b_i``).
        eps: Added to the std when dividing by it.

    Raises:
        ValueError: for an unknown ``scale_rewards`` or mismatched shapes.
    """
    check_scale_rewards("rloo_advantages", scale_rewards)
    if rewards.shape != group_ids.shape or rewards.dim() != 1:
        raise ValueError(f"rewards {tuple(rewards.shape)} and group_ids {tuple(group_ids.shape)} must be equal 1-D")
    rewards = rewards.float()
    _, inverse, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    size = counts[inverse].float()
    totals = torch.zeros(len(counts)).index_add_(0, inverse, rewards)[inverse]
    baseline = (totals - rewards) / (size - 1).clamp(min=1)
    advantages = torch.where(size > 1, rewards - baseline, torch.zeros_like(rewards))
    if scale_rewards == "none":
        return advantages
    if scale_rewards == "group":
        scale = group_mean_std(rewards, group_ids)[1] + eps
    else:
        scale = (rewards.std() if rewards.numel() > 1 else torch.tensor(0.0)).expand_as(rewards) + eps
    return torch.where(scale > 0, advantages / scale.clamp_min(1e-30), torch.zeros_like(advantages))


@register_credit_rule("rloo")
class RLOOCredit(GRPOCredit):
    """Leave-one-out outcome advantages (``config.scale_rewards``, ``config.advantage_eps``).

    Set ``scale_rewards="none"`` for the paper's estimator; GRPOConfig's default ``"group"``
    divides by the group std as GRPO does. ``stats``: ``rloo/advantage_abs_mean`` (mean |A_i|
    over trajectories).
    """

    def trajectory_advantages(self, batch: RolloutBatch) -> torch.Tensor:
        """``[N]`` RLOO advantage A_i of every trajectory in the batch."""
        return rloo_advantages(
            batch.trajectory_rewards, batch.trajectory_group_ids, scale_rewards=self.scale_rewards, eps=self.eps
        )

    def compute(self, batch: RolloutBatch, context: CreditContext) -> CreditResult:
        advantages = self.trajectory_advantages(batch)
        stats = {"rloo/advantage_abs_mean": float(advantages.abs().mean()) if advantages.numel() else 0.0}
        return CreditResult(
            broadcast_to_tokens(advantages, batch.trajectory_index, batch.response_mask),
            stats,
            trajectory_values={"advantage": advantages},
        )
