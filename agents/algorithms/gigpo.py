"""GiGPO credit (Feng et al., 2025, arXiv 2505.10978; verl-agent): episode- plus step-level groups.

Two levels of relative advantage, added per turn:

* **Episode level** (Eq. 3): GRPO's advantage of the trajectory, ``A^E_i`` (group-normalised
  outcome R_i with ``config.scale_rewards`` and ``config.advantage_eps``, per trajectory).
* **Step level** (Eqs. 5–7): every turn ``t`` of trajectory ``i`` has the discounted return
  from its state on,

      G_{i,t} = Σ_{k ≥ t} γ^{k − t} · r_{i,k}        (r: the turn rewards, penalties included),

  and turns of one episode group whose *anchor state* is the same form a step group S (across
  the group's trajectories, and also *within* one trajectory when it comes back to a state: each
  visit is a member with its own return). Within S,

      A^S_{i,t} = (G_{i,t} − mean_S G) / (std_S G + eps)      step_scale="group"
      A^S_{i,t} =  G_{i,t} − mean_S G                         step_scale="none"

  with the unbiased std; a turn alone in its step group gets A^S = 0.
* **Joint** (Eq. 8): ``A_{i,t} = A^E_i + ω · A^S_{i,t}`` on every response token of the turn.

The anchor state of a turn is what the env showed when the agent acted (``anchor="observation"``,
as verl-agent; ``"prompt"``: the whole prompt, history included). Anchors match exactly
(``similarity_threshold=1``) or, below 1, by ``difflib.SequenceMatcher`` ratio ≥ threshold to a
step group's first member (greedy, in batch order, without difflib's junk heuristic:
verl-agent's similarity option).

A turn's reward r is the one the collector recorded (env reward minus the invalid-action
penalty), so with γ = 1 the return from the first turn is the outcome R_i GRPO normalises. One
difference from verl-agent, on purpose: the episode level normalises over trajectories (the
paper's Eq. 3); verl-agent's default computes its mean and std over turns, which weights each
trajectory by its length.

Example:
    >>> discounted_returns(torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0, 0, 0]), torch.tensor([0, 1, 2]), gamma=0.5)
    tensor([0.2500, 0.5000, 1.0000])
    >>> anchor_groups(["room", "desk", "room", "room"], [0, 0, 0, 1]).tolist()
    [0, 1, 0, 2]
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import torch

from agentenvs.core.checks import Bounds, Checked
from agents.algorithms.base import CreditContext, CreditResult, register_credit_rule
from agents.algorithms.grpo import GRPOCredit, group_mean_std
from agents.rollout import RolloutBatch

Anchor = Literal["observation", "prompt"]
ANCHORS: tuple[str, ...] = typing.get_args(Anchor)
StepScale = Literal["group", "none"]
STEP_SCALES: tuple[str, ...] = typing.get_args(StepScale)


def discounted_returns(
    rewards: torch.Tensor, trajectory_index: torch.Tensor, turn_index: torch.Tensor, *, gamma: float
) -> torch.Tensor:
    """``[B]`` G_{i,t} = Σ_{k≥t} γ^{k−t} r_{i,k} of every row (turn), rows in any order.

    Raises:
        ValueError: for γ outside [0, 1] or mismatched shapes.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if not rewards.shape == trajectory_index.shape == turn_index.shape or rewards.dim() != 1:
        raise ValueError(
            f"rewards {tuple(rewards.shape)}, trajectory_index {tuple(trajectory_index.shape)} and "
            f"turn_index {tuple(turn_index.shape)} must be equal 1-D"
        )
    returns = torch.zeros(rewards.shape, dtype=torch.float64)
    values = rewards.double()
    for trajectory in torch.unique(trajectory_index).tolist():
        rows = (trajectory_index == trajectory).nonzero().flatten()
        rows = rows[torch.argsort(turn_index[rows], descending=True)]  # last turn first
        running = 0.0
        for row in rows.tolist():
            running = float(values[row]) + gamma * running
            returns[row] = running
    return returns.float()


