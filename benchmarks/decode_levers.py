"""The quick start's decoding with and without prompt-lookup drafts: wall time, forward passes, same tokens.

Runs the main job's two decoding phases with its own settings (``agents.cli.quickstart`` preset
``webshop``) on a warm-started model, each lever after the plain loop in the same process:

- ``evaluate``: the held-out evaluation (``--goals`` goals, greedy, one batch). Drafts must leave
  every token unchanged; the script checks it and says so.
- ``collect``: one RL collection (4 goals x 4 rollouts, temperature 1, the same seeds). Sampling
  with drafts draws other random numbers, so the tokens differ (same distribution); the figures
  are per generated token.

Usage (a warm start first: the SFT stage of the quick start, e.g.
``python -m agents quickstart`` writes it to ``runs/quickstart-webshop/sft/model``)::

    nice -n 10 .venv/bin/python benchmarks/decode_levers.py --model runs/quickstart-webshop/sft/model

Re-measured 2026-12-03 (Intel(R) Xeon(R) Processor, 2 cores; 32 report goals of the eval split):
greedy evaluation with 4 draft tokens 0.89x for the warm start (38.0 -> 34.0 s) and 1.25x for the
base SmolLM2-135M (44.1 -> 55.4 s: its drafts are rejected); identical tokens in both. The
recipes turned drafts off (docs/agents.md, "Prompt-lookup drafts").

``--decoders static compiled --lookups`` (no drafts) times the same evaluation with the static
cache and with its compiled step instead (same machine, same sitting, 2026-12-03; the warm start
of benchmarks/credit_quality.py): dynamic 53.4 s, static 50.6 s (0.95x), compiled 193.7 s on first
use (compilation) then 39.9 s (0.75x); identical tokens in all. Not adopted in the recipes: the
quick start's decoding would save about a quarter of ~5 minutes and pay ~2.5 minutes to compile.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import torch

from agentenvs.testing.machine import cpu_model
from agents.agent import build_policy
from agents.cli.quickstart import PRESETS
from agents.collection.collector import Collector
from agents.collection.evaluation import held_out_tasks
from agents.policy.decoding import DynamicDecoder
from agents.policy.speculation import PromptLookup


def run(policy: Any, collector: Collector, tasks: list[str], *, greedy: bool, lookup: int, seed: int) -> dict[str, Any]:
    """One collection with ``lookup`` draft tokens (0: the plain loop); its time, passes and tokens."""
    policy.sampler.prompt_lookup = PromptLookup(lookup) if lookup else None
    policy.generator.manual_seed(seed)
    passes = [0]
    feed, step = DynamicDecoder.feed, DynamicDecoder.step

    def counted_feed(self: DynamicDecoder, *args: Any, **kwargs: Any) -> Any:
        passes[0] += 1
        return feed(self, *args, **kwargs)

    def counted_step(self: DynamicDecoder, *args: Any, **kwargs: Any) -> Any:
        passes[0] += 1
        return step(self, *args, **kwargs)

    DynamicDecoder.feed, DynamicDecoder.step = counted_feed, counted_step  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        batch, stats = collector.collect(tasks, seed=seed, greedy=greedy)
        seconds = time.perf_counter() - started
    finally:
        DynamicDecoder.feed, DynamicDecoder.step = feed, step  # type: ignore[method-assign]
    responses = [ids[mask.bool()].tolist() for ids, mask in zip(batch.response_ids, batch.response_mask, strict=True)]
    return {
        "seconds": seconds,
        "passes": passes[0],
        "tokens": sum(len(r) for r in responses),
        "responses": responses,
        "success": stats.success_rate,
        "score": stats.mean_score,
    }


DECODERS = {"static": {"decode": "static"}, "compiled": {"decode": "static", "compile_decode": True}}
"""Decode paths besides the dynamic cache: ``GRPOConfig`` fields (docs/agents.md, Decoding)."""


def phase_collector(policy: Any, config: Any, *, greedy: bool, goals: int) -> Collector:
    """The collector of one phase: ``goals`` held-out goals one rollout each (greedy evaluation),
    else the recipe's groups on the training goals."""
    env = PRESETS["webshop"].env
    return Collector(
        policy,
        env,
        num_groups=goals if greedy else config.num_groups,
        group_size=1 if greedy else config.group_size,
        prompt_builder=config.prompt_builder(),
        env_kwargs=config.evaluation_env_kwargs(env) if greedy else config.env_kwargs_with_limit(),
    )


