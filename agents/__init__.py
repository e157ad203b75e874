"""LLM agents that train on agentenvs environments: GRPO-style RL with a choice of credit rule, and SFT.

:class:`GRPOAgent` trains with any registered credit rule (``GRPOConfig(credit=...)``: ``grpo``,
``rloo``, ``gigpo``, ``orsd``, ``taspo``); :class:`ORSDAgent` and :class:`TASPOAgent` are
``GRPOAgent`` with ``credit`` set to their rule. :class:`agents.sft.SFTAgent` clones an env's
expert (the warm start for multi-turn RL), and :class:`OpenAIPolicy` evaluates a model served
behind any OpenAI-compatible endpoint.

What each subpackage holds is written down once, in the README's *Layout*; the interfaces a new
policy backend or credit rule plugs into are in ``docs/interfaces.md``.

The OpenAI Agents SDK (``openai-agents``) installs a top-level ``agents`` package too: importing
this one checks for it and says what to do (:mod:`agents._clash`; keep the two in separate
virtual environments); it also checks that ``agentenvs`` is the installed package and not a
folder of that name in the working directory (:mod:`agents._shadow`).

Example:
    >>> from agents import GRPOConfig  # imported on first use (see _HOMES)
    >>> GRPOConfig(num_groups=2).rollouts_per_step
    8
"""

from typing import TYPE_CHECKING

# First: _clash checks for the OpenAI Agents SDK's `agents` before a module of the other one breaks,
# and _shadow that `agentenvs` is the installed package, not a folder of that name here.
from agents import _clash, _shadow  # noqa: F401

if TYPE_CHECKING:
    from agents.agent import GRPOAgent, ORSDAgent, TASPOAgent, build_policy
    from agents.algorithms import CREDIT_RULES, CreditContext, CreditRule, make_credit_rule, register_credit_rule
    from agents.collection.collector import Collector
    from agents.config import GRPOConfig
    from agents.policy.openai_policy import OpenAIPolicy
    from agents.rollout import RolloutBatch, RolloutRow
    from agents.settings import EnvSettings, LoraSettings, OptimSettings, PromptSettings, RunSettings
    from agents.sft import SFTAgent, SFTConfig
    from agents.training.trainer import Trainer

_HOMES = {
    "agents.agent": ("GRPOAgent", "ORSDAgent", "TASPOAgent", "build_policy"),
    "agents.algorithms": ("CREDIT_RULES", "CreditContext", "CreditRule", "make_credit_rule", "register_credit_rule"),
    "agents.collection.collector": ("Collector",),
    "agents.config": ("GRPOConfig",),
    "agents.policy.openai_policy": ("OpenAIPolicy",),
    "agents.rollout": ("RolloutBatch", "RolloutRow"),
    "agents.settings": ("EnvSettings", "LoraSettings", "OptimSettings", "PromptSettings", "RunSettings"),
    "agents.sft": ("SFTAgent", "SFTConfig"),
    "agents.training.trainer": ("Trainer",),
}
"""Where each public name lives. They import on first use (PEP 562), so ``import agents`` and
``python -m agents --help`` do not wait for torch and transformers."""
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "CREDIT_RULES",
    "Collector",
    "CreditContext",
    "CreditRule",
    "EnvSettings",
    "GRPOAgent",
    "GRPOConfig",
    "LoraSettings",
    "ORSDAgent",
    "OpenAIPolicy",
    "OptimSettings",
    "PromptSettings",
    "RolloutBatch",
    "RolloutRow",
    "RunSettings",
    "SFTAgent",
    "SFTConfig",
    "TASPOAgent",
    "Trainer",
    "build_policy",
    "make_credit_rule",
    "register_credit_rule",
]


def __getattr__(name: str) -> object:
    if name not in _HOME_OF:
        raise AttributeError(f"module 'agents' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_HOME_OF[name]), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _require_training_stack() -> None:
    """The agents train with torch: a core-only install (the envs alone) says what to add. Looks the
    packages up without importing them (torch takes seconds)."""
    import importlib.util

    for package in ("torch", "transformers"):
        try:
            found = importlib.util.find_spec(package) is not None
        except ValueError:  # in sys.modules as None: an import of it is refused
            found = False
        if not found:
            raise ImportError(
                'agents needs torch and transformers: pip install "agentenvs[train,models]" (pin torch==2.13.0 '
                "for the CPU build); the envs alone (agentenvs) do not"
            )


_require_training_stack()
