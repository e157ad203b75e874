"""One RL run of the quick start's WebShop recipe with overrides, evaluated on the TUNING set.

The quick start reports on the eval split's one-option goals (its report set); recipe choices
are made here, on the test split's 104 one-option goals, so the README's figures are measured
on goals no choice has looked at. Each run trains from a warm start (the quick start's
``sft`` folder), evaluates once at the end on all 104 tuning goals (greedy) and appends a line
to ``<output>/results.jsonl``; ``--steps 0`` evaluates the warm start itself.

Usage (the runs read in docs/multiturn-training.md)::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/recipe_tuning.py warm --warm-start runs/quickstart-webshop/sft --steps 0
    PYTHONPATH=$PWD .venv/bin/python benchmarks/recipe_tuning.py gigpo-bonus --warm-start runs/quickstart-webshop/sft \\
        '{"credit": "gigpo", "success_bonus": 1.0}'
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from agents.agent import GRPOAgent
from agents.cli.quickstart import PRESETS

TUNING_SET = {"split": "test"}
"""The WebShop recipe's tuning goals (its report set is the eval split)."""
TUNING_GOALS = 104


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the run's name (its folder under --output)")
    parser.add_argument("overrides", nargs="?", default="{}", help="GRPOConfig fields as JSON")
    parser.add_argument("--warm-start", required=True, help="the quick start's sft folder (or any model)")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--output", default="runs/recipe-tuning")
    args = parser.parse_args()
    preset = PRESETS["webshop"]
    tuning = {"eval_env_kwargs": TUNING_SET, "eval_episodes": TUNING_GOALS, "eval_every": 0}
    # The overrides win, so '{"eval_every": 8}' also evaluates on the way.
    config = dataclasses.replace(
        preset.rl, output_dir=str(Path(args.output) / args.name), **{**tuning, **json.loads(args.overrides)}
    )
    started = time.perf_counter()
    agent = GRPOAgent(model=args.warm_start, env=preset.env, config=config)
    try:
        if args.steps:
            record = agent.learn(args.steps, plot=False, start_evaluation={})
        else:
            record = agent.trainer.evaluate(prefix="eval/")
    finally:
        agent.close()
    result = {
        "name": args.name,
        "overrides": json.loads(args.overrides),
        "steps": args.steps,
        "seconds": round(time.perf_counter() - started, 1),
        **{key: value for key, value in record.items() if key.startswith("eval/")},
    }
    print(json.dumps(result))
    Path(args.output).mkdir(parents=True, exist_ok=True)
    with open(Path(args.output) / "results.jsonl", "a") as results:
        results.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
