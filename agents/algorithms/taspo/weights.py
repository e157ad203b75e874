"""TASPO credit: action-level PI support turned into bounded, mean-preserving weights.

Action support of turn t, from the privileged log-prob shift Δ of its response tokens and
the token span [a, b) of its executable action (L = b − a tokens):

    s_t = (1 / L) · Σ_{j ∈ [a, b), |Δ_j| ≥ κ} Δ_j

(tokens whose shift is below the margin κ count as zero, the sum is still divided by the
full action length L). Over the trajectory's *aligned* turns 𝒜 (those with supported PI):

    d_t = sign(A_i) · (s_t − mean_{u∈𝒜} s_u),    w_t = 1 + ε_w · d_t / max_{u∈𝒜} |d_u|

and w_t = 1 for unaligned turns. Hence mean_t w_t = 1 exactly (the d_t sum to 0), every
w_t ∈ [1 − ε_w, 1 + ε_w] (positive for ε_w < 1), for A_i > 0 more support gets more credit
and for A_i < 0 more support gets a smaller penalty (w_t·A_i closer to 0). If A_i = 0, fewer
than two turns are aligned, or all d_t are 0, every weight is 1 (plain GRPO). The token
advantage is w_t · A_i on every response token of turn t; the GRPO loss is unchanged.

Example:
    >>> round(action_support(torch.tensor([9.0, 0.4, 0.01, -0.2]), 1, 4, kappa=0.05), 6)  # (0.4 - 0.2) / 3
    0.066667
    >>> taspo_weights(torch.tensor([0.3, 0.1, 0.2]), torch.tensor([True, True, True]), 1.0, epsilon=0.5)
    tensor([1.5000, 0.5000, 1.0000])
"""

from __future__ import annotations

import torch


def action_support(shift: torch.Tensor, token_start: int, token_end: int, *, kappa: float) -> float:
    """s_t: the κ-filtered Δ summed over the action span, divided by the span length (0 if empty)."""
    if not 0 <= token_start <= token_end <= shift.shape[-1]:
        raise ValueError(f"action span [{token_start}, {token_end}) is outside a response of {shift.shape[-1]} tokens")
    length = token_end - token_start
    if length == 0:
        return 0.0
    span = shift[token_start:token_end].double()
    return float(torch.where(span.abs() >= kappa, span, torch.zeros_like(span)).sum() / length)


def token_support(shift: torch.Tensor, *, kappa: float) -> torch.Tensor:
    """Token-level ablation: each token's own κ-filtered Δ."""
    return torch.where(shift.abs() >= kappa, shift, torch.zeros_like(shift))


def taspo_weights(support: torch.Tensor, aligned: torch.Tensor, advantage: float, *, epsilon: float) -> torch.Tensor:
    """w over one trajectory's units (turns, or tokens in the ablation); see the module docstring.

    Args:
        support: (n,) support s of each unit.
        aligned: (n,) bool, whether the unit had aligned PI.
        advantage: The trajectory's A_i.
        epsilon: ε_w ∈ [0, 1).
    """
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must be in [0, 1) so weights stay positive, got {epsilon}")
    if support.shape != aligned.shape:
        raise ValueError(f"support {tuple(support.shape)} and aligned {tuple(aligned.shape)} differ in shape")
    weights = torch.ones(support.shape, dtype=torch.float64)
    aligned = aligned.bool()
    if advantage == 0 or int(aligned.sum()) < 2:
        return weights.to(support.dtype if support.is_floating_point() else torch.float32)
    values = support[aligned].double()
    direction = 1.0 if advantage > 0 else -1.0
    deviation = direction * (values - values.mean())
    scale = deviation.abs().max()
    if scale > 0:
        weights[aligned] = 1.0 + epsilon * deviation / scale
    return weights.to(support.dtype if support.is_floating_point() else torch.float32)


def trajectory_row_weights(
    shifts: list[torch.Tensor],
    action_spans: list[tuple[int, int]],
    advantage: float,
    *,
    kappa: float,
    epsilon: float,
    level: str = "action",
) -> list[torch.Tensor]:
    """Weights of one trajectory's aligned rows (turns), each a vector over the row's tokens.

    Args:
        shifts: Per aligned row, Δ over its response tokens (length = the row's response length).
        action_spans: Per aligned row, ``(start, end)`` token span of the action (negative: none,
            support 0).
        advantage: The trajectory's A_i.
        kappa: κ, the margin below which a token's Δ counts as 0.
        epsilon: ε_w.
        level: ``"action"``: one weight per row from :func:`action_support`, repeated over its
            tokens; ``"token"``: per-token weights from :func:`token_support`, all the
            trajectory's aligned tokens taken as one set of units.

    Example:
        >>> rows = trajectory_row_weights([torch.tensor([0.0, 0.4]), torch.tensor([0.2, 0.0, 0.0])],
        ...                               [(1, 2), (0, 1)], 1.0, kappa=0.05, epsilon=0.5)
        >>> [row.tolist() for row in rows]   # supports 0.4 and 0.2: d = ±0.1
        [[1.5, 1.5], [0.5, 0.5, 0.5]]
    """
    if len(shifts) != len(action_spans):
        raise ValueError(f"got {len(shifts)} rows of shifts and {len(action_spans)} action spans")
    if level == "action":
        support = torch.tensor(
            [
                action_support(shift, max(start, 0), max(end, 0), kappa=kappa)
                for shift, (start, end) in zip(shifts, action_spans, strict=True)
            ],
            dtype=torch.float64,
        )
        turn_weights = taspo_weights(support, torch.ones(len(shifts), dtype=torch.bool), advantage, epsilon=epsilon)
        return [torch.full((len(shift),), float(weight)) for shift, weight in zip(shifts, turn_weights, strict=True)]
    if level != "token":
        raise ValueError(f"level must be 'action' or 'token', got {level!r}")
    pieces = [token_support(shift, kappa=kappa) for shift in shifts]
    flat = torch.cat(pieces).double() if pieces else torch.zeros(0, dtype=torch.float64)
    token_weights = taspo_weights(flat, torch.ones(len(flat), dtype=torch.bool), advantage, epsilon=epsilon)
    return [part.float() for part in torch.split(token_weights, [len(piece) for piece in pieces])]


def weighted_token_advantages(
    row_advantages: torch.Tensor, weights: torch.Tensor, response_mask: torch.Tensor
) -> torch.Tensor:
    """``[B, T]`` token advantages w · A_i: each row's trajectory advantage times its token weights, 0 on padding.

    >>> weighted_token_advantages(torch.tensor([2.0, -1.0]), torch.tensor([[1.5, 1.5], [0.5, 1.0]]),
    ...                           torch.tensor([[1, 0], [1, 1]]))
    tensor([[ 3.0000,  0.0000],
            [-0.5000, -1.0000]])
    """
    values = row_advantages[:, None].float() * weights.float()
    return torch.where(response_mask.bool(), values, torch.zeros_like(values))


def weight_stats(weights: torch.Tensor) -> dict[str, float]:
    """Spread of a set of weights: min, max and standard deviation."""
    weights = weights.double()
    return {
        "weight_min": float(weights.min()),
        "weight_max": float(weights.max()),
        "weight_std": float(weights.std(unbiased=False)),
    }
