"""ORSD (arXiv 2611.06543): rubric bundles written from a group's successes and failures.

- :mod:`~agents.algorithms.orsd.rubrics`: bundles (programmatic contrastive patterns, or LM-written);
- :mod:`~agents.algorithms.orsd.verifiers`: frozen judges filling the item × trajectory matrix;
- :mod:`~agents.algorithms.orsd.selection`: the bundle best aligned with success;
- :mod:`~agents.algorithms.orsd.shaping`: additive token shaping from the rubric's log-prob shift;
- :mod:`~agents.algorithms.orsd.rule`: the registered credit rule ``"orsd"`` and its options.
"""

from agents.algorithms.orsd.rule import ORSDCredit, ORSDOptions
from agents.algorithms.orsd.selection import select_rubric_bundle
from agents.algorithms.orsd.shaping import orsd_token_advantages

__all__ = ["ORSDCredit", "ORSDOptions", "orsd_token_advantages", "select_rubric_bundle"]
