"""GRPO credit: group-normalised trajectory outcomes, broadcast to every response token.

For trajectory ``i`` of group ``g`` with outcome ``R_i`` (Shao et al., 2024):

    A_i = (R_i − mean_g(R)) / (std_g(R) + eps)        scale_rewards="group"
    A_i = (R_i − mean_g(R)) / (std(R) + eps)          scale_rewards="batch"
    A_i =  R_i − mean_g(R)                            scale_rewards="none"  (Dr. GRPO)

``std`` is the unbiased standard deviation (as in TRL); a group of one has
advantage 0. Every response token of every turn of trajectory ``i`` gets ``A_i``.

Example:
    >>> grpo_advantages(torch.tensor([1.0, 0.0, 3.0, 3.0]), torch.tensor([0, 0, 1, 1]), scale_rewards="none")
    tensor([ 0.5000, -0.5000,  0.0000,  0.0000])
"""

from __future__ import annotations

import typing
from typing import Any, Literal

import torch

from agentenvs.core.checks import check_value
from agents.algorithms.base import (
    CreditConfig,
    CreditContext,
    CreditResult,
    CreditRule,
    broadcast_to_tokens,
    register_credit_rule,
)
from agents.rollout import RolloutBatch

ScaleRewards = Literal["group", "batch", "none"]
SCALE_REWARDS: tuple[str, ...] = typing.get_args(ScaleRewards)


def check_scale_rewards(owner: str, scale_rewards: str) -> str:
    """``scale_rewards`` if it is one of :data:`SCALE_REWARDS`, else the error naming ``owner`` (the one
    check of it: ``GRPOConfig`` declares the field as :data:`ScaleRewards`)."""
    return check_value(owner, "scale_rewards", scale_rewards, ScaleRewards)


def group_mean_std(values: torch.Tensor, group_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-element mean and unbiased std of the element's group (std 0 for groups of one).

    >>> group_mean_std(torch.tensor([1.0, 3.0, 5.0]), torch.tensor([0, 0, 1]))
    (tensor([2., 2., 5.]), tensor([1.4142, 1.4142, 0.0000]))
    """
    values = values.float()
    _, inverse, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    sums = torch.zeros(len(counts)).index_add_(0, inverse, values)
    means = sums / counts
    squares = torch.zeros(len(counts)).index_add_(0, inverse, (values - means[inverse]) ** 2)
    variances = torch.where(counts > 1, squares / (counts - 1).clamp(min=1), torch.zeros_like(squares))
    return means[inverse], variances.sqrt()[inverse]


def grpo_advantages(
    rewards: torch.Tensor, group_ids: torch.Tensor, *, scale_rewards: str = "group", eps: float = 1e-4
) -> torch.Tensor:
    """Per-trajectory GRPO advantages (see the module docstring for the formula).

    Args:
        rewards: ``[N]`` trajectory outcomes R.
        group_ids: ``[N]`` group of each trajectory.
        scale_rewards: ``"group"``, ``"batch"`` or ``"none"`` (TRL's names).
        eps: Added to the std.
    """
    check_scale_rewards("grpo_advantages", scale_rewards)
    if rewards.shape != group_ids.shape or rewards.dim() != 1:
        raise ValueError(f"rewards {tuple(rewards.shape)} and group_ids {tuple(group_ids.shape)} must be equal 1-D")
    mean, std = group_mean_std(rewards, group_ids)
    centred = rewards.float() - mean
    if scale_rewards == "group":
        return centred / (std + eps)
    if scale_rewards == "batch":
        batch_std = rewards.float().std() if rewards.numel() > 1 else torch.tensor(0.0)
        return centred / (batch_std + eps)
    return centred


@register_credit_rule("grpo")
class GRPOCredit(CreditRule):
    """Group-normalised outcome advantages (``config.scale_rewards``, ``config.advantage_eps``).

    ORSD and TASPO extend this rule: they start from :meth:`trajectory_advantages` and reshape
    them token by token.
    """

    def __init__(self, config: CreditConfig | None = None, opts: Any = None) -> None:
        super().__init__(config, opts)
        # GRPOConfig has checked both; grpo_advantages checks scale_rewards for direct callers.
        self.scale_rewards: str = "group" if config is None else config.scale_rewards
        self.eps = 1e-4 if config is None else float(config.advantage_eps)

    def trajectory_advantages(self, batch: RolloutBatch) -> torch.Tensor:
        """``[N]`` GRPO advantage A_i of every trajectory in the batch."""
        return grpo_advantages(
            batch.trajectory_rewards, batch.trajectory_group_ids, scale_rewards=self.scale_rewards, eps=self.eps
        )

    def compute(self, batch: RolloutBatch, context: CreditContext) -> CreditResult:
        advantages = self.trajectory_advantages(batch)
        return CreditResult(
            broadcast_to_tokens(advantages, batch.trajectory_index, batch.response_mask),
            trajectory_values={"advantage": advantages},
        )
