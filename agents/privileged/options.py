"""Building a rule's options dataclass from ``config.credit_options``, naming bad keys.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Knobs:
    ...     size: int = 2
    >>> options_from_dict(Knobs, {"size": 3}, "demo").size
    3
    >>> options_from_dict(Knobs, {"sise": 3}, "demo")
    Traceback (most recent call last):
    ...
    ValueError: unknown demo credit option(s) ['sise']; known: ['size']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from agents.privileged.shift import PLACEMENTS

T = TypeVar("T")


def options_from_dict(cls: type[T], values: Mapping[str, Any] | None, rule: str) -> T:
    """``cls(**values)`` after checking every key is a field of ``cls``."""
    known = [field.name for field in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(values or {}) - set(known))
    if unknown:
        raise ValueError(f"unknown {rule} credit option(s) {unknown}; known: {sorted(known)}")
    return cls(**dict(values or {}))


def check(owner: str, name: str, ok: bool, requirement: str, value: Any) -> None:
    """Raises ``ValueError('{owner}.{name} must be {requirement}, got {value!r}')`` unless ``ok``."""
    if not ok:
        raise ValueError(f"{owner}.{name} must be {requirement}, got {value!r}")


def check_scoring_options(owner: str, options: Any) -> None:
    """Checks the fields ORSD and TASPO options share: ``placement``, ``rescore_without_pi``,
    ``reuse_prompt_cache``, ``lm_max_new_tokens``, ``log_examples``."""
    check(owner, "placement", options.placement in PLACEMENTS, f"one of {PLACEMENTS}", options.placement)
    for name in ("rescore_without_pi", "reuse_prompt_cache"):
        check(owner, name, isinstance(getattr(options, name), bool), "True or False", getattr(options, name))
    check(owner, "lm_max_new_tokens", isinstance(options.lm_max_new_tokens, int) and options.lm_max_new_tokens >= 1,
          "an integer >= 1", options.lm_max_new_tokens)
    check(owner, "log_examples", isinstance(options.log_examples, int) and options.log_examples >= 0,
          "an integer >= 0", options.log_examples)


def policy_of(context: Any) -> Any:
    """The policy behind a credit context: ``context.policy`` or the owner of ``context.scorer``."""
    policy = getattr(context, "policy", None)
    if policy is None:
        policy = getattr(getattr(context, "scorer", None), "__self__", None)
    return policy


def policy_complete(
    policy: Any, *, greedy: bool = False, max_new_tokens: int | None = None
) -> Callable[[list[str]], list[str]]:
    """A ``complete`` function from a policy's ``generate`` (sampling unless ``greedy``).

    The policy's action stop strings are switched off (a rubric or guidance list must not end
    at the first ``</action>``) and ``max_new_tokens`` overrides its per-turn limit.
    """
    if policy is None or not hasattr(policy, "generate"):
        raise RuntimeError("this credit option needs a policy with generate(); none is reachable from the context")

    def complete(prompts: list[str]) -> list[str]:
        generations = policy.generate(list(prompts), greedy=greedy, max_new_tokens=max_new_tokens, stop=())
        return [generation.text for generation in generations]

    return complete


def answer_ids(policy: Any, word: str) -> list[int]:
    """Token ids of ``word`` as the start of a response (no special tokens)."""
    return list(policy.tokenizer.encode(word, add_special_tokens=False))
