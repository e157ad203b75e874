"""LLM agents that train on agentenvs environments: GRPO-style RL with a choice of credit rule, and SFT.

:class:`GRPOAgent` trains with any registered credit rule (``GRPOConfig(credit=...)``: ``grpo``,
``rloo``, ``gigpo``, ``orsd``, ``taspo``); :class:`ORSDAgent` and :class:`TASPOAgent` are
``GRPOAgent`` with ``credit`` set to their rule. :class:`agents.sft.SFTAgent` clones an env's
expert (the warm start for multi-turn RL), and :class:`OpenAIPolicy` evaluates a model served
behind any OpenAI-compatible endpoint.

The Collector / Policy / Algorithm / Trainer split (see ``agents/README.md``):

- :mod:`agents.policy`: ``TransformersPolicy`` (generate, score) and offline models; ``OpenAIPolicy``
  (any OpenAI-compatible server, for evaluation and collection without gradients);
- :mod:`agents.collector`: groups of envs in lockstep → :class:`~agents.rollout.RolloutBatch`;
- :mod:`agents.algorithms`: credit rules (one registry, one signature) and the policy loss;
- :mod:`agents.trainer`: the loop, logs and checkpoints; :class:`GRPOAgent` ties them together;
- :mod:`agents.sft`: behaviour cloning on expert demonstrations (``SFTAgent``, ``SFTConfig``);
- :mod:`agents.distributed`: Ray rollout workers; :mod:`agents.viewer`: the credit viewer.

Example:
    >>> GRPOConfig(num_groups=2).rollouts_per_step
    8
"""

from agents.agent import GRPOAgent, ORSDAgent, TASPOAgent, build_policy
from agents.algorithms import CREDIT_RULES, CreditContext, CreditRule, make_credit_rule, register_credit_rule
from agents.collector import Collector
from agents.config import GRPOConfig
from agents.policy.openai_policy import OpenAIPolicy
from agents.rollout import RolloutBatch, RolloutRow
from agents.trainer import Trainer

__all__ = [
    "CREDIT_RULES",
    "Collector",
    "CreditContext",
    "CreditRule",
    "GRPOAgent",
    "GRPOConfig",
    "ORSDAgent",
    "OpenAIPolicy",
    "RolloutBatch",
    "RolloutRow",
    "TASPOAgent",
    "Trainer",
    "build_policy",
    "make_credit_rule",
    "register_credit_rule",
]
