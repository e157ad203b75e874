"""Agents: a model, an env and a config in one object with ``learn`` and ``evaluate``.

:class:`GRPOAgent` trains with ``config.credit`` (GRPO by default); :class:`ORSDAgent` and
:class:`TASPOAgent` are the same agent with the ORSD / TASPO credit rule set (rule knobs go
in ``config.credit_options``). The trainer adds a rule's statistics (``orsd/*``, ``taspo/*``)
to every metrics record and its readable examples (selected rubric bundles / turn PI) to
``credit_examples.jsonl`` at step 1, at evaluation steps and at the first step that has any.

Example:
    >>> from agents import GRPOAgent, GRPOConfig                                         # doctest: +SKIP
    >>> agent = GRPOAgent(model="smollm2-135m", env="SearchQA-v0", config=GRPOConfig())  # doctest: +SKIP
    >>> agent.learn(total_steps=10)                                                      # doctest: +SKIP
    >>> agent.evaluate()["success_rate"]                                                 # doctest: +SKIP
    >>> ORSDAgent("tiny-random-qwen3", "SearchQA-v0", GRPOConfig(credit_options={"coef": 0.1}))  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any, ClassVar

import agentenvs  # noqa: F401  (registers the envs)
from agents.config import GRPOConfig
from agents.policy import DecodeSettings, TransformersPolicy
from agents.reports.plotting import plot_learning_curve
from agents.runs.folders import with_run_folder
from agents.settings import build_policy as build_policy_from_settings
from agents.training.trainer import METRICS_FILE, Trainer


def build_policy(model: str | os.PathLike[str], config: GRPOConfig, stop: tuple[str, ...] = ()) -> TransformersPolicy:
    """The ``TransformersPolicy`` an RL config asks for (:func:`agents.settings.build_policy` with its
    sampling, decode loop and, for a KL term, the reference model)."""
    return build_policy_from_settings(
        model,
        config,
        temperature=config.temperature,
        top_p=config.top_p,
        stop=stop,
        decoding=DecodeSettings(decode=config.decode, compile_decode=config.compile_decode),
        reference=config.beta > 0,
    )


class GRPOAgent:
    """Trains ``model`` on ``env`` with GRPO (or another registered credit rule).

    Args:
        model: ``"smollm2-135m"``, ``"tiny-random-qwen3"`` or a local model folder.
        env: A registered env id.
        config: The run's settings (default ``GRPOConfig()``).
    """

    credit: ClassVar[str | None] = None
    """The credit rule a subclass always uses (None: ``config.credit``)."""
    title: ClassVar[str] = "GRPO"
    """Shown in the learning-curve title."""

    def __init__(
        self, model: str | os.PathLike[str] = "smollm2-135m", env: str = "SearchQA-v0", config: GRPOConfig | None = None
    ) -> None:
        config = config or GRPOConfig()
        if self.credit is not None and config.credit != self.credit:
            config = dataclasses.replace(config, credit=self.credit)
        config = with_run_folder(config, config.credit, env)  # output_dir=None: a new runs/<rule>-<env>-<n>
        self.config = config
        config.credit_choice  # noqa: B018  (before the model loads: a bad option fails in a second, naming it)
        config.check_env(env)  # before the model loads: a misspelt env keyword fails in a second
        self.model_name = str(model)
        self.env_id = env
        self.policy = build_policy(model, self.config)
        self.trainer = Trainer(
            self.policy,
            env,
            self.config,
            model_name=self.model_name,
            policy_factory=functools.partial(build_policy, model, self.config),  # the rollout workers' copies
        )

    @property
    def output_dir(self) -> Path:
        """The run folder (``config.output_dir``, or the new one made when it was None)."""
        return self.trainer.output_dir

    def learn(
        self, total_steps: int, *, plot: bool = True, start_evaluation: dict[str, float] | None = None
    ) -> dict[str, Any]:
        """Trains for ``total_steps`` steps (resuming when ``config.resume``); writes the learning curve.

        ``start_evaluation``: the starting model's ``eval/*`` metrics, if already measured with
        this run's evaluation settings (logged as step 0 instead of evaluating again).
        """
        record = self.trainer.learn(total_steps, start_evaluation=start_evaluation)
        if plot:
            plot_learning_curve(
                self.output_dir / METRICS_FILE,
                self.output_dir / "learning_curve.png",
                title=f"{self.title} · {self.model_name} · {self.env_id}",
            )
        return record

    def evaluate(self, episodes: int | None = None) -> dict[str, float]:
        """Success rate, mean score, episode length and invalid-action rate on held-out tasks."""
        return self.trainer.evaluate(episodes)

    def save_pretrained(self, folder: str | os.PathLike[str]) -> None:
        """Saves the model (or adapter) and tokenizer in Hugging Face format."""
        self.policy.save_pretrained(folder)

    def close(self) -> None:
        self.trainer.close()


class ORSDAgent(GRPOAgent):
    """GRPO plus ORSD rubric-based token shaping (``config.credit = "orsd"``)."""

    credit = "orsd"
    title = "ORSD"


class TASPOAgent(GRPOAgent):
    """GRPO with TASPO action-level credit redistribution (``config.credit = "taspo"``)."""

    credit = "taspo"
    title = "TASPO"
