"""The policy-gradient loss: PPO-clipped token ratios, a KL penalty, and loss aggregation.

Per response token t of row i, with ratio ``r = exp(logp − logp_old)`` and advantage A:

    ℓ_it = −min(r·A, clip(r, 1 − ε_low, 1 + ε_high)·A) + β·KL_it
    KL_it = exp(ref − logp) − (ref − logp) − 1          (the k3 estimator, ≥ 0)

Aggregation (``loss_type``, TRL's names), with mask m, rows B, row lengths |o_i|:

    grpo:     (1/B) Σ_i (1/|o_i|) Σ_t ℓ_it
    dapo:     Σ_it ℓ_it / Σ_it m_it                       (token-level mean)
    dr_grpo:  Σ_it ℓ_it / (B · L_max)                      (L_max = max response length)

Micro-batching: :func:`aggregate_loss` takes the *whole batch's* row count and
token count, so summing it over micro-batches gives the full-batch loss exactly.

Example:
    >>> logp = torch.tensor([[0.0, 0.0]]); adv = torch.tensor([[1.0, -1.0]])
    >>> clipped_surrogate(logp, logp, adv, epsilon=0.2, epsilon_high=0.2)
    tensor([[-1.,  1.]])
"""

from __future__ import annotations

import typing
from typing import Literal

import torch

LossType = Literal["grpo", "dapo", "dr_grpo"]
LOSS_TYPES: tuple[str, ...] = typing.get_args(LossType)


def clipped_surrogate(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    *,
    epsilon: float,
    epsilon_high: float,
) -> torch.Tensor:
    """Per-token ``−min(r·A, clip(r, 1 − ε, 1 + ε_high)·A)``."""
    ratio = torch.exp(logprobs - old_logprobs)
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon_high)
    return -torch.minimum(ratio * advantages, clipped * advantages)


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token low-variance KL estimate ``exp(ref − logp) − (ref − logp) − 1``.

    >>> k3_kl(torch.tensor([0.0]), torch.tensor([0.0]))
    tensor([0.])
    """
    delta = ref_logprobs - logprobs
    return torch.exp(delta) - delta - 1.0


def aggregate_loss(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    *,
    loss_type: str,
    total_rows: int,
    total_tokens: int,
    max_length: int,
) -> torch.Tensor:
    """This micro-batch's share of the batch loss (see the module docstring).

    Args:
        per_token: ``[b, T]`` token losses.
        mask: ``[b, T]`` 1 on real response tokens.
        loss_type: ``"grpo"``, ``"dapo"`` or ``"dr_grpo"``.
        total_rows: Rows B in the whole batch.
        total_tokens: Real tokens in the whole batch.
        max_length: L_max for ``dr_grpo``.
    """
    mask = mask.to(per_token.dtype)
    masked = per_token * mask
    if loss_type == "grpo":
        return (masked.sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).sum() / max(total_rows, 1)
    if loss_type == "dapo":
        return masked.sum() / max(total_tokens, 1)
    if loss_type == "dr_grpo":
        return masked.sum() / (max(total_rows, 1) * max_length)
    raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    beta: float = 0.0,
    ref_logprobs: torch.Tensor | None = None,
    loss_type: str = "dapo",
    total_rows: int | None = None,
    total_tokens: int | None = None,
    max_length: int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The clipped policy loss (+ β·KL) of a micro-batch, and diagnostics.

    Totals default to this micro-batch's own (one micro-batch = the whole batch).

    Returns:
        The scalar loss to backpropagate and ``{"clip_fraction", "kl", "ratio_mean"}``.
    """
    epsilon_high = epsilon if epsilon_high is None else epsilon_high
    mask_f = mask.to(logprobs.dtype)
    per_token = clipped_surrogate(logprobs, old_logprobs, advantages, epsilon=epsilon, epsilon_high=epsilon_high)
    kl = None
    if beta != 0.0:
        if ref_logprobs is None:
            raise ValueError("beta != 0 needs ref_logprobs")
        kl = k3_kl(logprobs, ref_logprobs)
        per_token = per_token + beta * kl
    loss = aggregate_loss(
        per_token,
        mask,
        loss_type=loss_type,
        total_rows=len(mask) if total_rows is None else total_rows,
        total_tokens=int(mask.sum()) if total_tokens is None else total_tokens,
        max_length=mask.shape[1] if max_length is None else max_length,
    )
    with torch.no_grad():
        tokens = mask_f.sum().clamp(min=1.0)
        ratio = torch.exp(logprobs - old_logprobs)
        clipped = ((ratio < 1.0 - epsilon) & (advantages < 0)) | ((ratio > 1.0 + epsilon_high) & (advantages > 0))
        stats = {
            "clip_fraction": float((clipped.to(mask_f.dtype) * mask_f).sum() / tokens),
            "ratio_mean": float((ratio * mask_f).sum() / tokens),
            "kl": float((kl * mask_f).sum() / tokens) if kl is not None else 0.0,
        }
    return loss, stats
