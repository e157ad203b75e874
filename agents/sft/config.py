"""Typed settings of a behaviour-cloning (SFT) run on expert demonstrations.

The prompt, env, optimiser, LoRA and run fields come from the same groups as
:class:`agents.config.GRPOConfig`'s (:mod:`agents.settings`), so they mean the same in both
stages: give both runs the same :class:`~agents.settings.PromptSettings` and
:class:`~agents.settings.EnvSettings` and the SFT examples are the prompts RL will show
(an RL run started from an SFT run warns when they differ).

Example:
    >>> SFTConfig(epochs=2).epochs
    2
    >>> SFTConfig(invalid_action_rate=1.5)
    Traceback (most recent call last):
    ...
    ValueError: SFTConfig.invalid_action_rate must be a finite number in [0, 1), got 1.5
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from agentenvs.core.checks import NON_EMPTY, Bounds
from agentenvs.core.registration import env_constructor
from agents.recipes import sft_settings
from agents.settings import (
    Count,
    EnvSettings,
    EvalSettings,
    LoraSettings,
    OptimSettings,
    PromptSettings,
    ResponseSettings,
    RunSettings,
)

PROMPT_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(PromptSettings))
"""Fields that decide the prompt text, shared in name and meaning with ``GRPOConfig``."""


@dataclass
class SFTConfig(LoraSettings, OptimSettings, ResponseSettings, EvalSettings, PromptSettings, EnvSettings, RunSettings):
    """Demonstrations, optimisation, evaluation and logging settings of one SFT run.

    The fields of the shared groups in :mod:`agents.settings` (with the SFT defaults in ``DEFAULTS``
    where they differ: a higher learning rate, LoRA on), plus the SFT ones. The run's folder holds
    its metrics, a checkpoint per epoch and the LoRA adapter (``adapter/``; the merged model in
    ``model/`` with ``save_merged_model``, the whole model there without LoRA).
    """

    # -- demonstrations ------------------------------------------------------------------
    expert_episodes: Count = 32
    """Expert episodes played on the training split (each gives one example per expert turn)."""
    invalid_action_rate: Annotated[float, Bounds(0.0, 1.0, max_inclusive=False)] = 0.0
    """Chance per expert turn of a broken action first (its feedback then sits in the prompt)."""
    demonstrations_path: Annotated[str | None, NON_EMPTY] = None
    """A JSONL file of further demonstrations, cloned beside the expert's: one object a line with
    a ``prompt`` and a ``response`` string (``task_id`` and ``turn_index`` optional), as a run's
    ``demonstrations.jsonl`` holds (None: the expert's alone). Read, and checked, before the model
    loads."""
    extra_expert_turns: dict[str, Count] = dataclasses.field(default_factory=dict)
    """Further expert turns of the named action kinds, cloned beside the expert's episodes: e.g.
    ``{"option": 128}``, WebShop's option clicks (the env's ``action_kinds`` name the kinds; checked
    before the model loads). They come from further expert episodes on the training tasks, of which
    only the turns of the kind are kept (:func:`agents.sft.demonstrations.collect_turns_of_kind`)."""
    DEFAULTS: ClassVar[Mapping[str, Any]] = {
        "learning_rate": 2e-4,
        "lora": True,  # the run saves the adapter (a few MB)
        "eval_episodes": 32,  # played greedily after training (and before, with eval_before); 0: none
        "max_new_tokens": 64,  # at evaluation
    }

    # -- optimisation ------------------------------------------------------------------------
    epochs: Count = 2
    """Passes over the demonstrations."""
    batch_size: Count = 8
    """Demonstrations per optimizer step (the loss is the mean over their response tokens)."""
    # -- evaluation ----------------------------------------------------------------------------
    eval_before: bool = False
    """Evaluate the model before cloning too (the run's step 0). Off by default, as in every recipe: a
    bare chat model plays every WebShop and ALFWorld turn invalid, and the evaluation costs as much as
    the one after cloning."""

    # -- saving ---------------------------------------------------------------------------------
    save_merged_model: bool = False
    """With LoRA, also save the model with the adapter merged in (``model/``, the base's size) beside
    the adapter; an RL run starting from the run folder merges the adapter itself otherwise."""

    RESUME_MAY_CHANGE: ClassVar[frozenset[str]] = RunSettings.RESUME_MAY_CHANGE | {
        "epochs",
        "eval_before",
        "save_merged_model",
    }
    """Besides the run fields, ``epochs`` (a resumed run may train for more epochs), ``eval_before``
    (a resumed run never evaluates before cloning) and ``save_merged_model`` (what is saved at the end)."""

    @classmethod
    def for_env(cls, env_id: str, **overrides: Any) -> SFTConfig:
        """The warm start of ``env_id``'s recipe (:mod:`agents.recipes`, the quick start's), with ``overrides``
        on top; it prompts as ``GRPOConfig.for_env(env_id)`` does.

        >>> SFTConfig.for_env("WebShop-v0").expert_episodes
        32

        Raises:
            ValueError: naming an env without a warm-start recipe, or a bad override.
        """
        return cls(**{**sft_settings(env_id), **overrides})

    def check_env(self, env_id: str) -> None:
        """The env settings' checks (:meth:`EnvSettings.check_env`), and that ``env_id`` names each kind
        of ``extra_expert_turns``."""
        super().check_env(env_id)
        if not self.extra_expert_turns:
            return
        kinds = getattr(env_constructor(env_id), "action_kinds", ())
        for kind in self.extra_expert_turns:
            if kind not in kinds:
                named = ", ".join(kinds) or "none"
                raise ValueError(
                    f"SFTConfig.extra_expert_turns names {kind!r}, an action kind {env_id} does not name (its kinds: {named})"
                )

    def prompt_settings(self) -> dict[str, Any]:
        """The fields that decide the prompt text (compare with an RL config's same fields)."""
        return dataclasses.asdict(PromptSettings.of(self))
