"""Behaviour cloning (SFT) on the envs' own experts: the warm start of multi-turn RL.

- :mod:`agents.sft.demonstrations`: play an env's expert through the RL prompt builder;
- :mod:`agents.sft.trainer`: the masked response log-likelihood loss and its loop;
- :mod:`agents.sft.agent`: :class:`SFTAgent` (demonstrate, evaluate, fit, evaluate, save).
"""

from agents.sft.agent import MODEL_FOLDER, SFTAgent
from agents.sft.config import SFTConfig
from agents.sft.demonstrations import Demonstration, DemonstrationStats, collect_demonstrations

__all__ = ["MODEL_FOLDER", "Demonstration", "DemonstrationStats", "SFTAgent", "SFTConfig", "collect_demonstrations"]