def anchor_groups(
    anchors: Sequence[str], group_ids: Sequence[int], *, similarity_threshold: float = 1.0
) -> torch.Tensor:
    """``[B]`` step-group id of every row: rows of one episode group with matching anchors share one.

    Ids count from 0 in order of first appearance. ``similarity_threshold`` = 1: exact match;
    in (0, 1): a row joins the first step group of its episode group whose first member's anchor
    has ``SequenceMatcher`` ratio ≥ the threshold with its own, else starts a new one.

    Raises:
        ValueError: for a threshold outside (0, 1] or mismatched lengths.
    """
    if not 0.0 < similarity_threshold <= 1.0:
        raise ValueError(f"similarity_threshold must be in (0, 1], got {similarity_threshold}")
    if len(anchors) != len(group_ids):
        raise ValueError(f"{len(anchors)} anchors but {len(group_ids)} group ids")
    ids: list[int] = []
    exact: dict[tuple[int, str], int] = {}
    clusters: dict[int, list[tuple[str, int]]] = {}  # episode group -> [(first member's anchor, step group)]
    for anchor, group in zip(anchors, group_ids, strict=True):
        if similarity_threshold >= 1.0:
            ids.append(exact.setdefault((int(group), anchor), len(exact)))
            continue
        members = clusters.setdefault(int(group), [])
        found = next(
            (
                step_group
                for first, step_group in members
                if difflib.SequenceMatcher(None, anchor, first, autojunk=False).ratio() >= similarity_threshold
            ),
            None,
        )
        if found is None:
            found = sum(len(known) for known in clusters.values())
            members.append((anchor, found))
        ids.append(found)
    return torch.tensor(ids, dtype=torch.long)


def step_advantages(
    returns: torch.Tensor, step_group_ids: torch.Tensor, *, scale: str = "group", eps: float = 1e-4
) -> torch.Tensor:
    """``[B]`` A^S: each return centred on its step group's mean, divided by its std + eps for ``"group"``.

    >>> step_advantages(torch.tensor([1.0, 0.0, 5.0]), torch.tensor([0, 0, 1]), scale="none")
    tensor([ 0.5000, -0.5000,  0.0000])
    """
    if scale not in STEP_SCALES:
        raise ValueError(f"step scale must be one of {STEP_SCALES}, got {scale!r}")
    mean, std = group_mean_std(returns, step_group_ids)
    centred = returns.float() - mean
    if scale == "none":
        return centred
    divisor = std + eps
    return torch.where(divisor > 0, centred / divisor.clamp_min(1e-30), torch.zeros_like(centred))


def gigpo_token_advantages(
    episode_advantages: torch.Tensor, step_advantage: torch.Tensor, response_mask: torch.Tensor, *, weight: float
) -> torch.Tensor:
    """``[B, T]`` A^E_i + ω·A^S_{i,t} on every response token of row (turn) t, 0 on padding.

    Args:
        episode_advantages: ``[B]`` each row's trajectory advantage A^E.
        step_advantage: ``[B]`` each row's step-level advantage A^S.
        response_mask: ``[B, T]`` 1 on response tokens.
        weight: ω ≥ 0.
    """
    values = (episode_advantages.float() + weight * step_advantage.float())[:, None].expand(response_mask.shape)
    return torch.where(response_mask.bool(), values, torch.zeros_like(values))


def step_group_stats(step_group_ids: torch.Tensor) -> dict[str, float]:
    """How much step-level comparison a batch offers: the share of turns in step groups of two or
    more (the only ones with A^S ≠ 0), the mean step-group size and the number of step groups."""
    if step_group_ids.numel() == 0:
        return {"nonsingleton_turn_fraction": 0.0, "step_group_size_mean": 0.0, "step_groups": 0.0}
    _, inverse, counts = torch.unique(step_group_ids, return_inverse=True, return_counts=True)
    return {
        "nonsingleton_turn_fraction": float((counts[inverse] > 1).float().mean()),
        "step_group_size_mean": float(counts.float().mean()),
        "step_groups": float(len(counts)),
    }


@dataclass(frozen=True)
class GiGPOOptions(Checked):
    """GiGPO knobs (``config.credit_options``); defaults are verl-agent's ALFWorld recipe."""

    gamma: Annotated[float, Bounds(0, 1)] = 0.95
    """γ: discount of the step-level returns."""
    step_weight: Annotated[float, Bounds(0)] = 1.0
    """ω: weight of the step-level advantage (verl-agent's ``step_advantage_w``; 0: GRPO)."""
    step_scale: StepScale = "group"
    """Step-level normalisation: ``group`` (÷ step-group std, verl-agent's ``mean_std_norm``) or
    ``none`` (centred only, ``mean_norm``)."""
    anchor: Anchor = "observation"
    """A turn's anchor state: ``observation`` (what the env showed) or ``prompt`` (the full prompt)."""
    similarity_threshold: Annotated[float, Bounds(0, 1, min_inclusive=False)] = 1.0
    """1: anchors match exactly; in (0, 1): by ``SequenceMatcher`` ratio at least this."""
    log_examples: Annotated[int, Bounds(0)] = 2
    """Step groups with unequal returns kept per step as readable examples (0: none)."""


