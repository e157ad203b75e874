"""Credit rules (one registry, one signature) and the policy loss.

- :mod:`~agents.algorithms.base`: ``CreditRule``, ``CreditContext``, ``CreditResult`` and the registry;
- :mod:`~agents.algorithms.grpo`: group-normalised outcome advantages (``"grpo"``);
- :mod:`~agents.algorithms.rloo`: leave-one-out baseline advantages (``"rloo"``);
- :mod:`~agents.algorithms.gigpo`: episode- plus step-level (anchor-state) group advantages (``"gigpo"``);
- :mod:`~agents.algorithms.orsd`: rubric-based token shaping (``"orsd"``);
- :mod:`~agents.algorithms.taspo`: action-level credit redistribution (``"taspo"``);
- :mod:`~agents.algorithms.vine`: Monte Carlo step values from policy continuations (``"vine"``, VinePPO);
- :mod:`~agents.algorithms.privileged`: what ORSD and TASPO share (the PI log-prob shift, options);
- :mod:`~agents.algorithms.loss`: the clipped policy loss.

Each rule registers itself when its module is imported, which this package does for the
built-in ones; adding a rule is one module (or folder) here and one import below.
"""

from agents.algorithms.base import (
    CREDIT_RULES,
    CreditChoice,
    CreditConfig,
    CreditContext,
    CreditResult,
    CreditRule,
    NoOptions,
    broadcast_to_tokens,
    make_credit_rule,
    register_credit_rule,
)
from agents.algorithms.gigpo import GiGPOCredit, GiGPOOptions
from agents.algorithms.grpo import GRPOCredit, group_mean_std, grpo_advantages
from agents.algorithms.loss import aggregate_loss, clipped_surrogate, k3_kl, policy_loss
from agents.algorithms.orsd import ORSDCredit, ORSDOptions
from agents.algorithms.rloo import RLOOCredit, rloo_advantages
from agents.algorithms.taspo import TASPOCredit, TASPOOptions
from agents.algorithms.vine import VineCredit, VineOptions, vine_token_advantages

__all__ = [
    "CREDIT_RULES",
    "CreditConfig",
    "CreditContext",
    "CreditResult",
    "CreditRule",
    "GRPOCredit",
    "GiGPOCredit",
    "GiGPOOptions",
    "NoOptions",
    "ORSDCredit",
    "ORSDOptions",
    "RLOOCredit",
    "TASPOCredit",
    "TASPOOptions",
    "VineCredit",
    "VineOptions",
    "aggregate_loss",
    "broadcast_to_tokens",
    "clipped_surrogate",
    "CreditChoice",
    "group_mean_std",
    "grpo_advantages",
    "k3_kl",
    "make_credit_rule",
    "policy_loss",
    "register_credit_rule",
    "rloo_advantages",
    "vine_token_advantages",
]
