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
    >>> GRPOConfig(num_groups=2).rollouts_per_step
    8
"""

# First: _clash checks for the OpenAI Agents SDK's `agents` before a module of the other one breaks,
# and _shadow that `agentenvs` is the installed package, not a folder of that name here.
from agents import _clash, _shadow  # noqa: F401

try:  # the agents train with torch: a core-only install (the envs alone) says what to add
    import torch  # noqa: F401
except ImportError as error:
    raise ImportError(
        'agents needs torch and transformers: pip install "agentenvs[train,models]" (pin torch==2.13.0 '
        "for the CPU build); the envs alone (agentenvs) do not"
    ) from error
from agents.agent import GRPOAgent, ORSDAgent, TASPOAgent, build_policy
from agents.algorithms import CREDIT_RULES, CreditContext, CreditRule, make_credit_rule, register_credit_rule
from agents.collection.collector import Collector
from agents.config import GRPOConfig
from agents.policy.openai_policy import OpenAIPolicy
from agents.rollout import RolloutBatch, RolloutRow
from agents.settings import EnvSettings, LoraSettings, OptimSettings, PromptSettings, RunSettings
from agents.sft import SFTAgent, SFTConfig
from agents.training.trainer import Trainer

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
