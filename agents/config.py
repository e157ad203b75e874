"""Typed training configuration (a dataclass whose fields carry one-line docs, for tyro).

**Not TRL's** ``trl.GRPOConfig``, though it shares the class name: a field named as one of TRL's
(``num_iterations``, ``epsilon``, ``epsilon_high``, ``beta``, ``loss_type``, ``scale_rewards``,
``learning_rate``, ``weight_decay``, ``lr_scheduler_type``, ``warmup_steps``, ``max_grad_norm``,
``temperature``, ``top_p``, ``output_dir``, ``seed``) means what TRL's means and has TRL 1.16's
default (``learning_rate=1e-6``, ``lr_scheduler_type="linear"``, ``seed=42``); ``output_dir=None``
means a new numbered folder ``runs/<rule>-<env>-<n>`` here (TRL: ``trainer_output``). TRL names spelt differently here
(``num_generations`` is ``group_size``, ``max_completion_length`` is ``max_new_tokens``, ...) are
refused with the name to use (:mod:`agents.trl_names`, the mapping table in docs/agents.md). The quick
start's recipes set their own learning rate, schedule and seed.

The settings shared with the SFT stage come from the groups in :mod:`agents.settings`; every
field is checked once, at construction, and the error names it. The credit rule's options
(``credit_options``) are checked against the rule's own options class here too, so a bad rule
name or option fails before any model loads.

Example:
    >>> GRPOConfig(group_size=4).group_size
    4
    >>> GRPOConfig.for_env("WebShop-v0").max_new_tokens   # the per-env recipe (agents.recipes)
    32
    >>> GRPOConfig(loss_type="ppo")
    Traceback (most recent call last):
    ...
    ValueError: GRPOConfig.loss_type must be one of 'grpo', 'dapo', 'dr_grpo', got 'ppo'
    >>> GRPOConfig(credit="taspo", credit_options={"epsilon_w": -1.0})
    Traceback (most recent call last):
    ...
    ValueError: TASPOOptions.epsilon_w must be ...
    >>> GRPOConfig(num_generations=8)
    Traceback (most recent call last):
    ...
    TypeError: GRPOConfig got num_generations=...: num_generations is TRL's name; agents.GRPOConfig calls it group_size (rollouts per task, G)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from agentenvs.core.checks import NON_EMPTY, Bounds, require
from agents.algorithms import CREDIT_RULES, CreditChoice
from agents.algorithms.grpo import ScaleRewards
from agents.algorithms.loss import LossType
from agents.policy.decoding import Decode, check_compile_decode
from agents.policy.logprobs import Temperature
from agents.policy.sampler import TopP
from agents.recipes import rl_settings
from agents.settings import (
    Count,
    EnvSettings,
    EvalSettings,
    LoraSettings,
    NonNegative,
    OptimSettings,
    OptionValue,
    PromptSettings,
    ResponseSettings,
    RunSettings,
    Size,
)
from agents.trl_names import refuse_trl_names

__all__ = ["GRPOConfig", "OptionValue"]

DEFAULT_CREDIT = "grpo"


@refuse_trl_names
@dataclass
class GRPOConfig(LoraSettings, OptimSettings, ResponseSettings, EvalSettings, PromptSettings, EnvSettings, RunSettings):
    """Collection, credit, update, evaluation and logging settings of one training run.

    The fields of :class:`~agents.settings.RunSettings`, ``EnvSettings``, ``PromptSettings``,
    ``OptimSettings`` and ``LoraSettings`` (shared with ``SFTConfig``), with TRL's ``GRPOConfig``
    defaults for the learning rate, its schedule and the seed, plus the RL ones below.
    """

    DEFAULTS: ClassVar[Mapping[str, Any]] = {
        # TRL's GRPOConfig defaults (LoRA on a small model wants ~1e-3, as the quick start sets).
        "learning_rate": 1e-6,
        "lr_scheduler_type": "linear",  # down to 0 at the run's last optimizer step
        "seed": 42,
    }

    # -- collection --------------------------------------------------------------------
    num_groups: Count = 4
    """Tasks per training step (trajectory groups)."""
    group_size: Count = 4
    """Rollouts per task (G)."""
    temperature: Temperature = 1.0
    """Sampling temperature (log-probs are of the temperature-scaled distribution)."""
    top_p: TopP = 1.0
    """Nucleus-sampling threshold."""
    decode: Decode = "dynamic"
    """KV cache of the sampling loop: "dynamic" (grows per token) or "static" (fixed shapes)."""
    compile_decode: bool = False
    """torch.compile the static decode step (CUDA graphs on GPU); needs decode="static"."""
    rollout_mode: Literal["per_turn", "conversation"] = "per_turn"
    """"per_turn": each turn's prompt re-renders task and history; "conversation": one chat per
    episode that grows turn by turn (only new tokens encoded; a trajectory scored in one pass)."""
    vectorization_mode: Literal["sync", "async", "ray"] = "sync"
    """Where the envs run: this process, a subprocess each, or Ray actors holding whole groups ("ray")."""
    env_workers: Annotated[int | None, Bounds(1)] = None
    """Ray env workers with vectorization_mode="ray" (None: one per group; at most num_groups)."""
    rollout_workers: Size = 0
    """Ray rollout workers, each with a policy copy that loads the trained weights before every
    collection and plays a shard of the groups (0: collect in this process; at most num_groups)."""
    invalid_action_penalty: float = 0.1
    """Subtracted from a turn's reward when its action is invalid."""
    success_bonus: NonNegative = 0.0
    """Added to the training reward of the turn that wins an episode (``info["won"]``): tells a
    win from a near miss where the env scores partial matches (evaluation figures stay the env's)."""
    # -- credit ------------------------------------------------------------------------
    credit: Annotated[str, NON_EMPTY] = DEFAULT_CREDIT
    """Credit rule: a name registered in ``agents.algorithms.CREDIT_RULES``."""
    scale_rewards: ScaleRewards = "group"
    """Divide centred rewards by the group std, the batch std, or nothing."""
    advantage_eps: NonNegative = 1e-4
    """Added to the std when scaling rewards."""
    credit_options: dict[str, OptionValue] = field(default_factory=dict)
    """Options of the chosen credit rule (its options class's fields, e.g. ``TASPOOptions``)."""
    # -- update ------------------------------------------------------------------------
    num_iterations: Count = 1
    """Passes over each collected batch (μ in GRPO)."""
    mini_batches: Count = 1
    """Optimizer steps per pass (the batch split into this many parts)."""
    epsilon: Annotated[float, Bounds(0, 1, max_inclusive=False)] = 0.2
    """Lower clip range of the ratio."""
    epsilon_high: Annotated[float | None, Bounds(0)] = None
    """Upper clip range (None: same as ``epsilon``)."""
    loss_type: LossType = "dapo"
    """How token losses are averaged."""
    beta: NonNegative = 0.0
    """KL coefficient to the reference model (0: no reference kept)."""
    # -- evaluation, logging, checkpoints ----------------------------------------------
    eval_every: Size = 5
    """Evaluate every this many steps (0: only at the start and the end)."""
    eval_greedy: bool = True
    """Decode greedily at evaluation."""
    record_groups: Size = 2
    """Groups per training step whose per-token credit is written to ``credit/`` for the viewer
    (``python -m agents view``; mixed-outcome groups first; 0: none)."""
    save_every: Size = 5
    """Checkpoint every this many steps (0: only at the end)."""
    tensorboard: bool = True
    """Write TensorBoard event files."""

    @classmethod
    def for_env(cls, env_id: str, **overrides: Any) -> GRPOConfig:
        """The RL settings that train on ``env_id`` in minutes on 2 CPU cores (:mod:`agents.recipes`, the
        quick start's), with ``overrides`` on top.

        >>> GRPOConfig.for_env("WebShop-v0", output_dir="runs/shop").max_turns
        5

        Raises:
            ValueError: naming an env without a recipe, or a bad override (as the constructor does).
        """
        return cls(**{**rl_settings(env_id), **overrides})

    def check_relations(self) -> None:
        super().check_relations()
        owner = type(self).__name__
        require(
            not (self.prompt_lookup_num_tokens and self.decode != "dynamic"),
            owner,
            "prompt_lookup_num_tokens",
            "0 unless decode='dynamic' (rejected drafts stay in a growing cache as masked columns)",
            self.prompt_lookup_num_tokens,
        )
        check_compile_decode(owner, self.decode, self.compile_decode)
        if self.env_workers is not None:
            require(
                self.vectorization_mode == "ray",
                owner,
                "env_workers",
                "None unless vectorization_mode='ray'",
                self.env_workers,
            )
            require(
                self.env_workers <= self.num_groups,
                owner,
                "env_workers",
                f"None or an integer in [1, num_groups={self.num_groups}]",
                self.env_workers,
            )
        require(
            self.rollout_workers <= self.num_groups,
            owner,
            "rollout_workers",
            f"an integer in [0, num_groups={self.num_groups}]",
            self.rollout_workers,
        )
        require(
            not (self.rollout_workers and self.vectorization_mode == "ray"),
            owner,
            "rollout_workers",
            "0 with vectorization_mode='ray' (rollout workers run their shard's envs themselves)",
            self.rollout_workers,
        )
        require(
            not (self.rollout_mode == "conversation" and self.decode != "dynamic"),
            owner,
            "rollout_mode",
            "'per_turn' with decode='static' (a conversation's cache grows turn by turn)",
            self.rollout_mode,
        )
        require(self.eval_episodes >= 1, owner, "eval_episodes", "an integer >= 1", self.eval_episodes)
        require(
            self.credit in CREDIT_RULES,
            owner,
            "credit",
            f"a registered credit rule, one of {sorted(CREDIT_RULES)}",
            self.credit,
        )
        # Options with the default rule are for the rule an agent class sets later
        # (ORSDAgent(config=GRPOConfig(credit_options=...))); that replace parses them, before any model loads.
        self._credit_choice: tuple[str, dict[str, Any], CreditChoice] | None = None
        if not (self.credit == DEFAULT_CREDIT and self.credit_options):
            self.credit_choice  # noqa: B018  (parses and keeps the choice)

    @property
    def credit_choice(self) -> CreditChoice:
        """The rule ``credit`` names with ``credit_options`` typed, parsed once (again only if either field changed).

        Raises:
            ValueError: naming an unknown option or a bad value.
        """
        kept = self._credit_choice
        if kept is None or kept[:2] != (self.credit, dict(self.credit_options)):
            kept = self._credit_choice = (
                self.credit,
                dict(self.credit_options),
                CreditChoice.parse(self.credit, self.credit_options),
            )
        return kept[2]

    @property
    def rollouts_per_step(self) -> int:
        """Trajectories collected per training step."""
        return self.num_groups * self.group_size
