"""The policy's weights: the causal LM, its optional LoRA adapter, the reference model, the trainable state.

:meth:`PolicyWeights.load` reads a local model folder (:func:`agents.policy.models.resolve_model`
finds it) in eval mode (no dropout: old and new log-probs must come from the same function). With
:class:`LoraOptions` it wraps the model in a peft adapter, on every layer or on the top layers
only (then the layers below are a frozen trunk, :mod:`agents.policy.trunk`). The reference for KL
is the same model with the adapter switched off, or, without LoRA, a frozen copy.

Example:
    >>> LoraOptions(rank=0)
    Traceback (most recent call last):
    ...
    ValueError: lora.rank must be >= 1, got 0
    >>> torch_dtype("bfloat16")
    torch.bfloat16
"""

from __future__ import annotations

import contextlib
import copy
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from agents.policy.trunk import decoder_and_head, trunk_layer
from agents.policy.trunk_precision import TrunkDtype, lower_trunk, resolve_trunk_dtype


@dataclass(frozen=True)
class LoraOptions:
    """LoRA adapter settings (peft).

    Attributes:
        rank: Adapter rank r.
        alpha: Scaling numerator (scale = alpha / r).
        dropout: Dropout on the adapter input (keep 0 for exact on-policy ratios).
        target_modules: Module names to adapt, or ``"all-linear"``.
        top_layers: Adapt only the last N transformer layers (None: all). The layers
            below then need no backward pass, which makes updates much cheaper on CPU.
    """

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: str | tuple[str, ...] = "all-linear"
    top_layers: int | None = None

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"lora.rank must be >= 1, got {self.rank}")
        if self.top_layers is not None and self.top_layers < 1:
            raise ValueError(f"lora.top_layers must be None or >= 1, got {self.top_layers}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"lora.dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class WeightSettings:
    """What :meth:`PolicyWeights.load` builds: dtypes, device, attention backend, adapter, reference.

    Attributes:
        dtype: Parameter dtype by name (``"float32"`` on CPU).
        trunk_dtype: Run the frozen trunk (the layers under LoRA's top layers) in bf16:
            ``"bfloat16"``, ``"auto"`` (where the device has bf16 units) or None (``dtype``);
            see :mod:`agents.policy.trunk_precision`.
        device: Torch device.
        attn_implementation: Transformers attention backend.
        lora: Train a LoRA adapter instead of all weights (None: full fine-tuning).
        reference: Keep a reference model for KL: with LoRA it is the base model (adapter
            disabled); without, a frozen copy is made.
    """

    dtype: str = "float32"
    trunk_dtype: TrunkDtype | None = None
    device: str = "cpu"
    attn_implementation: str = "sdpa"
    lora: LoraOptions | None = None
    reference: bool = False

    def __post_init__(self) -> None:
        torch_dtype(self.dtype)  # a wrong name fails here, before any weight loads
        torch.device(self.device)


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype called ``name``.

    Raises:
        ValueError: for a name that is no torch dtype.
    """
    if not hasattr(torch, name) or not isinstance(getattr(torch, name), torch.dtype):
        raise ValueError(f"dtype must name a torch dtype (e.g. 'float32'), got {name!r}")
    return getattr(torch, name)


def lora_model(base: Any, lora: LoraOptions) -> Any:
    """``base`` wrapped in a peft LoRA adapter (eval mode) as ``lora`` asks."""
    from peft import LoraConfig, get_peft_model

    target = lora.target_modules if isinstance(lora.target_modules, str) else list(lora.target_modules)
    layers = None
    if lora.top_layers is not None:
        total = int(base.config.num_hidden_layers)
        layers = list(range(max(0, total - lora.top_layers), total))
        if target == "all-linear":  # peft wants explicit names with layers_to_transform
            target = sorted(
                {
                    name.rsplit(".", 1)[-1]
                    for name, module in base.named_modules()
                    if isinstance(module, torch.nn.Linear) and ".layers." in f".{name}"
                }
            )
    config = LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=target,
        layers_to_transform=layers,
        layers_pattern="layers" if layers is not None else None,
    )
    with warnings.catch_warnings():
        # peft reads ``model.is_gradient_checkpointing``, which transformers 5 deprecates (a
        # FutureWarning on every run that is peft's to change, not ours); nothing else is hidden.
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        model = get_peft_model(base, config)
    model.eval()
    return model


class PolicyWeights:
    """The model a policy samples and scores with, its reference, and what the optimizer updates.

    Args:
        model: The causal LM (a peft model with LoRA).
        lora: The adapter's settings (None: full fine-tuning).
        reference_copy: Without LoRA, a frozen copy of the model to use as the reference (or None).
    """

    def __init__(self, model: Any, lora: LoraOptions | None = None, reference_copy: torch.nn.Module | None = None):
        self.model = model
        self.lora = lora
        self.reference_copy = reference_copy
        self.trunk_layer = trunk_layer(int(model.config.num_hidden_layers), lora.top_layers if lora else None)
        """The first adapted layer when LoRA adapts the top layers only (the layers below are a frozen trunk)."""
        bottom = decoder_and_head(model)[0].layers[0] if self.trunk_layer is not None else model
        self.trunk_dtype: torch.dtype = next(bottom.parameters()).dtype
        """The dtype the layers under :attr:`trunk_layer` run in (:meth:`load`'s ``trunk_dtype``)."""

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        settings: WeightSettings | None = None,
    ) -> PolicyWeights:
        """Loads a local model folder, adds the adapter (``settings.lora``) or a frozen reference copy
        (``settings.reference``).

        ``settings.trunk_dtype`` (:func:`~agents.policy.trunk_precision.resolve_trunk_dtype`) runs the
        layers under LoRA's top layers in bf16; it is checked before the weights load.
        """
        from transformers import AutoConfig, AutoModelForCausalLM

        settings = settings or WeightSettings()
        dtype, trunk_dtype, lora = torch_dtype(settings.dtype), settings.trunk_dtype, settings.lora
        attn_implementation, reference = settings.attn_implementation, settings.reference
        device = torch.device(settings.device)
        config = AutoConfig.from_pretrained(path)  # read once: checked here, then the model is built from it
        first_adapted = trunk_layer(int(config.num_hidden_layers), lora.top_layers if lora else None)
        lowered = resolve_trunk_dtype(trunk_dtype, dtype=dtype, device=device, has_trunk=first_adapted is not None)
        base: Any = AutoModelForCausalLM.from_pretrained(
            path, config=config, dtype=dtype, attn_implementation=attn_implementation
        )
        base = base.to(device)
        base.eval()  # no dropout: old and new log-probs must come from the same function
        if lora is None:
            return cls(base, None, copy.deepcopy(base).requires_grad_(False) if reference else None)
        model = lora_model(base, lora)
        if first_adapted is not None and lowered != dtype:
            lower_trunk(model, first_adapted, lowered)
        return cls(model, lora)

    @property
    def has_reference(self) -> bool:
        """Whether :meth:`reference_model` has a model to give."""
        return self.lora is not None or self.reference_copy is not None

    @contextlib.contextmanager
    def reference_model(self) -> Iterator[torch.nn.Module]:
        """The frozen reference: the base model with the adapter off, or the frozen copy."""
        if self.lora is not None:
            with self.model.disable_adapter():
                yield self.model
        elif self.reference_copy is not None:
            yield self.reference_copy
        else:
            raise RuntimeError("this policy keeps no reference model; build it with reference=True or lora=...")

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters the optimizer updates (adapter only with LoRA)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def trainable_state_dict(self) -> dict[str, torch.Tensor]:
        """The trainable weights by name (what a checkpoint must restore)."""
        return {name: p.detach().clone() for name, p in self.model.named_parameters() if p.requires_grad}

    def load_trainable_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restores :meth:`trainable_state_dict` output.

        Raises:
            KeyError: naming missing or unexpected weights.
        """
        params = dict(self.model.named_parameters())
        expected = {name for name, p in params.items() if p.requires_grad}
        if set(state) != expected:
            missing, extra = sorted(expected - set(state))[:3], sorted(set(state) - expected)[:3]
            raise KeyError(f"checkpoint weights do not match the model (missing {missing}, unexpected {extra})")
        with torch.no_grad():
            for name, tensor in state.items():
                params[name].copy_(tensor)
