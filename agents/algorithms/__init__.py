"""Credit rules (GRPO, and ORSD/TASPO where present) and the policy loss.

Each rule registers itself in :data:`CREDIT_RULES` on import; adding one is one
module here (``orsd.py``, ``taspo.py`` are imported automatically when present).
"""

import importlib
import importlib.util

from agents.algorithms.base import (
    CREDIT_RULES,
    CreditContext,
    CreditRule,
    broadcast_to_tokens,
    make_credit_rule,
    register_credit_rule,
)
from agents.algorithms.grpo import GRPOCredit, group_mean_std, grpo_advantages
from agents.algorithms.loss import aggregate_loss, clipped_surrogate, k3_kl, policy_loss

for _module in ("orsd", "taspo"):
    if importlib.util.find_spec(f"agents.algorithms.{_module}") is not None:
        importlib.import_module(f"agents.algorithms.{_module}")

__all__ = [
    "CREDIT_RULES",
    "CreditContext",
    "CreditRule",
    "GRPOCredit",
    "aggregate_loss",
    "broadcast_to_tokens",
    "clipped_surrogate",
    "group_mean_std",
    "grpo_advantages",
    "k3_kl",
    "make_credit_rule",
    "policy_loss",
    "register_credit_rule",
]
