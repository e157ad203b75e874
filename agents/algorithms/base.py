"""Credit rules: one signature, a registry, and what a rule may look at.

The trainer computes token advantages as::

    rule = make_credit_rule(config.credit, config)      # e.g. "grpo", "orsd", "taspo"
    result = rule.compute(batch, context)               # CreditResult
    result.advantages                                   # Tensor[B, T]

without knowing which rule runs. A rule is one module: a class registered with
:func:`register_credit_rule` whose :meth:`CreditRule.compute` maps a
:class:`~agents.rollout.RolloutBatch` (per-turn tensors, trajectory outcomes,
groups) to ``[B, T]`` advantages, 0 on padding. The maths should live in pure
tensor functions next to it (each with a hand-computed unit test); ``compute``
only gathers their inputs. Rules that need the model — e.g. to re-score the
same response tokens with privileged text in the prompt — call
``context.score(prompts, responses, contexts)`` (the policy travels in the context); rules
that play the policy on from the turns' states (``credit="vine"``) set ``needs_continuations``
and call ``context.require_continuations()`` (the trainer then records the states and hands a
:class:`~agents.reference.continuations.ContinuationRunner` in the context).
A rule returns a :class:`CreditResult`: the advantages, its statistics and readable
examples, so nothing is left on the rule between steps.

Rule-specific knobs come from ``config.credit_options`` (a ``dict``). A rule declares
their typed class as ``options_type`` (a frozen dataclass that checks its own fields, see
:class:`~agentenvs.core.checks.Checked`); ``GRPOConfig`` checks the options against it when
it is built, before any model loads, and the rule reads them as ``self.opts``.

Example:
    >>> @register_credit_rule("zero")
    ... class Zero(CreditRule):
    ...     def compute(self, batch, context):
    ...         return CreditResult(torch.zeros_like(batch.old_logprobs))
    >>> "zero" in CREDIT_RULES
    True
    >>> del CREDIT_RULES["zero"]
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

import torch

from agents.policy.protocol import Policy
from agents.reference.values import ReturnPlayer
from agents.rollout import RolloutBatch

T = TypeVar("T")


class CreditConfig(Protocol):
    """The fields of a training config that credit rules read (``GRPOConfig`` has them all)."""

    @property
    def credit(self) -> str: ...
    @property
    def credit_options(self) -> Mapping[str, Any]: ...
    @property
    def scale_rewards(self) -> str: ...
    @property
    def advantage_eps(self) -> float: ...


@dataclass(frozen=True)
class NoOptions:
    """The options of a rule that takes none."""


def options_from_dict(cls: type[T], values: Mapping[str, Any] | None, rule: str) -> T:
    """``cls(**values)`` after checking every key is a field of ``cls``.

    >>> options_from_dict(NoOptions, {"size": 3}, "grpo")
    Traceback (most recent call last):
    ...
    ValueError: unknown grpo credit option(s) ['size']; known: []
    """
    known = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(values or {}) - set(known))
    if unknown:
        raise ValueError(f"unknown {rule} credit option(s) {unknown}; known: {sorted(known)}")
    return cls(**dict(values or {}))


@dataclass
class CreditContext:
    """What a credit rule may use besides the batch.

    Attributes:
        config: The training config (``GRPOConfig``; rule options in ``credit_options``).
        step: The training step being computed.
        policy: The policy being trained (:class:`~agents.policy.protocol.Policy`): rules that
            re-score responses, write rubrics or judge with the reference model call it. None
            where no model is at hand (unit tests of rules that need none).
        generator: A seeded torch generator for rules that sample.
        continuations: Plays the current policy on from turn starts (a
            :class:`~agents.reference.continuations.ContinuationRunner`), for rules with
            ``needs_continuations``; None elsewhere.
    """

    config: CreditConfig
    step: int = 0
    policy: Policy | None = None
    generator: torch.Generator | None = None
    continuations: ReturnPlayer | None = None

    def require_continuations(self) -> ReturnPlayer:
        """The continuation player, or a ``RuntimeError`` saying this rule needs one."""
        if self.continuations is None:
            raise RuntimeError(
                "this credit rule plays the policy on from turn states and the CreditContext has no "
                "continuations (the Trainer makes them for rules with needs_continuations)"
            )
        return self.continuations

    def require_policy(self) -> Policy:
        """The policy, or a ``RuntimeError`` saying this rule needs one."""
        if self.policy is None:
            raise RuntimeError("this credit rule needs a policy, and the CreditContext has none")
        return self.policy

    def score(
        self,
        prompts: Sequence[str],
        responses: Sequence[Sequence[int]] | torch.Tensor,
        contexts: Sequence[str | None] | None = None,
        *,
        response_mask: torch.Tensor | None = None,
        reuse_from: Sequence[str] | None = None,
    ) -> torch.Tensor:
        """The policy's teacher-forced, no-gradient log-probs (``Policy.score``).

        ``reuse_from``: per row, the rollout prompt whose kept KV the policy may reuse;
        passed on only when given.
        """
        policy = self.require_policy()
        if reuse_from is not None:
            return policy.score(prompts, responses, contexts, response_mask=response_mask, reuse_from=reuse_from)
        return policy.score(prompts, responses, contexts, response_mask=response_mask)


@dataclass
class CreditResult:
    """What a credit rule computed for one batch.

    Attributes:
        advantages: ``[B, T]`` float advantages for every response token (0 on padding).
        stats: Scalar statistics (logged with every training step, keys prefixed by the rule).
        examples: Readable records (e.g. the rubric or PI used), logged at evaluation steps.
        token_values: ``[B, T]`` per-token quantities the advantages were made from, by name
            (``"delta"``: the PI log-prob shift Δ; ``"weight"``: a multiplicative weight on the
            outcome advantage). Optional: the trainer records a sample of them for the viewer
            (:mod:`agents.runs.credit_record`); nothing else reads them.
        row_info: Per row (turn), JSON values behind its credit, by name (``"privileged"``: the
            PI text the row was scored with, None where none; ``"anchor"``: the step group a
            row was compared within). Optional, recorded like ``token_values``.
        trajectory_values: ``[N]`` per-trajectory quantities, by name (``"advantage"``: the
            outcome advantage A_i the token credit starts from). Optional, recorded likewise.
    """

    advantages: torch.Tensor
    stats: dict[str, float] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    token_values: dict[str, torch.Tensor] = field(default_factory=dict)
    row_info: dict[str, list[Any]] = field(default_factory=dict)
    trajectory_values: dict[str, torch.Tensor] = field(default_factory=dict)


class CreditRule(abc.ABC):
    """Turns a rollout batch into per-token advantages.

    Args:
        config: The training config (None: every option at its default); the rule's options
            (``config.credit_options``, typed as ``options_type``) are in ``self.opts``.
    """

    name: ClassVar[str] = ""
    options_type: ClassVar[type] = NoOptions
    """The rule's options class (a dataclass; each field one option of ``credit_options``)."""
    needs_continuations: ClassVar[bool] = False
    """Whether :meth:`compute` plays the policy on from the turns' states
    (``context.continuations``); the trainer then makes the player and records the states."""

    def __init__(self, config: CreditConfig | None = None, opts: Any = None) -> None:
        self.config = config
        # opts: the typed options where the caller parsed them (CreditChoice.build); else parsed here
        self.opts: Any = (
            options_from_dict(self.options_type, self.options, self.name or type(self).__name__)
            if opts is None
            else opts
        )

    @property
    def reuses_prompt_caches(self) -> bool:
        """Whether :meth:`compute` reuses the rollout's prompt KV; the trainer then has the policy
        keep it during training collection. False here; ORSD and TASPO return their
        ``reuse_prompt_cache`` option."""
        return False

    def wants_snapshots(self, available: bool) -> bool:
        """Whether the collector should record env snapshots per turn, given whether the env has
        them (``available``); False here. A rule with ``needs_continuations`` replays its turn
        states from reset where this is False."""
        return False

    @property
    def options(self) -> dict[str, Any]:
        """``config.credit_options`` as given (empty when there is no config)."""
        return {} if self.config is None else dict(self.config.credit_options)

    @abc.abstractmethod
    def compute(self, batch: RolloutBatch, context: CreditContext) -> CreditResult:
        """The batch's token advantages, with the statistics and examples behind them."""


