"""The credit lab's calibration: GRPO alone, on a generator seed the race never uses, at one budget.

Before the ``long`` study's budget was fixed, GRPO was run on the one-turn Umbrella (where every
rule's credit is the same, so no rule can be favoured) and on the 4-turn one, on generator seed 1
(the race reports on seed 0), with one configuration's overrides of the lab's run config at a time.
Each call adds one record under ``results/credit_lab/calibration/records/<name>/``;
``credit_lab/results.md`` lists every configuration tried and what it gave.

Usage:
    PYTHONPATH=$PWD .venv/bin/python benchmarks/credit_lab_calibration.py NAME STEPS '{"num_iterations": 4}' \\
        [--setting umbrella-1] [--generator-seed 1] [--seed 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import credit_lab

FOLDER = credit_lab.RESULTS / "calibration"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the configuration's label (its records folder)")
    parser.add_argument("steps", type=int)
    parser.add_argument("overrides", type=json.loads, help="GRPOConfig fields over the lab's run config (JSON)")
    parser.add_argument("--setting", default="umbrella-1", choices=list(credit_lab.SETTINGS))
    parser.add_argument("--generator-seed", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", default="runs/credit_lab_calibration")
    args = parser.parse_args(argv)
    base = credit_lab.SETTINGS[args.setting]
    setting = dataclasses.replace(
        base,
        name=f"{args.setting}-g{args.generator_seed}",
        env_kwargs={**base.env_kwargs, "generator_seed": args.generator_seed},
    )
    lab = dataclasses.replace(credit_lab.LAB, steps=args.steps, eval_every=max(args.steps // 4, 1))
    run_config = credit_lab.rl_config
    credit_lab.rl_config = lambda *a, **k: dataclasses.replace(run_config(*a, **k), **args.overrides)
    work = Path(args.work)
    model, sitting, start = credit_lab.warm_start(setting, work, FOLDER / "records")
    credit_lab.race_run(
        setting, "grpo", args.seed, model, sitting, start, work / args.name, FOLDER / "records" / args.name, lab
    )
    path = credit_lab.record_path(FOLDER / "records" / args.name, setting.name, f"grpo_{args.seed}")
    record = json.loads(path.read_text())
    record["overrides"] = args.overrides
    credit_lab.write_record(path, record)
    print(args.name, args.overrides, "held-out success", [round(point["success"], 2) for point in record["curve"]])


if __name__ == "__main__":
    main()
