"""Lower-precision weights for the frozen trunk: are they a speed lever for the CPU decode loop?

Issue #27 listed bf16 or int8 weights for the frozen trunk (the layers under the LoRA ones) as a
lever "if they keep log-probs within tolerance". This measures, on SmolLM2-135M with the quick
start's shapes (16 rows, a 250-token prompt, 24 decode steps), the prefill and per-step decode
time of each variant as a ratio to fp32 in the same process, and how far its log-probs move
(max and mean |Δ log p| over the vocabulary at 120 positions):

- ``int8-trunk``: ``torch.ao.quantization.quantize_dynamic`` (per-channel int8 weights, int8
  activations quantized per call) on every Linear of the layers under the top 4;
- ``bf16``: the whole model in bfloat16;
- ``bf16-trunk``: the layers under the top 4 in bfloat16, the rest in float32: what
  ``trunk_dtype="bfloat16"`` does (:func:`agents.policy.trunk_precision.lower_trunk`).

Usage: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/trunk_precision.py``

Measured 2026-12-03, Intel(R) Xeon(R) Processor (2 cores, AMX and AVX-512 bf16; idle; fp32:
prefill 5.03 s, decode 107 ms a step)::

    int8-trunk  prefill 0.78x  decode 0.78x  max|dlogp| 16.89  mean 1.178
    bf16        prefill 0.30x  decode 0.61x  max|dlogp| 1.01  mean 0.066
    bf16-trunk  prefill 0.56x  decode 0.73x  max|dlogp| 1.08  mean 0.049

int8 dynamic quantization is refused: it moves the log-probs by more than a nat on average
(SmolLM2's activations have outlier channels that one scale per row cannot hold). The bf16
trunk is what the recipes use where the CPU has bf16 units (``trunk_dtype="auto"``): its
log-probs move by 0.05 nats on average over the vocabulary, while the RL update, which runs the
top layers on the trunk states the rollout kept, sees the rollout's log-probs to 1e-5 (the
importance ratio starts at 1). The whole model in bf16 is faster still, but its adapter, head and
update would run in bf16 too. Machines of this kind without AVX-512 bf16 or AMX (the slow AMD
EPYC issue #27 was timed on) emulate bf16, so ``"auto"`` keeps float32 there. Emulated on the
same Xeon by limiting both kernel libraries to AVX2 (``ATEN_CPU_CAPABILITY=avx2
ONEDNN_MAX_CPU_ISA=AVX2``; fp32 prefill 6.25 s, decode 103 ms a step)::

    int8-trunk  prefill 0.59x  decode 0.74x  max|dlogp| 17.07  mean 1.185
    bf16        prefill 6.18x  decode 1.72x  max|dlogp| 1.05  mean 0.066
    bf16-trunk  prefill 4.29x  decode 1.46x  max|dlogp| 1.07  mean 0.049

so without bf16 units a bf16 trunk would cost 1.46x a decode step and 4.3x a prefill.
"""

from __future__ import annotations

import argparse
import copy
import time
import warnings
from collections.abc import Iterator

import torch
from transformers import AutoModelForCausalLM, DynamicCache

from agentenvs.testing.machine import cpu_model
from agents.policy.decoding import cache_keyword
from agents.policy.models import resolve_model
from agents.policy.trunk_precision import lower_trunk


def variants(base: torch.nn.Module, top_layers: int) -> Iterator[tuple[str, torch.nn.Module]]:
    yield "fp32", base
    quantized = copy.deepcopy(base)
    layers = quantized.model.layers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notice
        for index in range(len(layers) - top_layers):
            layers[index] = torch.ao.quantization.quantize_dynamic(
                layers[index], {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}, dtype=torch.qint8
            )
    yield "int8-trunk", quantized
    yield "bf16", copy.deepcopy(base).to(torch.bfloat16)
    lowered = copy.deepcopy(base)
    lower_trunk(lowered, len(lowered.model.layers) - top_layers, torch.bfloat16)
    yield "bf16-trunk", lowered


@torch.no_grad()
def measure(model: torch.nn.Module, ids: torch.Tensor, steps: int) -> tuple[float, float, torch.Tensor]:
    """Prefill seconds, seconds per decode step (second of two runs) and log-probs of a short prefix."""
    keyword = cache_keyword(model)  # the cache argument's name in this transformers version
    for _ in range(2):
        started = time.perf_counter()
        cache = DynamicCache()
        out = model(input_ids=ids, use_cache=True, **{keyword: cache})
        prefill = time.perf_counter() - started
        token = out.logits[:, -1:].argmax(-1)
        started = time.perf_counter()
        for _ in range(steps):
            out = model(input_ids=token, use_cache=True, **{keyword: cache})
            token = out.logits[:, -1:].argmax(-1)
        decode = (time.perf_counter() - started) / steps
    logprobs = torch.log_softmax(model(input_ids=ids[:2, :60]).logits.float(), -1)
    return prefill, decode, logprobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--prompt-tokens", type=int, default=250)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--top-layers", type=int, default=4, help="layers left in fp32 (the LoRA ones)")
    args = parser.parse_args()
    base = AutoModelForCausalLM.from_pretrained(resolve_model(args.model), dtype=torch.float32).eval()
    ids = torch.randint(100, 40000, (args.rows, args.prompt_tokens), generator=torch.Generator().manual_seed(0))
    print(
        f"{cpu_model()}, {torch.get_num_threads()} threads; {args.model}, {args.rows} rows x {args.prompt_tokens} tokens"
    )
    results = {name: measure(model, ids, args.steps) for name, model in variants(base, args.top_layers)}
    fp32_prefill, fp32_decode, reference = results["fp32"]
    print(f"fp32        prefill {fp32_prefill:.2f} s  decode {fp32_decode * 1000:.0f} ms a step")
    for name, (prefill, decode, logprobs) in results.items():
        if name != "fp32":
            moved = (logprobs - reference).abs()
            print(
                f"{name:<11} prefill {prefill / fp32_prefill:.2f}x  decode {decode / fp32_decode:.2f}x  "
                f"max|dlogp| {moved.max():.2f}  mean {moved.mean():.3f}"
            )


if __name__ == "__main__":
    main()