CREDIT_RULES: dict[str, type[CreditRule]] = {}
"""Registered credit rules by name."""


def register_credit_rule(name: str) -> Callable[[type[CreditRule]], type[CreditRule]]:
    """Class decorator registering a :class:`CreditRule` under ``name``.

    Raises:
        ValueError: if ``name`` is taken by another class.
    """

    def decorate(cls: type[CreditRule]) -> type[CreditRule]:
        known = CREDIT_RULES.get(name)
        if (
            known is not None
            and known is not cls
            and (known.__module__, known.__qualname__)
            != (
                cls.__module__,
                cls.__qualname__,
            )
        ):  # the same class imported twice (e.g. pytest's importlib mode) is no conflict
            raise ValueError(f"credit rule {name!r} is already registered ({CREDIT_RULES[name].__name__})")
        cls.name = name
        CREDIT_RULES[name] = cls
        return cls

    return decorate


def credit_rule_class(name: str) -> type[CreditRule]:
    """The registered rule ``name`` (ValueError naming it and the registered ones)."""
    if name not in CREDIT_RULES:
        raise ValueError(f"credit={name!r} is not a registered credit rule; choose one of {sorted(CREDIT_RULES)}")
    return CREDIT_RULES[name]


@dataclass(frozen=True)
class CreditChoice:
    """A registered rule and its typed options: ``credit`` and ``credit_options`` parsed once.

    ``GRPOConfig.credit_choice`` holds the one its fields name; the trainer builds the rule from it.

    >>> CreditChoice.parse("grpo", {}).options
    NoOptions()
    >>> CreditChoice.parse("gpro", {})
    Traceback (most recent call last):
    ...
    ValueError: credit='gpro' is not a registered credit rule; choose one of [...]

    Attributes:
        rule: The rule's class (``CREDIT_RULES[credit]``).
        options: Its ``options_type`` made from ``credit_options`` (each option checked).
    """

    rule: type[CreditRule]
    options: Any

    @classmethod
    def parse(cls, name: str, values: Mapping[str, Any] | None) -> CreditChoice:
        """The rule ``name`` with ``values`` as its typed options.

        Raises:
            ValueError: naming an unknown rule (and the registered ones), an unknown option or a bad value.
        """
        rule = credit_rule_class(name)
        return cls(rule, options_from_dict(rule.options_type, values, name))

    def build(self, config: CreditConfig | None = None) -> CreditRule:
        """The rule for ``config`` (whose ``credit_options`` these options were parsed from)."""
        return self.rule(config, self.options)


def make_credit_rule(name: str, config: CreditConfig | None = None) -> CreditRule:
    """Builds the registered rule ``name`` for ``config`` (its options parsed from ``config.credit_options``).

    Raises:
        ValueError: naming the unknown rule and the registered ones, or a bad option.
    """
    return CreditChoice.parse(name, None if config is None else config.credit_options).build(config)


def broadcast_to_tokens(
    trajectory_advantages: torch.Tensor, trajectory_index: torch.Tensor, response_mask: torch.Tensor
) -> torch.Tensor:
    """Gives every response token of every turn its trajectory's advantage.

    >>> broadcast_to_tokens(torch.tensor([1.0, -1.0]), torch.tensor([1, 0]), torch.tensor([[1, 1, 0], [1, 0, 0]]))
    tensor([[-1., -1.,  0.],
            [ 1.,  0.,  0.]])
    """
    values = trajectory_advantages[trajectory_index][:, None].expand(response_mask.shape)
    return torch.where(response_mask.bool(), values, torch.zeros_like(values))