@register_credit_rule("gigpo")
class GiGPOCredit(GRPOCredit):
    """GRPO's episode advantage plus ω times the step-level advantage of the turn's anchor group.

    The result's ``stats`` (``gigpo/*``): the share of turns in non-singleton step groups, mean
    step-group size, mean |ω·A^S| and |A^E| over response tokens and their ratio. Per row it
    reports (``row_info``) its step group (``anchor``), return G and A^S; per trajectory A^E. Its
    ``examples``: the first ``log_examples`` step groups whose members' returns differ (the anchor
    state, and each member's trajectory, turn, action, G and A^S).
    """

    options_type = GiGPOOptions
    opts: GiGPOOptions

    def anchors(self, batch: RolloutBatch) -> list[str]:
        """Each row's anchor state (see ``GiGPOOptions.anchor``)."""
        if self.opts.anchor == "prompt":
            return list(batch.prompts)
        trajectories = batch.trajectories
        return [
            trajectories[trajectory].turns[turn].observation
            for trajectory, turn in zip(batch.trajectory_index.tolist(), batch.turn_index.tolist(), strict=True)
        ]

    def step_group_examples(
        self, batch: RolloutBatch, step_groups: torch.Tensor, returns: torch.Tensor, step: torch.Tensor
    ) -> list[dict[str, Any]]:
        """Readable records of the first ``log_examples`` step groups with unequal returns."""
        examples: list[dict[str, Any]] = []
        anchors = self.anchors(batch)
        for group in dict.fromkeys(step_groups.tolist()):
            if len(examples) >= self.opts.log_examples:
                break
            rows = (step_groups == group).nonzero().flatten().tolist()
            if len({round(float(returns[row]), 6) for row in rows}) < 2:
                continue
            members = []
            for row in rows:
                trajectory, turn = int(batch.trajectory_index[row]), int(batch.turn_index[row])
                action = batch.trajectories[trajectory].turns[turn].action
                members.append(
                    f"trajectory {trajectory} turn {turn}: {action!r} -> G {float(returns[row]):.3f}, "
                    f"A^S {float(step[row]):+.3f}"
                )
            first = batch.trajectories[int(batch.trajectory_index[rows[0]])]
            examples.append(
                {
                    "task_id": first.task_id,
                    "group_id": int(batch.group_ids[rows[0]]),
                    "anchor": anchors[rows[0]][:600],
                    "members": "\n".join(members),
                }
            )
        return examples

    def compute(self, batch: RolloutBatch, context: CreditContext) -> CreditResult:
        opts = self.opts
        trajectory_advantages = self.trajectory_advantages(batch)
        episode = trajectory_advantages[batch.trajectory_index]
        returns = discounted_returns(batch.turn_rewards, batch.trajectory_index, batch.turn_index, gamma=opts.gamma)
        step_groups = anchor_groups(
            self.anchors(batch), batch.group_ids.tolist(), similarity_threshold=opts.similarity_threshold
        )
        step = step_advantages(returns, step_groups, scale=opts.step_scale, eps=self.eps)
        advantages = gigpo_token_advantages(episode, step, batch.response_mask, weight=opts.step_weight)
        mask = batch.response_mask.float()
        tokens = mask.sum().clamp_min(1.0)
        step_abs = float((opts.step_weight * step.abs()[:, None] * mask).sum() / tokens)
        episode_abs = float((episode.abs()[:, None] * mask).sum() / tokens)
        stats = {
            **{f"gigpo/{key}": value for key, value in step_group_stats(step_groups).items()},
            "gigpo/step_advantage_abs_mean": step_abs,
            "gigpo/episode_advantage_abs_mean": episode_abs,
            "gigpo/step_to_episode": step_abs / episode_abs if episode_abs > 0 else 0.0,
        }
        return CreditResult(
            advantages,
            stats,
            examples=self.step_group_examples(batch, step_groups, returns, step),
            row_info={"anchor": step_groups.tolist(), "step_return": returns.tolist(), "step_advantage": step.tolist()},
            trajectory_values={"advantage": trajectory_advantages},
        )
