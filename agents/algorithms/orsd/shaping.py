"""ORSD credit: additive token-level shaping of the GRPO advantage.

With the selected rubric bundle as PI and Δ_{i,t} the privileged log-prob shift of token t
in trajectory i (see :mod:`agents.algorithms.privileged.shift`),

    A_{i,t} = A_i + λ · clip(Δ̃_{i,t}, −c, c)

on every response token, where Δ̃ is Δ itself (``normalize="none"``), Δ divided by its
standard deviation over the trajectory's response tokens (``"std"``, sign kept), or
standardised within the trajectory (``"mean_std"``). Padding stays 0. Groups without a
selected rubric have Δ = 0 and thus keep A_i.

Example:
    >>> A = torch.tensor([1.0, -1.0])
    >>> delta = torch.tensor([[0.5, 3.0], [-2.0, 0.0]])
    >>> mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    >>> orsd_token_advantages(A, delta, mask, torch.tensor([0, 1]), coef=0.5, clip=1.0)
    tensor([[ 1.2500,  1.5000],
            [-1.5000,  0.0000]])
"""

from __future__ import annotations

import typing
from typing import Literal

import torch

ShiftNormalization = Literal["none", "std", "mean_std"]
SHIFT_NORMALIZATIONS: tuple[str, ...] = typing.get_args(ShiftNormalization)


def normalize_shift(
    shift: torch.Tensor, mask: torch.Tensor, trajectory_ids: torch.Tensor, mode: str = "none", eps: float = 1e-6
) -> torch.Tensor:
    """Δ normalised within each trajectory over its masked tokens (rows sharing an id).

    ``std``: Δ / (σ + eps); ``mean_std``: (Δ − μ) / (σ + eps), with the population μ, σ of the
    trajectory's masked Δ. Masked-out entries come back as 0.
    """
    if mode not in SHIFT_NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {SHIFT_NORMALIZATIONS}, got {mode!r}")
    if mode == "none":
        return torch.where(mask.bool(), shift, torch.zeros_like(shift))
    mask = mask.to(shift.dtype)
    out = torch.zeros_like(shift)
    for trajectory in torch.unique(trajectory_ids):
        rows = trajectory_ids == trajectory
        values, weights = shift[rows], mask[rows]
        count = weights.sum().clamp_min(1.0)
        mean = (values * weights).sum() / count
        std = (((values - mean) ** 2) * weights).sum().div(count).sqrt()
        centred = values - mean if mode == "mean_std" else values
        scale = std + eps
        out[rows] = (centred / scale if scale > 0 else torch.zeros_like(values)) * weights
    return out


def orsd_token_advantages(
    advantages: torch.Tensor,
    shift: torch.Tensor,
    mask: torch.Tensor,
    trajectory_ids: torch.Tensor,
    *,
    coef: float,
    clip: float,
    normalize: str = "none",
) -> torch.Tensor:
    """A_i + λ·clip(Δ̃, −c, c) per token (rows = turns, columns = response tokens).

    Args:
        advantages: (rows,) trajectory advantage A_i of each row's trajectory.
        shift: (rows, tokens) privileged log-prob shift Δ (0 where no PI).
        mask: (rows, tokens) 1 on response tokens, 0 on padding.
        trajectory_ids: (rows,) which trajectory each row (turn) belongs to.
        coef: λ ≥ 0. clip: c > 0. normalize: see :func:`normalize_shift`.
    """
    if coef < 0 or clip <= 0:
        raise ValueError(f"need coef >= 0 and clip > 0, got coef={coef}, clip={clip}")
    shaping = coef * normalize_shift(shift, mask, trajectory_ids, normalize).clamp(-clip, clip)
    token_advantages = advantages[:, None].to(shift.dtype) + shaping
    return torch.where(mask.bool(), token_advantages, torch.zeros_like(token_advantages))


def shaping_stats(advantages: torch.Tensor, token_advantages: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """Mean |shaping term| and mean |A_i| over response tokens, and their ratio."""
    mask = mask.to(token_advantages.dtype)
    count = mask.sum().clamp_min(1.0)
    shaping = ((token_advantages - advantages[:, None]) * mask).abs().sum() / count
    base = (advantages[:, None].abs() * mask).sum() / count
    return {
        "shaping_abs_mean": float(shaping),
        "advantage_abs_mean": float(base),
        "shaping_to_advantage": float(shaping / base) if base > 0 else 0.0,
    }
