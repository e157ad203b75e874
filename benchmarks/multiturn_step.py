"""One GRPO training step of the quick start's WebShop recipe: each rollout/update path and lever, same seeds.

Modes, each one ``train_step`` from the same warm start, seeds (tasks, sampling) and LoRA
weights, in one process:

- ``plain``: per-turn prompts, every row prefilled in one pass, Hugging Face's concatenating KV
  cache, and an update that runs the whole model over every row's prompt and response;
- ``trunk``: the same prompts and sampled tokens, a prompt several rows share prefilled once (in
  one pass), the KV cache grown in place, and an update that runs only the LoRA layers on the
  frozen trunk's kept hidden states (``trunk_cache``), feeding a shared prompt once and skipping
  chains without advantage: the ratios' reference (95e5ccf's path, but for that update);
- ``trunk+passes``: plus the prefill in passes of at most 4 prompts of similar length (``prefill_rows``);
- ``trunk+passes+prefix``: plus the start every prompt shares prefilled once (``shared_prefix``):
  the quick start's path;
- ``trunk+bf16``: the quick start's path with the frozen trunk in bfloat16 (what the recipes'
  ``"auto"`` picks on a CPU with bf16 units); slightly other log-probs, so other sampled tokens;
- ``trunk+drafts``: plus prompt-lookup drafts (``prompt_lookup_num_tokens=4``); under sampling
  they draw other random numbers, so other tokens (same distribution);
- ``conversation+drafts``: one chat per episode over one KV cache (``rollout_mode="conversation"``:
  only each turn's new tokens encoded) with drafts. Its prompts are not the ones the warm start
  was cloned on, so it samples other (longer) episodes.

Printed per mode: wall seconds of collect / credit / update and the step, tokens fed to the first
decoder layer, layer-tokens (tokens times the decoder layers they pass, padding included) and
LM-head rows, per phase, and ratios to ``trunk``.

Usage (the warm start: the quick start's ``sft`` folder)::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/multiturn_step.py --model runs/quickstart-webshop/sft

Measured (2026-12-04, AMD EPYC without bf16 units, 2 cores, idle; the float32 quick start's warm
start; ``--modes plain trunk trunk+passes trunk+passes+prefix trunk+drafts``; passes of at most 4
prompts)::

    mode                 turns resp tok collect s credit s update s  step s    tokens   layer-tok head rows
    plain                   68      737      62.6      0.0     41.5   104.1     38418     1152540      1676
    trunk                   68      737      43.2      0.0      7.7    50.9     14355      467318      1490
    trunk+passes            68      737      35.8      0.0      8.1    44.0     11559      383438      1490
    trunk+passes+prefix     68      737      35.1      0.0      7.2    42.3     10568      353708      1495
    trunk+drafts            69      953      43.2      0.0      9.2    52.3     12751      428846      4010

    plain                step 2.04x, layer-tokens 2.47x (collect 1.45x, update 5.37x; same sampled tokens)
    trunk+passes         step 0.86x, layer-tokens 0.82x (collect 0.83x, update 1.05x; same sampled tokens)
    trunk+passes+prefix  step 0.83x, layer-tokens 0.76x (collect 0.81x, update 0.93x; same sampled tokens)
    trunk+drafts         step 1.03x, layer-tokens 0.92x (collect 1.00x, update 1.19x; other sampled tokens)

The day before, with passes of at most 8, ``trunk+passes`` was 0.90x (layer-tokens 0.86x) and
``trunk+passes+prefix`` 0.86x (0.80x): passes of 4 pad less. The update's spread over the trunk
modes (7.2-8.1 s on similar layer-tokens) is noise. The earlier measurement (an Intel Xeon with
AMX, before the passes, the shared start and the packed update; docs/multiturn-training.md) had
``trunk+bf16`` at 0.62x there: the bf16 trunk halves collection where the CPU has bf16 units.
Collection is the step's cost in float32, two thirds of it prefill.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import time
from collections.abc import Callable
from typing import Any

import torch

from agentenvs.testing.machine import cpu_model
from agents.agent import build_policy
from agents.config import GRPOConfig
from agents.policy.decoding import DynamicDecoder
from agents.policy.speculation import PromptLookup
from agents.training.trainer import Trainer

_TODAY = {  # the quick start's path: prompts shared, passes of 4, a shared start prefilled once
    "rollout_mode": "per_turn",
    "trunk_cache": True,
    "share_prompts": True,
    "grow_in_place": True,
    "prefill_rows": 4,
    "shared_prefix": 16,
    "prompt_lookup_num_tokens": 0,
}
MODES: dict[str, dict[str, Any]] = {
    "plain": {
        **_TODAY,
        "trunk_cache": False,
        "share_prompts": False,
        "grow_in_place": False,
        "prefill_rows": 0,
        "shared_prefix": 0,
    },
    "trunk": {**_TODAY, "prefill_rows": 0, "shared_prefix": 0},
    "trunk+passes": {**_TODAY, "shared_prefix": 0},
    "trunk+passes+prefix": _TODAY,
    "trunk+bf16": {**_TODAY, "trunk_dtype": "bfloat16"},
    "trunk+drafts": {**_TODAY, "prompt_lookup_num_tokens": 4},
    "conversation+drafts": {**_TODAY, "rollout_mode": "conversation", "prompt_lookup_num_tokens": 4},
}
BASELINE = "trunk"
"""The ratios' reference: the quick start's path when issue #27 was filed (95e5ccf)."""
PHASES = ("collect", "credit", "update")


