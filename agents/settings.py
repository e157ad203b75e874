"""Settings groups shared by the SFT and the RL stage, each field defined, documented and checked once.

A run's config is built from these groups (``GRPOConfig`` and ``SFTConfig`` inherit them, as
TRL's configs inherit ``TrainingArguments``), so the field names stay flat where users type
them (``GRPOConfig(learning_rate=...)``, ``--config.learning-rate``) while each meaning lives
in one place:

- :class:`PromptSettings`: what the prompt shows (both stages must agree, or SFT teaches
  prompts RL never shows);
- :class:`EnvSettings`: the env's keyword arguments and turn limit;
- :class:`OptimSettings`: AdamW, its schedule, clipping and micro-batching;
- :class:`LoraSettings`: the adapter and its frozen trunk;
- :class:`ResponseSettings`: response length and prompt-lookup drafting;
- :class:`EvalSettings`: the held-out evaluation;
- :class:`RunSettings`: output folder, resume, seed, device, dtype, progress bars.

A config that wants another default for a group's field names it in ``DEFAULTS`` (see
:class:`Settings`), so no field is declared twice.

Every field is checked at construction from its annotation (:func:`agentenvs.core.checks.check_fields`:
type, range, choices; NaN and infinity never pass) and relations between fields in
:meth:`Settings.check_relations`; the error names ``ClassName.field``. ``X.of(config)`` is the
group ``X`` of any config holding its fields (e.g. ``PromptSettings.of(sft) == PromptSettings.of(rl)``).

Example:
    >>> PromptSettings(history_length=3).history_length
    3
    >>> OptimSettings(learning_rate=float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: OptimSettings.learning_rate must be a finite number >= 0, got nan
    >>> OptimSettings(learning_rate="1e-5")
    Traceback (most recent call last):
    ...
    agentenvs.core.checks.WrongTypeError: OptimSettings.learning_rate must be a finite number >= 0, got '1e-5'
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol, TypeVar

from agentenvs.core.checks import NON_EMPTY, Bounds, Checked, require
from agentenvs.core.prompts import PromptBuilder
from agentenvs.core.registration import check_env_kwargs, env_constructor
from agents.policy import LoraOptions
from agents.policy.trunk_precision import TrunkDtype

if TYPE_CHECKING:
    import os

    from agents.policy import DecodeSettings, TransformersPolicy

OptionValue = bool | int | float | str
"""A scalar option value (tyro parses ``key value`` pairs from the command line)."""

Count = Annotated[int, Bounds(1)]
"""An integer >= 1."""
Size = Annotated[int, Bounds(0)]
"""An integer >= 0."""
NonNegative = Annotated[float, Bounds(0)]
"""A finite number >= 0."""
Positive = Annotated[float, Bounds(0, min_inclusive=False)]
"""A finite number > 0."""

DTYPES = ("float32", "bfloat16", "float16", "float64")
Dtype = Literal["float32", "bfloat16", "float16", "float64"]
LrSchedule = Literal["constant", "linear", "cosine"]

S = TypeVar("S", bound="Settings")


class Settings(Checked):
    """Base of a run's settings groups: each field checked once (:class:`~agentenvs.core.checks.Checked`),
    plus conversion to and from JSON and the view of one group in a whole config.

    A config that needs another default for a field of one of its groups says so in ``DEFAULTS``
    (a class attribute mapping field names to scalar defaults) instead of declaring the field again:
    the type, bounds and documentation stay the group's.

    >>> @dataclass
    ... class Quick(OptimSettings):
    ...     DEFAULTS: ClassVar[Mapping[str, Any]] = {"learning_rate": 1e-3}
    >>> Quick().learning_rate, OptimSettings().learning_rate, Quick(learning_rate=2.0).learning_rate
    (0.001, 1e-05, 2.0)
    """

    DEFAULTS: ClassVar[Mapping[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        defaults = cls.__dict__.get("DEFAULTS")
        if not defaults:
            return
        inherited: dict[str, Any] = {}
        for base in reversed(cls.__mro__[1:]):
            if dataclasses.is_dataclass(base):
                inherited.update(typing.get_type_hints(base, include_extras=True))
        annotations = cls.__dict__.get("__annotations__")
        if annotations is None:
            annotations = {}
            cls.__annotations__ = annotations
        for name, value in defaults.items():
            if name not in inherited or name in annotations:
                raise TypeError(f"{cls.__name__}.DEFAULTS: {name!r} is not a field of its settings groups")
            if not isinstance(value, bool | int | float | str | None):
                raise TypeError(f"{cls.__name__}.DEFAULTS: {name!r} must be a scalar, got {value!r}")
            annotations[name] = inherited[name]
            setattr(cls, name, value)

    @classmethod
    def of(cls: type[S], settings: Any) -> S:
        """This group's fields of ``settings`` (any config that holds them) as a ``cls``."""
        return cls(**{f.name: getattr(settings, f.name) for f in dataclasses.fields(cls)})  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON values."""
        return json.loads(json.dumps(dataclasses.asdict(self)))  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[S], data: dict[str, Any]) -> S:
        """Rebuilds settings; unknown keys are an error naming them."""
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown {cls.__name__} field(s): {unknown}")
        return cls(**data)


@dataclass
class RunSettings(Settings):
    """Where a run writes, how it starts, and on what it runs."""

    output_dir: Annotated[str | None, NON_EMPTY] = None
    """Folder for the run's metrics, checkpoints and outputs (None: a new folder
    ``runs/<rule>-<env>-<n>``, ``runs/sft-<env>-<n>`` for SFT, never one another run wrote; see
    :mod:`agents.runs.folders`)."""
    resume: bool = False
    """Continue from the newest intact checkpoint in ``output_dir`` (with the settings it was trained with;
    needs ``output_dir``)."""
    resume_changed_config: bool = False
    """Let ``resume`` continue with settings that differ from the run's saved ``config.json``
    (otherwise an error names the changed fields)."""
    seed: Size = 0
    """Seeds tasks, sampling and initialisation."""
    device: Annotated[str, NON_EMPTY] = "cpu"
    """Torch device."""
    dtype: Dtype = "float32"
    """Parameter dtype."""
    progress: bool = True
    """Show progress bars."""

    RESUME_MAY_CHANGE: ClassVar[frozenset[str]] = frozenset(
        {"output_dir", "resume", "resume_changed_config", "progress"}
    )
    """Fields a resume may change without ``resume_changed_config``: they do not change what is trained."""

    def check_relations(self) -> None:
        super().check_relations()
        require(
            not (self.resume and self.output_dir is None),
            type(self).__name__,
            "output_dir",
            "the folder of the run to continue when resume=True (None makes a new one)",
            self.output_dir,
        )


@dataclass
class EnvSettings(Settings):
    """The env a run plays: its keyword arguments and turn limit."""

    max_turns: Annotated[int | None, Bounds(1)] = None
    """Env step limit per episode (None: the env's default)."""
    env_kwargs: dict[str, OptionValue] = field(default_factory=dict)
    """Keyword arguments for the env (e.g. ``{"observation_mode": "text_compact"}``)."""
    eval_env_kwargs: dict[str, OptionValue] = field(default_factory=dict)
    """Evaluation-env overrides of ``env_kwargs`` (``split="test"`` is added where the env has
    splits), e.g. ``{"split": "eval"}`` to report on goals that were not used to tune a recipe."""

    def env_kwargs_with_limit(self) -> dict[str, Any]:
        """``env_kwargs`` with ``max_turns`` added when it is set."""
        kwargs: dict[str, Any] = dict(self.env_kwargs)
        if self.max_turns is not None:
            kwargs["max_turns"] = self.max_turns
        return kwargs

    def held_out_env_kwargs(self, env_id: str) -> dict[str, Any]:
        """``env_kwargs`` plus ``split=<held-out split>`` where the env declares one
        (``TextEnv.held_out_split``) and ``env_kwargs`` name none."""
        kwargs = self.env_kwargs_with_limit()
        held_out = getattr(env_constructor(env_id), "held_out_split", None)
        if held_out is not None and "split" not in kwargs:
            kwargs["split"] = held_out
        return kwargs

    def evaluation_env_kwargs(self, env_id: str) -> dict[str, Any]:
        """The evaluation env's keyword arguments: :meth:`held_out_env_kwargs`, then ``eval_env_kwargs``."""
        return {**self.held_out_env_kwargs(env_id), **self.eval_env_kwargs}

    def check_env(self, env_id: str) -> None:
        """Checks the env id, ``env_kwargs`` and ``eval_env_kwargs`` against its constructor.

        Called before any model loads, so a misspelt keyword fails in a second, naming the field.
        """
        check_env_kwargs(type(self).__name__, "env_kwargs", env_id, self.env_kwargs_with_limit())
        check_env_kwargs(type(self).__name__, "eval_env_kwargs", env_id, self.eval_env_kwargs)


@dataclass
class PromptSettings(Settings):
    """What each turn's prompt shows; the SFT and RL stages of one recipe must agree on all of it."""

    history_length: Size = 2
    """Past (observation, action) turns shown in the prompt (per_turn mode)."""
    history_observations: bool = True
    """Show past turns' observations in the prompt (False: their actions only, fewer tokens)."""
    show_admissible: bool = True
    """List the env's admissible actions in the prompt (False: fewer tokens where the observation
    shows the clickables anyway, e.g. WebShop pages)."""
    show_format: bool = True
    """End prompts with the env's output-format instruction."""
    prompt_preamble: str = "You are an agent solving a task step by step."
    """First line of every prompt ("" for none)."""
    system_prompt: str | None = None
    """System message (None: the chat template's default)."""
    response_prefix: str = ""
    """Text every response starts with (appended after the chat template, e.g. "<")."""

    def prompt_builder(self) -> PromptBuilder:
        """The prompt builder these settings describe (``system_prompt`` and ``response_prefix`` go to the policy)."""
        return PromptBuilder(
            history_length=self.history_length,
            history_observations=self.history_observations,
            show_admissible=self.show_admissible,
            show_format=self.show_format,
            preamble=self.prompt_preamble,
        )


@dataclass
class OptimSettings(Settings):
    """The optimiser (AdamW), its learning-rate schedule, gradient clipping and accumulation."""

    learning_rate: NonNegative = 1e-5
    """AdamW learning rate."""
    weight_decay: NonNegative = 0.0
    """AdamW weight decay."""
    lr_scheduler_type: LrSchedule = "constant"
    """Learning-rate schedule over the run's optimizer steps."""
    warmup_steps: Size = 0
    """Optimizer steps of linear warm-up."""
    micro_batch_size: Count = 8
    """Rows per forward/backward (SFT: demonstrations; RL conversation mode: whole trajectories);
    gradients accumulate up to an optimizer step's batch."""
    max_grad_norm: NonNegative = 1.0
    """Gradient clipping norm (0: no clipping)."""


@dataclass
class LoraSettings(Settings):
    """The LoRA adapter trained instead of all weights."""

    lora: bool = False
    """Train a LoRA adapter instead of all weights."""
    lora_rank: Count = 16
    """LoRA rank."""
    lora_alpha: Count = 32
    """LoRA alpha."""
    lora_top_layers: Annotated[int | None, Bounds(1)] = None
    """Adapt only the last N transformer layers (None: all; fewer layers, cheaper backward)."""
    trunk_dtype: TrunkDtype | None = None
    """Run the frozen layers under the adapted ones in bf16 (``"bfloat16"``; ``"auto"``: where the
    device multiplies bf16 natively, a CUDA GPU or a CPU with AMX / AVX-512 BF16; None: the
    parameter dtype). Faster where native; log-probs move by hundredths of a nat, the importance
    ratio not at all (:mod:`agents.policy.trunk_precision`)."""
    trunk_cache: bool | None = None
    """Compute the frozen layers' output once and train only the LoRA layers on it (RL: kept from
    the rollout; SFT: once per demonstration). Exact; ~hidden_size floats per token of CPU memory.
    None: on with lora and lora_top_layers."""

    def check_relations(self) -> None:
        super().check_relations()
        frozen_trunk = self.lora and self.lora_top_layers is not None
        require(
            self.trunk_dtype is None or frozen_trunk,
            type(self).__name__,
            "trunk_dtype",
            "None unless lora=True with lora_top_layers (only layers under the adapter are frozen)",
            self.trunk_dtype,
        )
        require(
            not (self.trunk_cache and not frozen_trunk),
            type(self).__name__,
            "trunk_cache",
            "None or False without lora=True and lora_top_layers (no frozen trunk to keep)",
            self.trunk_cache,
        )

    @property
    def use_trunk_cache(self) -> bool:
        """Whether training runs on kept trunk states (``trunk_cache``, or by default with LoRA on the top layers)."""
        if self.trunk_cache is not None:
            return self.trunk_cache
        return self.lora and self.lora_top_layers is not None

    def lora_options(self) -> LoraOptions | None:
        """The policy's adapter options (None: train all weights)."""
        if not self.lora:
            return None
        return LoraOptions(rank=self.lora_rank, alpha=self.lora_alpha, top_layers=self.lora_top_layers)


@dataclass
class ResponseSettings(Settings):
    """How long a response may be and how it is decoded, at collection and at evaluation alike."""

    max_new_tokens: Count = 128
    """Longest response per turn, in tokens."""
    prompt_lookup_num_tokens: Size = 0
    """Draft tokens per decoding step copied from the context (prompt-lookup speculative
    decoding, :mod:`agents.policy.speculation`; 0: off). Speed only: greedy decoding gives the
    same tokens and sampling the same distribution."""


@dataclass
class EvalSettings(Settings):
    """The held-out evaluation."""

    eval_episodes: Size = 16
    """Held-out tasks per evaluation, played once each (0: no evaluation, where the stage allows it)."""


class PolicyFields(Protocol):
    """The settings a local policy is built from: fields of :class:`RunSettings`, :class:`LoraSettings`,
    :class:`PromptSettings` and :class:`ResponseSettings` (``GRPOConfig`` and ``SFTConfig`` have them all)."""

    @property
    def dtype(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def trunk_dtype(self) -> TrunkDtype | None: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def response_prefix(self) -> str: ...
    @property
    def max_new_tokens(self) -> int: ...
    @property
    def prompt_lookup_num_tokens(self) -> int: ...
    def lora_options(self) -> LoraOptions | None: ...


def build_policy(
    model: str | os.PathLike[str],
    settings: PolicyFields,
    *,
    temperature: float = 1.0,
    top_p: float = 1.0,
    stop: tuple[str, ...] = (),
    decoding: DecodeSettings | None = None,
    reference: bool = False,
) -> TransformersPolicy:
    """The ``TransformersPolicy`` that ``settings`` ask for: the one mapping from the run's settings
    groups to the policy's (weights and adapter, sampling, chat, decoding, prefill), seeded.

    Args:
        model: A built-in model name, a local model folder or a run folder.
        settings: The run's settings (an RL or an SFT config).
        temperature, top_p, stop: Sampling (RL configs set them; SFT samples only to evaluate,
            greedily).
        decoding: The decode loop (None: the default dynamic cache).
        reference: Keep a frozen reference model (a KL term needs one).
    """
    import torch

    from agents.policy import (
        ChatSettings,
        DecodeSettings,
        PrefillSettings,
        SamplingSettings,
        TransformersPolicy,
        WeightSettings,
    )

    torch.manual_seed(settings.seed)
    return TransformersPolicy(
        model,
        weights=WeightSettings(
            dtype=settings.dtype,
            trunk_dtype=settings.trunk_dtype,
            device=settings.device,
            lora=settings.lora_options(),
            reference=reference,
        ),
        sampling=SamplingSettings(
            temperature=temperature, top_p=top_p, max_new_tokens=settings.max_new_tokens, stop=stop
        ),
        chat=ChatSettings(system_prompt=settings.system_prompt, response_prefix=settings.response_prefix),
        decoding=decoding or DecodeSettings(),
        prefill=PrefillSettings(prompt_lookup_num_tokens=settings.prompt_lookup_num_tokens),
        seed=settings.seed,
    )
