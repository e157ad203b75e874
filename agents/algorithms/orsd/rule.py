"""ORSD credit (arXiv 2611.06543): rubric-bundle PI → additive token-level shaping of GRPO.

Per trajectory group: K candidate rubric bundles are proposed (by the current policy, an
endpoint, or programmatically from contrastive action patterns), a frozen verifier fills
the satisfaction matrix of every item × trajectory, and the bundle whose satisfied fraction
best aligns with success is selected (:mod:`agents.algorithms.orsd.selection`). With the
selected bundle as PI, every response token gets

    A_{i,t} = A_i + λ · clip(Δ̃_{i,t}, −c, c),
    Δ_{i,t} = log π(y_t | x ⊕ rubric, y_<t) − log π(y_t | x, y_<t)

(:mod:`agents.algorithms.orsd.shaping`), with A_i the GRPO advantage. Groups with a uniform
outcome or no positively aligned bundle get no rubric and thus plain GRPO credit.

Extension (not in the paper; option ``env_pi``, default ``"none"``): the PI of every turn can
be the env's ``info["privileged"]`` instead of (``"replace"``: no rubric is proposed) or after
(``"add"``) the rubric (:mod:`agents.algorithms.privileged.environment`). Env PI is there for
every trajectory, so groups without a rubric (uniform outcomes included) are shaped too: the
on-policy self-distillation setting.

Options (``config.credit_options``) are the fields of :class:`ORSDOptions`.

Example:
    >>> ORSDOptions(num_bundles=0)
    Traceback (most recent call last):
    ...
    ValueError: ORSDOptions.num_bundles must be an integer >= 1, got 0
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
import torch

from agentenvs.core.checks import Bounds, require
from agentenvs.core.trajectory import TrajectoryGroup
from agents.algorithms.base import CreditConfig, CreditContext, CreditResult, register_credit_rule
from agents.algorithms.grpo import GRPOCredit
from agents.algorithms.orsd.rubrics import (
    PATTERN_FAMILIES,
    ProposalResult,
    RubricBundle,
    contrastive_rubric_bundles,
    propose_rubric_bundles,
)
from agents.algorithms.orsd.selection import AlignmentMetric, judged_bundle, select_rubric_bundle
from agents.algorithms.orsd.shaping import ShiftNormalization, orsd_token_advantages, shaping_stats
from agents.algorithms.orsd.verifiers import LMVerifier, LogprobVerifier, ProgrammaticVerifier, Verifier
from agents.algorithms.privileged.endpoints import CompleteFn
from agents.algorithms.privileged.environment import combine_privileged, env_privileged_rows
from agents.algorithms.privileged.options import (
    PrivilegedOptions,
    answer_ids,
    policy_complete,
)
from agents.algorithms.privileged.shift import privileged_logprob_shift
from agents.policy import SamplingSettings
from agents.policy.transformers_policy import TransformersPolicy
from agents.rollout import RolloutBatch

Proposer = Literal["programmatic", "policy", "endpoint"]
PROPOSERS: tuple[str, ...] = typing.get_args(Proposer)
VerifierKind = Literal["programmatic", "reference", "local", "endpoint"]
VERIFIERS: tuple[str, ...] = typing.get_args(VerifierKind)


@dataclass(frozen=True)
class ORSDOptions(PrivilegedOptions):
    """ORSD knobs; every open choice of the paper is a field with a documented default.

    The fields shared with TASPO (placement, endpoint, scoring shortcuts, ``log_examples``:
    selected bundles kept per step) are those of :class:`PrivilegedOptions`.
    """

    num_bundles: Annotated[int, Bounds(1)] = 4
    """K: candidate bundles per group (programmatic: at most one per pattern family)."""
    proposer: Proposer = "programmatic"
    """Who writes bundles: ``programmatic`` (contrastive patterns), ``policy`` (the current policy,
    sampling) or ``endpoint`` (an OpenAI-compatible server)."""
    verifier: VerifierKind = "programmatic"
    """Frozen judge: ``programmatic``, ``reference`` (the frozen initial policy, yes/no likelihood),
    ``local`` (another local model, ``verifier_model``) or ``endpoint``."""
    verifier_model: str = ""
    """Model name or folder for ``verifier="local"``."""
    max_items: Annotated[int, Bounds(1)] = 5
    """Rubric items per bundle."""
    pattern_families: tuple[str, ...] = PATTERN_FAMILIES
    """Programmatic proposer: pattern families, one bundle each (in this order)."""
    min_gap: Annotated[float, Bounds(0, 1, min_inclusive=False)] = 0.5
    """Programmatic proposer: least |P(pattern | success) − P(pattern | failure)| for an item."""
    alignment_metric: AlignmentMetric = "point_biserial"
    """How a bundle's satisfaction is compared with success: point_biserial, accuracy or auc."""
    min_alignment: float = 0.0
    """A bundle is selectable only with alignment strictly above this."""
    coef: Annotated[float, Bounds(0)] = 0.2
    """λ: weight of the clipped shift added to A_i."""
    clip: Annotated[float, Bounds(0, min_inclusive=False)] = 1.0
    """c: Δ is clipped to [−c, c] before scaling."""
    normalize: ShiftNormalization = "none"
    """Per-trajectory normalisation of Δ: none, std or mean_std."""

    def check_relations(self) -> None:
        name = type(self).__name__
        require(
            self.verifier != "local" or bool(self.verifier_model),
            name,
            "verifier_model",
            "a model name or folder when verifier='local'",
            self.verifier_model,
        )
        require(
            set(self.pattern_families) <= set(PATTERN_FAMILIES),
            name,
            "pattern_families",
            f"a non-empty subset of {PATTERN_FAMILIES}",
            self.pattern_families,
        )
        super().check_relations()

    @property
    def endpoint_users(self) -> tuple[str, ...]:
        return tuple(name for name in ("proposer", "verifier") if getattr(self, name) == "endpoint")


