"""TASPO credit: aligned PI from successful siblings → bounded, mean-1 action weights on A_i.

Per target trajectory i (with GRPO advantage A_i ≠ 0): an analyzer turns the group's other
successful trajectories into conditional guidance (:mod:`agents.algorithms.taspo.guidance`); only
items the target's own path supports at a turn are kept as that turn's PI
(:mod:`agents.algorithms.taspo.alignment`); the PI's log-prob shift Δ on the turn's executable
action tokens gives its support s_t, and

    d_t = sign(A_i) · (s_t − mean_aligned s),   w_t = 1 + ε_w · d_t / max |d|,
    A_{i,t,k} = w_t · A_i   on every response token k of turn t

(:mod:`agents.algorithms.taspo.weights`; unaligned turns have w_t = 1, so mean_t w_t = 1 exactly
and w_t ∈ [1 − ε_w, 1 + ε_w]). A_i = 0 or fewer than two aligned turns → all weights 1.
The verified outcome sets direction and average scale; PI only redistributes credit.

Ablations (``config.credit_options``): ``support_level="token"`` (per-token weights from the
token's own Δ), ``pi_source="unaligned"`` (every guidance item on every turn) and
``pi_source="raw_trajectory"`` (a successful sibling's actions verbatim as PI).

Extension (not in the paper; option ``env_pi``, default ``"none"``): a turn's PI can be the env's
``info["privileged"]`` as it stood at that turn, instead of (``"replace"``: no guidance is
written, so targets without a successful sibling are covered too) or after (``"add"``) the
aligned guidance (:mod:`agents.algorithms.privileged.environment`). Only turns with an executed
action get it; the weights, bounds and fallbacks are the same.

Example:
    >>> TASPOOptions(epsilon_w=1.0)
    Traceback (most recent call last):
    ...
    ValueError: TASPOOptions.epsilon_w must be a finite number in [0, 1), got 1.0
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import torch

from agentenvs.core.checks import Bounds
from agentenvs.core.trajectory import Trajectory
from agents.algorithms.base import CreditContext, CreditResult, register_credit_rule
from agents.algorithms.grpo import GRPOCredit
from agents.algorithms.privileged.endpoints import CompleteFn
from agents.algorithms.privileged.environment import combine_privileged, env_privileged_rows
from agents.algorithms.privileged.options import PrivilegedOptions, policy_complete
from agents.algorithms.privileged.shift import privileged_logprob_shift
from agents.algorithms.taspo.alignment import AnchorMatch, align_guidance, render_guidance
from agents.algorithms.taspo.guidance import Analysis, lm_guidance, raw_trajectory_text, rule_based_guidance
from agents.algorithms.taspo.weights import trajectory_row_weights, weight_stats, weighted_token_advantages
from agents.rollout import RolloutBatch

Analyzer = Literal["rule", "policy", "endpoint"]
ANALYZERS: tuple[str, ...] = typing.get_args(Analyzer)
PISource = Literal["aligned", "unaligned", "raw_trajectory"]
PI_SOURCES: tuple[str, ...] = typing.get_args(PISource)
SupportLevel = Literal["action", "token"]
SUPPORT_LEVELS: tuple[str, ...] = typing.get_args(SupportLevel)


@dataclass(frozen=True)
class TASPOOptions(PrivilegedOptions):
    """TASPO knobs; every open choice of the paper is a field with a documented default.

    The fields shared with ORSD (placement, endpoint, scoring shortcuts, ``log_examples``:
    turn PIs kept per step) are those of :class:`PrivilegedOptions`.
    """

    analyzer: Analyzer = "rule"
    """Who writes guidance: ``rule`` (from successful siblings' actions/observations), ``policy``
    (the current policy) or ``endpoint`` (an OpenAI-compatible server)."""
    pi_source: PISource = "aligned"
    """PI per turn: ``aligned`` guidance, ``unaligned`` (all guidance everywhere; ablation) or
    ``raw_trajectory`` (a successful sibling's actions; ablation)."""
    support_level: SupportLevel = "action"
    """``action``: one support per turn from its action tokens; ``token``: per-token (ablation)."""
    kappa: Annotated[float, Bounds(0)] = 0.05
    """κ: token shifts with |Δ| below this count as 0 in the support."""
    epsilon_w: Annotated[float, Bounds(0, 1, max_inclusive=False)] = 0.5
    """ε_w: weights lie in [1 − ε_w, 1 + ε_w] (below 1, so weights stay positive)."""
    anchor_match: AnchorMatch = "all"
    """An item aligns when ``all`` (or ``any``) of its anchors were observed by that turn."""
    max_guidance_items: Annotated[int, Bounds(1)] = 24
    """Items an analyzer keeps per group."""
    max_pi_items: Annotated[int, Bounds(1)] = 6
    """Aligned items shown per turn."""
    show_evidence: bool = False
    """Append each item's evidence to the PI text."""
    include_self: bool = False
    """Let a successful target use its own trajectory as a PI source."""

    @property
    def endpoint_users(self) -> tuple[str, ...]:
        return ("analyzer",) if self.analyzer == "endpoint" else ()


@register_credit_rule("taspo")
class TASPOCredit(GRPOCredit):
    """w_t · A_i per token, w from aligned, action-level PI support.

    The result's ``stats`` hold PI coverage (trajectories with PI), aligned-turn fraction,
    weight spread, the mean |w·A − A| and the share of rows with env PI (``env_pi``); its
    ``examples`` a few turns' PI text.
    """

    options_type = TASPOOptions
    opts: TASPOOptions

    @property
    def reuses_prompt_caches(self) -> bool:
        return self.opts.reuse_prompt_cache

    def analyze(self, sources: list[Trajectory], context: CreditContext) -> Analysis:
        """Guidance items from the given successful trajectories."""
        opts = self.opts
        if opts.analyzer == "rule":
            return rule_based_guidance(sources, max_items=opts.max_guidance_items)
        if opts.analyzer == "endpoint":
            complete: CompleteFn = opts.endpoint()
        else:
            complete = policy_complete(context.require_policy(), greedy=True, max_new_tokens=opts.lm_max_new_tokens)
        return lm_guidance(sources, complete, max_items=opts.max_guidance_items)

    def turn_privileged(
        self, target: Trajectory, sources: list[Trajectory], context: CreditContext, cache: dict
    ) -> list[str | None]:
        """PI text per turn of ``target`` (None = unaligned)."""
        opts = self.opts
        valid = [bool(turn.valid and turn.action) for turn in target.turns]
        if not sources:
            return [None] * len(target.turns)
        if opts.pi_source == "raw_trajectory":
            raw = raw_trajectory_text(sources[0])
            return [raw if ok else None for ok in valid]
        key = tuple(id(source) for source in sources)
        if key not in cache:
            cache[key] = self.analyze(sources, context)
        analysis: Analysis = cache[key]
        if opts.pi_source == "unaligned":
            text = render_guidance(analysis.items, max_items=opts.max_pi_items, show_evidence=opts.show_evidence)
            return [text if ok else None for ok in valid]
        per_turn = align_guidance(analysis.items, target, match=opts.anchor_match)
        return [
            render_guidance(items, max_items=opts.max_pi_items, show_evidence=opts.show_evidence) for items in per_turn
        ]

    def compute(self, batch: RolloutBatch, context: CreditContext) -> CreditResult:
        opts = self.opts
        advantages = self.trajectory_advantages(batch)
        trajectories = batch.trajectories
        rows_of = batch.rows_by_trajectory()
        privileged: list[str | None] = [None] * len(batch)
        env_rows = (
            env_privileged_rows(batch, keys=opts.env_pi_keys, max_chars=opts.env_pi_max_chars)
            if opts.env_pi != "none"
            else None
        )
        cache: dict = {}
        offset, covered = 0, 0
        examples: list[dict[str, Any]] = []
        for group in batch.groups:
            wins = [t for t in group.trajectories if opts.succeeded(t)]
            for local, target in enumerate(group.trajectories):
                index = offset + local
                if float(advantages[index]) == 0.0:
                    continue
                sources = [t for t in wins if opts.include_self or t is not target]
                # env_pi="replace": the env's PI only, so no guidance is written at all.
                per_turn = (
                    self.turn_privileged(target, sources, context, cache)
                    if opts.env_pi != "replace"
                    else [None] * len(target.turns)
                )
                rows = rows_of[index]
                texts = [
                    per_turn[int(batch.turn_index[row])] if int(batch.turn_index[row]) < len(per_turn) else None
                    for row in rows
                ]
                if env_rows is not None:  # env PI only on turns with an executed action, like guidance
                    texts = [
                        combine_privileged(text, env_rows[row] if _acted(target, row, batch) else None, opts.env_pi)
                        for row, text in zip(rows, texts, strict=True)
                    ]
                # Fewer than two aligned turns → all weights 1: skip the scoring altogether.
                if sum(text is not None for text in texts) < 2:
                    continue
                covered += 1
                for row, text in zip(rows, texts, strict=True):
                    privileged[row] = text
                if len(examples) < opts.log_examples:
                    row, text = next((r, t) for r, t in zip(rows, texts, strict=True) if t is not None)
                    examples.append(
                        {
                            "task_id": group.task_id,
                            "trajectory": index,
                            "success": opts.succeeded(target),
                            "turn": int(batch.turn_index[row]),
                            "privileged": text,
                        }
                    )
            offset += len(group)
        to_score, score_mask = self.scoring_plan(batch, privileged)
        shift = (
            privileged_logprob_shift(
                context.score,
                batch.prompts,
                batch.response_ids,
                score_mask,
                to_score,
                tasks=[trajectories[i].task for i in batch.trajectory_index.tolist()] if trajectories else None,
                placement=opts.placement,
                base_logprobs=None if opts.rescore_without_pi else batch.old_logprobs,
                reuse_prompt_cache=opts.reuse_prompt_cache,
            )
            if any(to_score)
            else torch.zeros(batch.response_ids.shape)
        )
        weights = self.token_weights(batch, advantages, shift, privileged, rows_of)
        mask = batch.response_mask.bool()
        token_advantages = weighted_token_advantages(advantages[batch.trajectory_index], weights, mask)
        aligned_rows = [p is not None for p in privileged]
        valid_weights = weights[mask] if mask.any() else torch.ones(1)
        total = max(len(trajectories), 1)
        stats = {
            "taspo/pi_coverage": covered / total,
            "taspo/aligned_turn_fraction": sum(aligned_rows) / max(len(batch), 1),
            "taspo/env_pi_rows": sum(text is not None for text in env_rows or []) / max(len(batch), 1),
            **{f"taspo/{k}": v for k, v in weight_stats(valid_weights).items()},
            "taspo/redistribution_abs_mean": float(
                ((token_advantages - advantages[batch.trajectory_index][:, None]).abs() * mask).sum()
                / mask.sum().clamp_min(1)
            ),
        }
        return CreditResult(
            token_advantages,
            stats,
            examples,
            token_values={"delta": shift, "weight": weights},
            row_info={"privileged": privileged},
            trajectory_values={"advantage": advantages},
        )

    def scoring_plan(self, batch: RolloutBatch, privileged: list[str | None]) -> tuple[list[str | None], torch.Tensor]:
        """Which rows the PI pass scores, and up to which token.

        Action-level support reads Δ on the action's tokens only, so each row is scored up to
        its action's end, and an aligned turn without an action span (support 0 whatever Δ
        is) is not scored at all. Token-level support needs every token.
        """
        if self.opts.support_level != "action":
            return privileged, batch.response_mask
        to_score: list[str | None] = list(privileged)
        mask = batch.response_mask.clone()
        for row, (start, end) in enumerate(batch.action_token_spans.tolist()):
            if to_score[row] is None:
                continue
            if start < 0 or end <= start:
                to_score[row] = None
            else:
                mask[row, end:] = 0
        return to_score, mask

    def token_weights(
        self,
        batch: RolloutBatch,
        advantages: torch.Tensor,
        shift: torch.Tensor,
        privileged: list[str | None],
        rows_of: list[list[int]],
    ) -> torch.Tensor:
        """``[B, T]`` weights (:func:`trajectory_row_weights` per trajectory); 1 where no PI."""
        weights = torch.ones(batch.response_ids.shape, dtype=torch.float32)
        spans = batch.action_token_spans.tolist()
        lengths = batch.response_mask.sum(dim=1).tolist()
        for trajectory, rows in enumerate(rows_of):
            aligned_rows = [row for row in rows if privileged[row] is not None]
            if len(aligned_rows) < 2:
                continue
            row_weights = trajectory_row_weights(
                [shift[row, : int(lengths[row])] for row in aligned_rows],
                [tuple(spans[row]) for row in aligned_rows],
                float(advantages[trajectory]),
                kappa=self.opts.kappa,
                epsilon=self.opts.epsilon_w,
                level=self.opts.support_level,
            )
            for row, row_weight in zip(aligned_rows, row_weights, strict=True):
                weights[row, : len(row_weight)] = row_weight
        return weights


def _acted(target: Trajectory, row: int, batch: RolloutBatch) -> bool:
    """Whether the row's turn of ``target`` executed a valid action (only such turns get PI)."""
    turn = int(batch.turn_index[row])
    return turn < len(target.turns) and bool(target.turns[turn].valid and target.turns[turn].action)
