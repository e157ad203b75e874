"""One GRPO training step on WebShop-v0: today's per-turn rollout and update vs the modes that recompute nothing.

Modes, each from the same seeds (tasks, sampling, LoRA initialisation), in one process with the
weights restored in between:

- ``today``: per-turn prompts (task and history re-rendered every turn), every row prefilled,
  Hugging Face's concatenating KV cache, the update runs the whole model over every row's
  prompt and response;
- ``per_turn+trunk``: the same prompts and the same sampled tokens, a group's shared first
  prompt prefilled once, the KV cache grown in place, and the update runs only the LoRA layers
  on the frozen trunk's kept hidden states (``trunk_cache``);
- ``conversation+trunk``: one chat per episode over one KV cache (only each turn's new tokens
  are encoded; ``rollout_mode="conversation"``), shared first prompts, and the update scores a
  whole trajectory in one pass of the LoRA layers on kept trunk states. Its prompts differ from
  the per-turn ones, so it samples other tokens (same seeds).

Printed per mode: wall seconds of collect / credit / update and the step, tokens fed to the first
decoder layer, layer-tokens (tokens times the decoder layers they pass, padding included) and
LM-head rows, per phase, and ratios to ``today``.

Usage (the figures below):
    nice -n 10 .venv/bin/python benchmarks/multiturn_step.py --model smollm2-135m

Measured once (2026-12-01; SmolLM2-135M, 30 layers, LoRA r=16 on the top 6; 2 groups x 4 rollouts,
up to 8 turns, 24 new tokens; 2 CPU cores shared with other jobs, load average 4-6, so every
wall time is ~3x what an idle machine gives and carries ~15% noise)::

    mode                 turns resp tok collect s credit s update s  step s    tokens   layer-tok
    today                   64     1428     427.6      0.0    193.0   620.6     43960     1318800
      collect                                                                   20736      622080
      update                                                                    23224      696720
    per_turn+trunk          64     1428     428.7      0.0     80.6   509.3     19968      737760
      collect                                                                   19968      599040
      update                                                                        0      138720
    conversation+trunk      64     1527     417.1      0.0     29.8   446.9      7216      264336
      collect                                                                    7216      216480
      update                                                                        0       47856

    per_turn+trunk      step 0.82x, layer-tokens 0.56x (update 0.42x; same sampled tokens)
    conversation+trunk  step 0.72x, layer-tokens 0.20x (update 0.15x; other sampled tokens)

The compute the modes were built to remove is gone (layer-tokens 0.20x, update 0.15x, prompt
tokens encoded 2.9x fewer), but the step stays at 0.72x, not the 0.4x aimed at, and far above
30 s: collection is bound by its 8 x 24 = 192 sequential decode steps (8 rows each, every weight
read once per step), which all modes share: an estimated ~300 of today's 428 collect seconds
(its 19.2k prefill tokens take ~120 s at the ~160 tokens/s this loaded machine gave), ~380 of the
conversation's 417 (its decode attends over the whole conversation), so even a free prefill and
a free update would leave today's step at ~0.5x. Shorter responses (a stop string
after WebShop's ``search[...]`` / ``click[...]``: the raw format has none, so almost every
response runs to 24 tokens) or fewer, larger decode batches are what would move it further.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import time
from collections.abc import Callable
from typing import Any

import torch

from agents.agent import build_policy
from agents.config import GRPOConfig
from agents.loop.trainer import Trainer
from agents.policy.decoding import DynamicDecoder

MODES: dict[str, dict[str, Any]] = {
    "today": {"rollout_mode": "per_turn", "trunk_cache": False, "share_prompts": False, "grow_in_place": False},
    "per_turn+trunk": {"rollout_mode": "per_turn", "trunk_cache": True, "share_prompts": True, "grow_in_place": True},
    "conversation+trunk": {
        "rollout_mode": "conversation",
        "trunk_cache": True,
        "share_prompts": True,
        "grow_in_place": True,
    },
}
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
    policy: Any, initial: dict[str, torch.Tensor], config: GRPOConfig, *, share_prompts: bool, grow_in_place: bool
) -> dict[str, Any]:
    """One ``train_step`` from the initial weights and seeds; wall times, compute counts and what was sampled."""
    policy.load_trainable_state_dict(initial)
    policy.generator.manual_seed(config.seed)
    policy.share_prompts = share_prompts
    policy.decoder = DynamicDecoder(policy.model, grow_in_place=grow_in_place)
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
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--top-layers", type=int, default=6, help="LoRA on the last N decoder layers")
    parser.add_argument("--micro-batch-size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    base = GRPOConfig(
        num_groups=args.groups,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens,
        env_kwargs={"max_turns": args.max_turns},
        lora=True,
        lora_top_layers=args.top_layers,
        micro_batch_size=args.micro_batch_size,
        seed=args.seed,
        progress=False,
        tensorboard=False,
        output_dir="/tmp/multiturn_step",
    )
    policy = build_policy(args.model, base)
    initial = policy.trainable_state_dict()
    layers = int(policy.model.config.num_hidden_layers)
    print(
        f"{args.model}: {layers} layers, LoRA on the top {args.top_layers}; WebShop-v0, {args.groups} groups x "
        f"{args.group_size}, up to {args.max_turns} turns, {args.max_new_tokens} new tokens; "
        f"{torch.get_num_threads()} torch threads"
    )
    results: dict[str, dict[str, Any]] = {}
    for name in args.modes:
        settings = dict(MODES[name])
        share, grow = settings.pop("share_prompts"), settings.pop("grow_in_place")
        config = dataclasses.replace(base, **settings)
        results[name] = run_mode(policy, initial, config, share_prompts=share, grow_in_place=grow)
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
    if "today" in results:
        today = results["today"]
        base_time = sum(today["metrics"][f"time/{phase}_s"] for phase in PHASES)
        base_layer = sum(today["meter"].get(p, "layer") for p in PHASES)
        print("\nratios to today (step wall time, layer-tokens; <1 is less):")
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
