"""VinePPO credit (Kazemnejad et al., 2024, arXiv 2410.01679): Monte Carlo step values from the current policy.

For turn ``t`` of a trajectory, with ``s_t`` the env state before it (restored from the
collector's snapshot, or replayed from reset), ``r_t`` its reward (penalty included) and
``G_k(s)`` the return of the k-th of K continuations of the *current* policy from ``s`` (the
same prompt history the policy saw there):

    V̂(s)     = (1/K) · Σ_k G_k(s),          V̂(s) = 0 once the episode is over
    A^MC_t   = r_t + V̂(s_{t+1}) − V̂(s_t)

(:mod:`agents.reference.values`; identical states share one estimate, so a group's first
turns are one state played K times). Each response token of turn ``t`` gets

    A_t = (1 − λ) · A^MC_t + λ · A^GRPO_i          on estimated turns
    A_t = A^GRPO_i                                  on turns not estimated (``turns``)

with ``A^GRPO_i`` the trajectory's GRPO advantage (``config.scale_rewards``) and λ the option
``episode_mix`` (0: VinePPO). The losses are the same as every rule's. VinePPO's advantage is
unnormalised (it is in reward units); with λ > 0 pick ``scale_rewards="none"`` to mix like
with like. Continuations cost K × (distinct states) extra plays of the policy per step.

Example:
    >>> vine_token_advantages(torch.tensor([0.5, -0.5]), torch.tensor([1.0, 1.0]), torch.tensor([True, False]),
    ...                       torch.tensor([[1, 1], [1, 0]]), episode_mix=0.5)
    tensor([[0.7500, 0.7500],
            [1.0000, 0.0000]])
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Annotated, Literal

import torch

from agentenvs.core.checks import Bounds, Checked
from agents.algorithms.base import CreditContext, CreditResult, register_credit_rule
from agents.algorithms.grpo import GRPOCredit
from agents.reference.values import step_values
from agents.rollout import RolloutBatch

Turns = Literal["all", "first", "valid"]
TURNS: tuple[str, ...] = typing.get_args(Turns)
States = Literal["auto", "snapshot", "replay"]
STATES: tuple[str, ...] = typing.get_args(States)


def vine_token_advantages(
    step_advantage: torch.Tensor,
    episode_advantage: torch.Tensor,
    estimated: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    episode_mix: float,
) -> torch.Tensor:
    """``[B, T]`` (1 − λ)·A^MC_t + λ·A^GRPO_i on estimated rows, A^GRPO_i on the others, 0 on padding.

    Args:
        step_advantage: ``[B]`` each row's A^MC.
        episode_advantage: ``[B]`` each row's trajectory advantage.
        estimated: ``[B]`` bool, rows with an A^MC.
        response_mask: ``[B, T]`` 1 on response tokens.
        episode_mix: λ in [0, 1].
    """
    if not 0.0 <= episode_mix <= 1.0:
        raise ValueError(f"episode_mix must be in [0, 1], got {episode_mix}")
    mixed = (1.0 - episode_mix) * step_advantage.float() + episode_mix * episode_advantage.float()
    values = torch.where(estimated.bool(), mixed, episode_advantage.float())[:, None].expand(response_mask.shape)
    return torch.where(response_mask.bool(), values, torch.zeros_like(values))


def chosen_turns(batch: RolloutBatch, turns: str) -> torch.Tensor:
    """``[B]`` bool: the rows whose A^MC is estimated (``all``, each trajectory's ``first`` turn, or ``valid`` ones)."""
    if turns == "all":
        return torch.ones(len(batch), dtype=torch.bool)
    if turns == "first":
        return batch.turn_index == 0
    if turns == "valid":
        return batch.turn_valid.bool().clone()
    raise ValueError(f"turns must be one of {TURNS}, got {turns!r}")


@dataclass(frozen=True)
class VineOptions(Checked):
    """VinePPO knobs (``config.credit_options``)."""

    continuations: Annotated[int, Bounds(1)] = 4
    """K: continuations of the policy per distinct state (VinePPO uses 9 on math; cost grows with K)."""
    episode_mix: Annotated[float, Bounds(0, 1)] = 0.0
    """λ: share of the trajectory's GRPO advantage mixed into A^MC (0: pure VinePPO)."""
    turns: Turns = "all"
    """Which turns get A^MC: ``all``, each trajectory's ``first`` turn, or the ``valid`` ones (the
    others keep the GRPO advantage)."""
    states: States = "auto"
    """How turn states come back: ``snapshot`` (the collector records ``env.unwrapped.snapshot()``
    every turn; the env must have it), ``replay`` (reset with the trajectory's seed and step its
    earlier outputs; any deterministic env) or ``auto`` (snapshots where the env has them)."""


@register_credit_rule("vine")
class VineCredit(GRPOCredit):
    """Per-turn Monte Carlo advantages from K continuations of the current policy (VinePPO).

    ``stats`` (``vine/*``): distinct states and plays, the share of turns estimated, mean |A^MC|
    and mean V̂ of the first states. Per row (``row_info``) V̂(s_t), V̂(s_{t+1}) and A^MC (None
    where not estimated); per trajectory the GRPO advantage.
    """

    options_type = VineOptions
    opts: VineOptions
    needs_continuations = True

    def wants_snapshots(self, available: bool) -> bool:
        if self.opts.states == "snapshot" and not available:
            raise ValueError(
                "credit_options states='snapshot', but the env has no snapshot()/restore(); use 'replay' or 'auto'"
            )
        return self.opts.states == "snapshot" or (self.opts.states == "auto" and available)

    def compute(self, batch: RolloutBatch, context: CreditContext) -> CreditResult:
        opts = self.opts
        player = context.require_continuations()
        trajectory_advantages = self.trajectory_advantages(batch)
        episode = trajectory_advantages[batch.trajectory_index]
        chosen = chosen_turns(batch, opts.turns)
        values = step_values(batch, player, samples=opts.continuations, rows=chosen)
        advantages = vine_token_advantages(
            values.advantages, episode, values.estimated, batch.response_mask, episode_mix=opts.episode_mix
        )
        estimated = values.estimated
        first = estimated & (batch.turn_index == 0)
        stats = {
            "vine/states": float(values.states),
            "vine/plays": float(values.plays),
            "vine/estimated_turn_fraction": float(estimated.float().mean()) if len(batch) else 0.0,
            "vine/step_advantage_abs_mean": float(values.advantages[estimated].abs().mean())
            if estimated.any()
            else 0.0,
            "vine/first_value_mean": float(values.value_before[first].mean()) if first.any() else 0.0,
        }

        def shown(tensor: torch.Tensor) -> list[float | None]:
            return [
                None if math.isnan(v) or not e else v for v, e in zip(tensor.tolist(), estimated.tolist(), strict=True)
            ]

        return CreditResult(
            advantages,
            stats,
            row_info={
                "value_before": shown(values.value_before),
                "value_after": shown(values.value_after),
                "step_advantage": shown(values.advantages),
            },
            trajectory_values={"advantage": trajectory_advantages},
        )
