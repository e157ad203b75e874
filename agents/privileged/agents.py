"""``ORSDAgent`` and ``TASPOAgent``: ``GRPOAgent`` with the ORSD / TASPO credit rule.

Same constructor, ``learn``, ``evaluate`` and CLI config as :class:`~agents.agent.GRPOAgent`
(``config.credit`` is set to the agent's rule; rule knobs go in ``config.credit_options``).
The trainer adds the rule's statistics (``orsd/*``, ``taspo/*``) to every metrics record
and appends the rule's readable examples (selected rubric bundles / turn PI) to
``credit_examples.jsonl`` in the output folder at every evaluation step (this holds for
``python -m agents train --config.credit orsd`` too).

Example:
    >>> from agents.config import GRPOConfig
    >>> agent = ORSDAgent("tiny-random-qwen3", "SearchQA-v0", GRPOConfig(credit_options={"coef": 0.1}))  # doctest: +SKIP
    >>> agent.learn(total_steps=2)                                                                  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, ClassVar

from agents.agent import GRPOAgent, build_policy
from agents.algorithms.base import make_credit_rule
from agents.config import GRPOConfig
from agents.plotting import plot_learning_curve
from agents.trainer import METRICS_FILE, Trainer


class _PrivilegedAgent(GRPOAgent):
    credit: ClassVar[str] = ""
    title: ClassVar[str] = ""

    def __init__(
        self, model: str | os.PathLike[str] = "smollm2-135m", env: str = "SearchQA-v0", config: GRPOConfig | None = None
    ) -> None:
        config = config or GRPOConfig()
        if config.credit != self.credit:
            config = dataclasses.replace(config, credit=self.credit)
        self.config = config
        make_credit_rule(config.credit, config)  # bad options fail before the model loads, naming the field
        self.model_name = str(model)
        self.env_id = env
        self.policy = build_policy(model, config)
        self.trainer = Trainer(self.policy, env, config, model_name=self.model_name)

    def learn(self, total_steps: int, *, plot: bool = True) -> dict[str, Any]:
        record = self.trainer.learn(total_steps)
        if plot:
            plot_learning_curve(self.output_dir / METRICS_FILE, self.output_dir / "learning_curve.png",
                                title=f"{self.title} · {self.model_name} · {self.env_id}")
        return record


class ORSDAgent(_PrivilegedAgent):
    """GRPO plus ORSD rubric-based token shaping (``config.credit = "orsd"``)."""

    credit = "orsd"
    title = "ORSD"


class TASPOAgent(_PrivilegedAgent):
    """GRPO with TASPO action-level credit redistribution (``config.credit = "taspo"``)."""

    credit = "taspo"
    title = "TASPO"
