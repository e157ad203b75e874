"""A bfloat16 frozen trunk: the layers under the adapted ones run in bf16, the rest as loaded.

With LoRA on the top N layers (:mod:`agents.policy.trunk`), the layers below are frozen and
carry no adapter. :func:`lower_trunk` casts their weights to ``bfloat16`` and hooks them so they
take bf16 inputs (hidden states, rotary cos/sin, a float mask) and hand float32 back to the first
adapted layer: the adapter, the final norm and the LM head stay in the parameter dtype. On a CPU
with bf16 units (AMX or AVX-512 BF16) a decode step reads half the trunk's bytes and multiplies
on those units (SmolLM2-135M with the top 4 layers adapted, 16 rows: decode 0.73x, prefill 0.56x
of float32 on a Xeon with AMX, ``benchmarks/trunk_precision.py``; the quick start 0.70x); on a CPU
without them bf16 is emulated and slower, which is why ``"auto"`` (:func:`resolve_trunk_dtype`)
picks it only where the units are.

It changes the model: log-probs move by a few hundredths of a nat from float32's. It does not
change the importance ratio: with a trunk the RL update and the reference (the adapter off) run
the top layers on the trunk states the rollout kept (``trunk_cache``, on by default), so they
see what the rollout saw and the ratio starts at 1 (tested to 1e-5). A full re-forward through
the bf16 trunk (``trunk_cache=False``) sums in another order and differs by ~1e-3 nats. A saved
model is written in the parameter dtype; its trunk holds the bf16-rounded weights it ran with.

Example:
    >>> resolve_trunk_dtype(None, dtype=torch.float32, device=torch.device("cpu"), has_trunk=True)
    torch.float32
    >>> resolve_trunk_dtype("bfloat16", dtype=torch.float32, device=torch.device("cpu"), has_trunk=True)
    torch.bfloat16
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from agents.policy.trunk import decoder_and_head

TrunkDtype = Literal["auto", "bfloat16"]
"""``"bfloat16"``: always; ``"auto"``: where the device computes in bf16 natively."""


def cpu_has_bf16_units() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AMX tiles or AVX-512 BF16) and torch may use them.

    A process whose kernels are limited below AVX-512 (``ATEN_CPU_CAPABILITY=avx2``) counts as
    having none: it would run bf16 through the slower emulated paths.
    """
    if not torch.backends.cpu.get_cpu_capability().startswith("AVX512"):
        return False
    checks = [getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
    return any(check is not None and bool(check()) for check in checks)


def resolve_trunk_dtype(
    name: TrunkDtype | None, *, dtype: torch.dtype, device: torch.device, has_trunk: bool
) -> torch.dtype:
    """The dtype the frozen trunk runs in.

    Args:
        name: None (the parameter dtype), ``"bfloat16"``, or ``"auto"`` (bf16 on a CUDA device
            or a CPU with bf16 units, when the parameters are float32 and there is a trunk).
        dtype: The parameter dtype.
        device: Where the model runs.
        has_trunk: Whether LoRA leaves frozen layers under the adapted ones.

    Raises:
        ValueError: for ``"bfloat16"`` without a trunk, or an unknown name.
    """
    if name is None:
        return dtype
    if name == "bfloat16":
        if not has_trunk:
            raise ValueError(
                "trunk_dtype='bfloat16' needs a frozen trunk: LoRA on the top layers only (lora_top_layers)"
            )
        return torch.bfloat16
    if name == "auto":
        native = device.type == "cuda" or (device.type == "cpu" and cpu_has_bf16_units())
        return torch.bfloat16 if has_trunk and dtype == torch.float32 and native else dtype
    raise ValueError(f"trunk_dtype must be None, 'auto' or 'bfloat16', got {name!r}")


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, tuple):
        return tuple(_cast(item, dtype) for item in value)
    return value


def lower_trunk(model: torch.nn.Module, first_adapted: int, dtype: torch.dtype) -> None:
    """Runs decoder layers ``0..first_adapted-1`` of ``model`` (peft or not) in ``dtype``.

    Their weights are cast in place; a pre-hook on each casts its floating inputs to ``dtype``,
    and a hook on the last one casts its output back to the dtype of the layers above.
    Nothing happens when ``dtype`` is already the trunk's.

    Raises:
        ValueError: if ``first_adapted`` leaves no layer below or none above.
    """
    decoder, _ = decoder_and_head(model)
    layers = decoder.layers
    if not 0 < first_adapted < len(layers):
        raise ValueError(f"the first adapted layer must be in 1..{len(layers) - 1}, got {first_adapted}")
    above = next(layers[first_adapted].parameters()).dtype
    if next(layers[0].parameters()).dtype == dtype:
        return

    def cast_inputs(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return _cast(args, dtype), {key: _cast(value, dtype) for key, value in kwargs.items()}

    def cast_output(module: torch.nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        return _cast(output, above)

    for layer in layers[:first_adapted]:
        layer.to(dtype)
        layer.register_forward_pre_hook(cast_inputs, with_kwargs=True)
    layers[first_adapted - 1].register_forward_hook(cast_output)