def compare_decoders(args: argparse.Namespace, config: Any, plain: dict[str, Any], tasks: list[str]) -> None:
    """The greedy evaluation with each of ``args.decoders`` (a fresh policy each), against ``plain``."""
    for name in args.decoders:
        decoder_config = dataclasses.replace(config, **DECODERS[name])
        policy = build_policy(args.model, decoder_config)
        collector = phase_collector(policy, config, greedy=True, goals=args.goals)
        try:
            for attempt in range(2 if decoder_config.compile_decode else 1):
                timed = run(policy, collector, tasks, greedy=True, lookup=0, seed=args.seed)
                label = f"{name}{' (compiling)' if decoder_config.compile_decode and attempt == 0 else ''}"
                print(
                    f"{label:>20} {timed['seconds']:>8.1f} s  ratio {timed['seconds'] / plain['seconds']:.2f}  "
                    f"same tokens {timed['responses'] == plain['responses']}"
                )
        finally:
            collector.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a warm-started model folder (the quick start's sft/model)")
    parser.add_argument("--goals", type=int, default=32)
    parser.add_argument("--lookups", type=int, nargs="*", default=[4, 8], help="draft tokens per step to compare")
    parser.add_argument("--phases", nargs="+", default=["evaluate", "collect"], choices=["evaluate", "collect"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--decoders",
        nargs="*",
        default=[],
        choices=list(DECODERS),
        help="also evaluate with these decode paths (a policy each; compiled: first run then a second)",
    )
    args = parser.parse_args()

    preset = PRESETS["webshop"]
    config = dataclasses.replace(preset.rl, progress=False, tensorboard=False)
    policy = build_policy(args.model, config)
    print(f"{cpu_model()}, {torch.get_num_threads()} torch threads; {args.model} on {preset.env}")
    for phase in args.phases:
        greedy = phase == "evaluate"
        groups, size = (args.goals, 1) if greedy else (config.num_groups, config.group_size)
        collector = phase_collector(policy, config, greedy=greedy, goals=args.goals)
        tasks = held_out_tasks(collector.task_ids, groups)
        try:
            plain = run(policy, collector, tasks, greedy=greedy, lookup=0, seed=args.seed)
            print(f"\n{phase} ({groups} x {size}, {'greedy' if greedy else 'sampled'})")
            print(
                f"{'draft tokens':>12} {'seconds':>8} {'passes':>7} {'tokens':>7} {'s/token':>8} {'ratio':>6}  same tokens"
            )
            print(
                f"{0:>12} {plain['seconds']:>8.1f} {plain['passes']:>7} {plain['tokens']:>7} "
                f"{plain['seconds'] / plain['tokens']:>8.4f} {1.0:>6.2f}"
            )
            if greedy and args.decoders:
                compare_decoders(args, config, plain, tasks)
            for lookup in args.lookups:
                drafted = run(policy, collector, tasks, greedy=greedy, lookup=lookup, seed=args.seed)
                per_token = drafted["seconds"] / drafted["tokens"]
                ratio = per_token / (plain["seconds"] / plain["tokens"])
                same = drafted["responses"] == plain["responses"] if greedy else "n/a (sampled)"
                print(
                    f"{lookup:>12} {drafted['seconds']:>8.1f} {drafted['passes']:>7} {drafted['tokens']:>7} "
                    f"{per_token:>8.4f} {ratio:>6.2f}  {same}"
                )
        finally:
            collector.close()


if __name__ == "__main__":
    main()
