"""Privileged credit: the machinery shared by ORSD and TASPO.

Both score the *same* sampled response tokens with and without privileged text (PI) in the
prompt (:mod:`~agents.privileged.shift`) and turn the gap into credit:

- ORSD: rubric bundles (:mod:`~agents.privileged.rubrics`), frozen verifiers
  (:mod:`~agents.privileged.verifiers`), bundle selection (:mod:`~agents.privileged.selection`)
  and additive token shaping (:mod:`~agents.privileged.shaping`);
- TASPO: guidance from successful siblings (:mod:`~agents.privileged.guidance`), alignment to
  the target's path (:mod:`~agents.privileged.alignment`) and bounded mean-1 action weights
  (:mod:`~agents.privileged.weights`).

The credit rules themselves are ``agents/algorithms/orsd.py`` and ``taspo.py``; the agents
are :class:`~agents.privileged.agents.ORSDAgent` and ``TASPOAgent``.
"""

from agents.privileged.selection import select_rubric_bundle
from agents.privileged.shift import insert_privileged_text, privileged_logprob_shift
from agents.privileged.weights import action_support, taspo_weights

__all__ = ["action_support", "insert_privileged_text", "privileged_logprob_shift", "select_rubric_bundle",
           "taspo_weights"]
