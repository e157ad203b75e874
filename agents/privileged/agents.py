"""``ORSDAgent`` and ``TASPOAgent``: ``GRPOAgent`` with the ORSD / TASPO credit rule.

Same constructor, ``learn``, ``evaluate`` and CLI config as :class:`~agents.agent.GRPOAgent`
(``config.credit`` is set to the agent's rule; rule knobs go in ``config.credit_options``).
The trainer adds the rule's statistics (``orsd/*``, ``taspo/*``) to every metrics record
and appends the rule's readable examples (selected rubric bundles / turn PI) to
``privileged_examples.jsonl`` in the output folder at every evaluation step.

Example:
    >>> from agents.config import GRPOConfig
    >>> agent = ORSDAgent("tiny-random-qwen3", "SearchQA-v0", GRPOConfig(credit_options={"coef": 0.1}))  # doctest: +SKIP
    >>> agent.learn(total_steps=2)                                                                  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, ClassVar

from agents.agent import GRPOAgent, build_policy
from agents.algorithms.base import make_credit_rule
from agents.config import GRPOConfig
from agents.plotting import plot_learning_curve
from agents.trainer import METRICS_FILE, Trainer

EXAMPLES_FILE = "privileged_examples.jsonl"


class PrivilegedTrainer(Trainer):
    """A :class:`~agents.trainer.Trainer` that also logs the credit rule's ``stats`` and ``examples``."""

    def train_step(self) -> dict[str, float]:
        metrics = super().train_step()
        metrics.update(getattr(self.credit_rule, "stats", {}) or {})
        examples = getattr(self.credit_rule, "examples", []) or []
        every = self.config.eval_every
        if examples and (self.step == 1 or (every and self.step % every == 0)):
            self.output_dir.mkdir(parents=True, exist_ok=True)
            with open(self.output_dir / EXAMPLES_FILE, "a", encoding="utf-8") as handle:
                for example in examples:
                    handle.write(json.dumps({"step": self.step, **example}, ensure_ascii=False) + "\n")
        return metrics


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
        self.trainer = PrivilegedTrainer(self.policy, env, config, model_name=self.model_name)

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