@dataclass
class RubricSelection:
    """What rubric selection found in one batch (counts over its groups).

    Attributes:
        rubric_of_trajectory: The selected rubric's text per trajectory (None: no rubric).
        proposed: Bundles proposed (dropped ones included). dropped: Unparsable bundles.
        alignments: The selected bundle's alignment, one per group that got a rubric.
        examples: Readable records of the first selected rubrics.
    """

    rubric_of_trajectory: list[str | None]
    proposed: int = 0
    dropped: int = 0
    alignments: list[float] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)


@register_credit_rule("orsd")
class ORSDCredit(GRPOCredit):
    """GRPO advantages plus λ·clip(Δ) under the selected rubric bundle, token by token.

    The result's ``stats`` hold the step's statistics (bundles proposed, dropped, groups with
    a rubric, mean selected alignment, shaping scale vs |A_i|, rows with env PI) and its
    ``examples`` the selected rubric text of the first ``log_examples`` groups that got one
    (and, with ``env_pi``, the env PI of the first ``log_examples`` rows).
    """

    options_type = ORSDOptions
    opts: ORSDOptions

    def __init__(self, config: CreditConfig | None = None, opts: Any = None) -> None:
        super().__init__(config, opts)
        self._local_verifier_policy: TransformersPolicy | None = None

    @property
    def reuses_prompt_caches(self) -> bool:
        return self.opts.reuse_prompt_cache

    def propose(self, group: TrajectoryGroup, context: CreditContext) -> ProposalResult:
        """The group's candidate bundles (empty for a group with a uniform outcome); ``group`` is
        labelled already (``opts.labelled``: its ``success`` flags are the rule's)."""
        outcomes = {bool(t.success) for t in group.trajectories}
        if len(outcomes) < 2:
            return ProposalResult([], 0)
        opts = self.opts
        if opts.proposer == "programmatic":
            return contrastive_rubric_bundles(
                group,
                families=opts.pattern_families[: opts.num_bundles],
                max_items=opts.max_items,
                min_gap=opts.min_gap,
            )
        if opts.proposer == "endpoint":
            complete: CompleteFn = self.opts.endpoint()
        else:
            complete = policy_complete(context.require_policy(), max_new_tokens=opts.lm_max_new_tokens)
        return propose_rubric_bundles(group, complete, num_bundles=opts.num_bundles, max_items=opts.max_items)

    def verifier(self, context: CreditContext) -> Verifier:
        """The frozen judge named by ``verifier``."""
        kind = self.opts.verifier
        if kind == "programmatic":
            return ProgrammaticVerifier()
        if kind == "endpoint":
            return LMVerifier(self.opts.endpoint())
        if kind == "reference":
            policy = context.require_policy()
            if not policy.has_reference:
                raise RuntimeError(
                    "verifier='reference' needs a policy that keeps its initial weights "
                    "(train with lora=True or beta > 0)"
                )
            score: Callable[..., torch.Tensor] = functools.partial(policy.score, reference=True)
        else:
            if self._local_verifier_policy is None:
                self._local_verifier_policy = TransformersPolicy(
                    self.opts.verifier_model, sampling=SamplingSettings(max_new_tokens=4)
                )
            local = self._local_verifier_policy
            score, policy = local.score, local
        return LogprobVerifier(score, answer_ids(policy, "yes"), answer_ids(policy, "no"))

    # -- the rule ------------------------------------------------------------------------
    def select_rubrics(self, batch: RolloutBatch, context: CreditContext) -> RubricSelection:
        """Every group's proposals, verdicts and selected rubric (text per trajectory)."""
        opts = self.opts
        selection = RubricSelection([None] * len(batch.trajectories))
        verifier: Verifier | None = None
        offset = 0
        for group in map(opts.labelled, batch.groups):
            members = range(offset, offset + len(group))
            offset += len(group)
            proposal = self.propose(group, context)
            selection.proposed += len(proposal.bundles) + proposal.dropped
            selection.dropped += proposal.dropped
            if _uniform(group) or not proposal.bundles:
                continue
            success = np.array([bool(t.success) for t in group.trajectories])
            verifier = verifier or self.verifier(context)
            matrices = _verify_bundles(verifier, proposal.bundles, group)
            chosen = select_rubric_bundle(
                proposal.bundles, matrices, success, metric=opts.alignment_metric, min_alignment=opts.min_alignment
            )
            if chosen.bundle is None:
                continue
            bundle = judged_bundle(chosen.bundle, matrices[chosen.index])
            text = bundle.render()
            selection.alignments.append(chosen.alignments[chosen.index])
            for member in members:
                selection.rubric_of_trajectory[member] = text
            if len(selection.examples) < opts.log_examples:
                selection.examples.append(
                    {
                        "task_id": group.task_id,
                        "group_id": group.group_id,
                        "source": bundle.source,
                        "alignment": chosen.alignments[chosen.index],
                        "rubric": text,
                    }
                )
        return selection

    def compute(self, batch: RolloutBatch, context: CreditContext) -> CreditResult:
        opts = self.opts
        advantages = self.trajectory_advantages(batch)
        trajectories = batch.trajectories
        # env_pi="replace" needs no rubric at all: nothing is proposed or judged.
        rubrics = (
            self.select_rubrics(batch, context)
            if opts.env_pi != "replace"
            else RubricSelection([None] * len(trajectories))
        )
        env_rows = (
            env_privileged_rows(batch, keys=opts.env_pi_keys, max_chars=opts.env_pi_max_chars)
            if opts.env_pi != "none"
            else [None] * len(batch)
        )
        rows = batch.trajectory_index.tolist()
        privileged = [
            combine_privileged(rubrics.rubric_of_trajectory[i], env_text, opts.env_pi)
            for i, env_text in zip(rows, env_rows, strict=True)
        ]
        env_examples = [
            {"task_id": trajectories[rows[row]].task_id, "turn": int(batch.turn_index[row]), "env_privileged": text}
            for row, text in enumerate(env_rows)
            if text is not None
        ]
        examples = rubrics.examples + env_examples[: opts.log_examples]
        shift = (
            privileged_logprob_shift(
                context.score,
                batch.prompts,
                batch.response_ids,
                batch.response_mask,
                privileged,
                tasks=[trajectories[i].task for i in rows] if trajectories else None,
                placement=opts.placement,
                base_logprobs=None if opts.rescore_without_pi else batch.old_logprobs,
                reuse_prompt_cache=opts.reuse_prompt_cache,
            )
            if any(privileged)
            else torch.zeros(batch.response_ids.shape)
        )
        row_advantages = advantages[batch.trajectory_index]
        token_advantages = orsd_token_advantages(
            row_advantages,
            shift,
            batch.response_mask,
            batch.trajectory_index,
            coef=opts.coef,
            clip=opts.clip,
            normalize=opts.normalize,
        )
        groups = max(len(batch.groups), 1)
        stats = {
            "orsd/bundles_proposed": float(rubrics.proposed),
            "orsd/bundles_dropped": float(rubrics.dropped),
            "orsd/groups_with_rubric": len(rubrics.alignments) / groups,
            "orsd/groups_uniform_outcome": sum(_uniform(opts.labelled(group)) for group in batch.groups) / groups,
            "orsd/selected_alignment": float(np.mean(rubrics.alignments)) if rubrics.alignments else 0.0,
            "orsd/env_pi_rows": sum(text is not None for text in env_rows) / max(len(batch), 1),
            **{
                f"orsd/{key}": value
                for key, value in shaping_stats(row_advantages, token_advantages, batch.response_mask).items()
            },
        }
        return CreditResult(
            token_advantages,
            stats,
            examples,
            token_values={"delta": shift},
            row_info={"privileged": privileged},
            trajectory_values={"advantage": advantages},
        )


def _uniform(group: TrajectoryGroup) -> bool:
    """Whether every trajectory of the group succeeded, or every one failed."""
    return len({bool(trajectory.success) for trajectory in group.trajectories}) < 2


def _verify_bundles(verifier: Verifier, bundles: list[RubricBundle], group: TrajectoryGroup) -> list[np.ndarray]:
    """Each bundle's satisfaction matrix, judging every distinct item once."""
    distinct = list(dict.fromkeys(item for bundle in bundles for item in bundle.items))
    matrix = verifier(distinct, group.trajectories)
    row_of = {item: row for row, item in enumerate(distinct)}
    return [matrix[[row_of[item] for item in bundle.items]] for bundle in bundles]