class ComputeMeter:
    """Counts tokens through the decoder layers and the LM head, per phase (forward pre-hooks)."""

    def __init__(self, model: torch.nn.Module) -> None:
        causal = model.get_base_model() if hasattr(model, "get_base_model") else model
        self.layers = list(causal.get_decoder().layers)
        self.phase = "other"
        self.counts: dict[tuple[str, str], int] = {}
        self.handles = [
            layer.register_forward_pre_hook(self._hook(index == 0, "layer")) for index, layer in enumerate(self.layers)
        ]
        self.handles.append(causal.get_output_embeddings().register_forward_pre_hook(self._hook(False, "head")))

    def _hook(self, first: bool, kind: str) -> Callable[..., None]:
        def count(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
            hidden = args[0]
            tokens = hidden.shape[0] * hidden.shape[1] if hidden.dim() == 3 else hidden.shape[0]
            self.add(kind, tokens)
            if first:
                self.add("tokens", tokens)

        return count

    def add(self, kind: str, amount: int) -> None:
        key = (self.phase, kind)
        self.counts[key] = self.counts.get(key, 0) + int(amount)

    def during(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` with its compute counted under ``phase``."""

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            previous, self.phase = self.phase, phase
            try:
                return function(*args, **kwargs)
            finally:
                self.phase = previous

        return wrapped

    def get(self, phase: str, kind: str) -> int:
        return self.counts.get((phase, kind), 0)

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def run_mode(
    policy: Any,
    initial: dict[str, torch.Tensor],
    config: GRPOConfig,
    *,
    share_prompts: bool,
    grow_in_place: bool,
    prefill_rows: int,
    shared_prefix: int,
) -> dict[str, Any]:
    """One ``train_step`` from the initial weights and seeds; wall times, compute counts and what was sampled."""
    policy.load_trainable_state_dict(initial)
    policy.generator.manual_seed(config.seed)
    policy.share_prompts = share_prompts
    policy.sampler.prefill_rows, policy.sampler.shared_prefix = prefill_rows, shared_prefix
    policy.decoder = DynamicDecoder(policy.model, grow_in_place=grow_in_place)
    lookup = config.prompt_lookup_num_tokens
    policy.sampler.prompt_lookup = PromptLookup(lookup) if lookup else None
    trainer = Trainer(policy, "WebShop-v0", config)
    meter = ComputeMeter(policy.model)
    batches: list[Any] = []
    collect = trainer.collector.collect

    def collect_and_keep(*args: Any, **kwargs: Any) -> Any:
        collection = collect(*args, **kwargs)
        batches.append(collection.batch)
        return collection

    trainer.collector.collect = meter.during("collect", collect_and_keep)  # type: ignore[method-assign]
    trainer.credit_rule.compute = meter.during("credit", trainer.credit_rule.compute)  # type: ignore[method-assign]
    trainer.update = meter.during("update", trainer.update)  # type: ignore[method-assign]
    started = time.perf_counter()
    try:
        metrics = trainer.train_step()
    finally:
        meter.close()
        trainer.close()
    batch = batches[0]
    return {
        "metrics": metrics,
        "seconds": time.perf_counter() - started,
        "meter": meter,
        "responses": [batch.row_tokens(row)[1] for row in range(len(batch))],
        "turns": len(batch),
        "response_tokens": batch.num_tokens,
        "conversation_tokens": sum(
            len(batch.row_tokens(chain[-1])[0]) + len(batch.row_tokens(chain[-1])[1]) for chain in batch.prefix_chains()
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="e.g. a warm start: the quick start's sft folder")
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    # The quick start's WebShop recipe (agents.recipes): 5 turns, 32 new tokens, LoRA on the top 4 layers.
    base = GRPOConfig.for_env(
        "WebShop-v0",
        num_groups=args.groups,
        group_size=args.group_size,
        seed=args.seed,
        progress=False,
        tensorboard=False,
        output_dir="/tmp/multiturn_step",
    )
    base = dataclasses.replace(base, trunk_dtype=None)  # float32 unless a mode says otherwise
    policies = {None: build_policy(args.model, base)}
    policy = policies[None]
    initial = policy.trainable_state_dict()
    layers = int(policy.model.config.num_hidden_layers)
    print(
        f"{cpu_model()}; {args.model}: {layers} layers, LoRA on the top {base.lora_top_layers}; WebShop-v0 recipe, "
        f"{args.groups} groups x {args.group_size}, up to {base.max_turns} turns, {base.max_new_tokens} new tokens; "
        f"{torch.get_num_threads()} torch threads"
    )
    results: dict[str, dict[str, Any]] = {}
    for name in args.modes:
        settings = {"trunk_dtype": None, **MODES[name]}
        sampler = {
            name: settings.pop(name) for name in ("share_prompts", "grow_in_place", "prefill_rows", "shared_prefix")
        }
        config = dataclasses.replace(base, **settings)
        if config.trunk_dtype not in policies:  # the same initial weights, another trunk dtype
            policies[config.trunk_dtype] = build_policy(args.model, config)
        mode_policy = policies[config.trunk_dtype]
        results[name] = run_mode(mode_policy, initial, config, **sampler)
        print(f"  {name}: done in {results[name]['seconds']:.1f} s", flush=True)

    header = f"{'mode':<20}{'turns':>6}{'resp tok':>9}{'collect s':>10}{'credit s':>9}{'update s':>9}{'step s':>8}"
    header += f"{'tokens':>10}{'layer-tok':>12}{'head rows':>10}"
    print("\n" + header)
    for name, result in results.items():
        metrics, meter = result["metrics"], result["meter"]
        times = [metrics[f"time/{phase}_s"] for phase in PHASES]
        for phase, seconds in zip(("all", *PHASES), (sum(times), *times), strict=True):
            phases = PHASES if phase == "all" else (phase,)
            tokens = sum(meter.get(p, "tokens") for p in phases)
            layer_tokens = sum(meter.get(p, "layer") for p in phases)
            head = sum(meter.get(p, "head") for p in phases)
            label = name if phase == "all" else f"  {phase}"
            if phase == "all":
                row = f"{label:<20}{result['turns']:>6}{result['response_tokens']:>9}"
                row += "".join(f"{t:>{w}.1f}" for t, w in zip(times, (10, 9, 9), strict=True)) + f"{sum(times):>8.1f}"
            else:
                row = f"{label:<20}{'':>6}{'':>9}{'':>10}{'':>9}{'':>9}{seconds:>8.1f}"
            print(row + f"{tokens:>10}{layer_tokens:>12}{head:>10}")
    if BASELINE in results:
        today = results[BASELINE]
        base_time = sum(today["metrics"][f"time/{phase}_s"] for phase in PHASES)
        base_layer = sum(today["meter"].get(p, "layer") for p in PHASES)
        print(f"\nratios to {BASELINE} (step wall time, layer-tokens; <1 is less):")
        for name, result in results.items():
            step = sum(result["metrics"][f"time/{phase}_s"] for phase in PHASES)
            layer_tokens = sum(result["meter"].get(p, "layer") for p in PHASES)
            per_phase = ", ".join(
                f"{phase} {result['metrics'][f'time/{phase}_s'] / max(today['metrics'][f'time/{phase}_s'], 1e-9):.2f}x"
                for phase in PHASES
            )
            same = "same sampled tokens" if result["responses"] == today["responses"] else "other sampled tokens"
            print(
                f"  {name:<20} step {step / base_time:.2f}x, layer-tokens {layer_tokens / max(base_layer, 1):.2f}x "
                f"({per_phase}; {same})"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak memory {peak:.0f} MB")


if __name__ == "__main__":
    main()
