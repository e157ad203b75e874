"""Credit activity at a starting model: one collection, every rule's credit statistics, no update.

How much each rule's extra credit would be in play before any training: GiGPO's share of turns
in non-singleton anchor groups and |ω·A^S| vs |A^E|, ORSD's groups with a rubric and shaping
ratio, TASPO's PI coverage and aligned turns, the env-PI variants' rows with env PI. One batch
is collected with a quick-start recipe's RL settings (``--preset webshop`` or ``alfworld``) from
``--model`` (e.g. a warm start's folder), then credited by each rule of
``benchmarks/credit_learning.py``'s ``RULES`` on that same batch.

Usage:
    python benchmarks/credit_activity.py --preset alfworld --groups 2 --group-size 4
    python benchmarks/credit_activity.py --preset webshop --model runs/quickstart-webshop/sft
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch
from credit_learning import ACTIVITY_KEYS, PI_RULES, RULES, rule_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="webshop", choices=["webshop", "alfworld"])
    parser.add_argument("--model", default=None, help="model to collect with (default: the preset's)")
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rules", nargs="+", default=list(RULES), choices=list(RULES))
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument(
        "--success-score", type=float, default=None, help="ORSD/TASPO's success_score option (default: wins only)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from agents.agent import build_policy
    from agents.algorithms.base import CreditContext, make_credit_rule
    from agents.cli.quickstart import PRESETS
    from agents.collection.collector import Collector

    preset = PRESETS[args.preset]
    # No update follows, so no adapter is needed: the model as it is.
    config = dataclasses.replace(
        preset.rl, num_groups=args.groups, group_size=args.group_size, seed=args.seed, lora=False, lora_top_layers=None
    )
    model = args.model or preset.model
    policy = build_policy(model, config)
    collector = Collector(
        policy,
        preset.env,
        num_groups=args.groups,
        group_size=args.group_size,
        prompt_builder=config.prompt_builder(),
        invalid_action_penalty=config.invalid_action_penalty,
        env_kwargs=config.env_kwargs_with_limit(),
    )
    # Rules on the fast path score on top of the rollout's prompt KV: keep it while collecting.
    reuse = any(RULES[name][0] in PI_RULES and RULES[name][1].get("reuse_prompt_cache", True) for name in args.rules)
    start = time.perf_counter()
    try:
        with policy.keeping_prompt_caches(reuse):
            batch, stats = collector.collect(seed=args.seed)
    finally:
        collector.close()
    print(
        f"{preset.env} · {model} · {args.groups} x {args.group_size} · seed {args.seed}: {len(batch)} turns in "
        f"{time.perf_counter() - start:.0f} s; success {stats.success_rate:.3f}, invalid {stats.invalid_rate:.3f}, "
        f"mean length {stats.mean_episode_length:.1f}"
    )
    for name in args.rules:
        credit, options, fields = rule_settings(name, args.success_score)
        rule_config = dataclasses.replace(config, credit=credit, credit_options=options, **fields)
        started = time.perf_counter()
        result = make_credit_rule(credit, rule_config).compute(batch, CreditContext(rule_config, policy=policy))
        shown = ACTIVITY_KEYS.get(name, ())
        values = ", ".join(f"{key.split('/')[1]} {result.stats[key]:.3f}" for key in shown if key in result.stats)
        mask = batch.response_mask.bool()
        print(
            f"  {name:10s} credit {time.perf_counter() - started:6.2f} s · mean |A| {result.advantages[mask].abs().mean():.3f}"
            + (f" · {values}" if values else "")
        )


if __name__ == "__main__":
    main()
