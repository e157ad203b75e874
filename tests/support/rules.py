"""Registering a test's own credit rule for the length of one block.

Example:
    >>> from agents.algorithms.base import CREDIT_RULES, CreditResult, CreditRule
    >>> class Ones(CreditRule):
    ...     def compute(self, batch, context):
    ...         return CreditResult(batch.response_mask.float())
    >>> with registered_rule("ones", Ones):
    ...     "ones" in CREDIT_RULES
    True
    >>> "ones" in CREDIT_RULES
    False
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from agents.algorithms.base import CREDIT_RULES, CreditRule, register_credit_rule


@contextmanager
def registered_rule(name: str, rule: type[CreditRule]) -> Iterator[type[CreditRule]]:
    """Registers ``rule`` as ``GRPOConfig(credit=name)`` inside the block, and removes it after."""
    register_credit_rule(name)(rule)
    try:
        yield rule
    finally:
        CREDIT_RULES.pop(name, None)
