"""The main job with and without 128 further option turns in its warm start, on the report set.

Issue 42, item 3 (adoption). The option warm-start study (``benchmarks/option_warm_start.py``)
found that 128 further expert option turns raise the *warm start's* report-set success at every
SFT seed (+0.161 ± 0.107), within the SFT stage's time. The main job is the warm start *then* RL,
so what a user gets is the success after RL. This measures it: the quick start's ``webshop``
preset (``agents.cli.quickstart.PRESETS``), unchanged but for

- ``SFTConfig.extra_expert_turns = {"option": N}`` for N in ``COUNTS`` (made inside the SFT
  stage: the package's :func:`agents.sft.demonstrations.collect_turns_of_kind`, not a file),
- the seed of both stages (``SEEDS``; the preset's is 0),
- both evaluations on ``EPISODES`` goals of the eval split (the preset's 32 are too few to see a
  gain of this size; training samples the same either way),

and records the warm start's and the end's held-out success, score and invalid rate, the option
clicks' accuracy at the end, and each stage's seconds.

Fixed before the first run (``DECISION``): the recipe adopts the count when the main job's success
after RL, paired by seed against N = 0, gains with a 95 % t-interval above 0. The main job's time
is the preset's, measured separately (with its 32-goal evaluations) once the recipe changes.

Usage (resumable: a finished (count, seed) is skipped, a killed one resumes from its checkpoints)::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/main_job_option_turns.py run
    PYTHONPATH=$PWD .venv/bin/python benchmarks/main_job_option_turns.py report
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

COUNTS = (0, 128)
"""The further option turns compared (0: the recipe as it was; 128: the study's report-set count)."""
SEEDS = (0, 1, 2)
EPISODES = 128
DECISION = "adopt N when the success after RL, paired by seed against N = 0, gains with a 95 % t-interval above 0"
OUTPUT = Path("benchmarks/results/main_job_option_turns")
WORK = Path("runs/main_job_option_turns")


def preset_for(count: int, seed: int) -> Any:
    """The quick start's ``webshop`` preset with ``count`` further option turns, seed ``seed`` and the report set."""
    from agents.cli.quickstart import PRESETS

    base = PRESETS["webshop"].with_eval_episodes(EPISODES)
    assert base.sft is not None
    turns = {"option": count} if count else {}
    return dataclasses.replace(
        base,
        sft=dataclasses.replace(base.sft, seed=seed, extra_expert_turns=turns),
        rl=dataclasses.replace(base.rl, seed=seed),
        output_dir=str(WORK / f"n_{count}_seed_{seed}"),
    )


def run_one(count: int, seed: int) -> dict[str, Any]:
    """The main job for ``count`` and ``seed``; returns its record."""
    from credit_lab import machine
    from option_turns import run_option_clicks, webshop_goal_options

    from agents.cli.quickstart import run_quickstart

    preset = preset_for(count, seed)
    summary = run_quickstart(preset, resume=True)
    folder = Path(preset.output_dir)
    goal_options = webshop_goal_options(preset.rl.evaluation_env_kwargs(preset.env))
    clicks = {stage: run_option_clicks(folder / stage, goal_options) for stage in ("sft", "rl")}
    last = {stage: dataclasses.asdict(found[max(found)]) if found else None for stage, found in clicks.items()}
    return {
        "count": count,
        "seed": seed,
        "episodes": EPISODES,
        "stages": summary["stages"],
        "option_clicks": {"warm start": last["sft"], "end": last["rl"]},
        "sft_seconds": summary["sft_seconds"],
        "rl_seconds": summary["rl_seconds"],
        "total_seconds": summary["total_seconds"],
        "machine": machine(),
        "trunk_dtype": str(preset.rl.trunk_dtype),
    }


def report_lines(records: list[dict[str, Any]]) -> list[str]:
    """The per-run table, each count's means over seeds, and the paired gains."""
    from credit_lab import interval

    lines = [
        f"Each run: the `webshop` preset, {EPISODES} eval-split goals, greedy. Success / score / invalid.",
        "",
        "| further option turns | seed | warm start | after RL | option clicks right / clicked (warm start, end) "
        "| SFT s | RL s |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(stage: dict[str, float]) -> str:
        return f"{stage['success_rate']:.3f} / {stage['mean_score']:.3f} / {stage['invalid_rate']:.3f}"

    def clicks(found: dict[str, int] | None) -> str:
        return "–" if found is None else f"{found['right']} / {found['clicks']}"

    by_count: dict[int, dict[int, dict[str, Any]]] = {}
    for record in sorted(records, key=lambda r: (r["count"], r["seed"])):
        by_count.setdefault(record["count"], {})[record["seed"]] = record
        stages, found = record["stages"], record["option_clicks"]
        lines.append(
            f"| {record['count']} | {record['seed']} | {cell(stages['warm start'])} | {cell(stages['end'])} | "
            f"{clicks(found['warm start'])}, {clicks(found['end'])} | {record['sft_seconds']:.0f} | "
            f"{record['rl_seconds']:.0f} |"
        )
    lines += ["", "| further option turns | seeds | stage | success | score | invalid |", "|---|---|---|---|---|---|"]
    for count, runs in sorted(by_count.items()):
        for stage in ("warm start", "end"):
            cells = []
            for key in ("success_rate", "mean_score", "invalid_rate"):
                mean, half = interval([run["stages"][stage][key] for run in runs.values()])
                cells.append(f"{mean:.3f} ± {half:.3f}")
            lines.append(f"| {count} | {len(runs)} | {stage} | {' | '.join(cells)} |")
    base = by_count.get(0, {})
    for count, runs in sorted(by_count.items()):
        paired = sorted(set(runs) & set(base))
        if count == 0 or not paired:
            continue
        lines.append("")
        for stage in ("warm start", "end"):
            for key, name in (("success_rate", "success"), ("mean_score", "score")):
                mean, half = interval([runs[s]["stages"][stage][key] - base[s]["stages"][stage][key] for s in paired])
                lines.append(
                    f"- N = {count} against N = 0, {name} {'after RL' if stage == 'end' else 'of the warm start'}, "
                    f"paired by seed: **{mean:+.3f} ± {half:.3f}** ({len(paired)} seeds)"
                )
        gains = [runs[s]["stages"]["end"]["success_rate"] - base[s]["stages"]["end"]["success_rate"] for s in paired]
        mean, half = interval(gains)
        if len(paired) < len(SEEDS):
            verdict = f"pending ({len(paired)} of the {len(SEEDS)} seeds paired)"
        else:
            verdict = "adopted" if mean - half > 0 else "not adopted"
        lines += ["", f"Decision ({DECISION}): **N = {count} {verdict}**."]
    machines = sorted({record["machine"] for record in records})
    lines += ["", f"Machines: {', '.join(machines)}."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "report"))
    parser.add_argument("--counts", type=int, nargs="+", default=list(COUNTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    records = args.output / "records"
    if args.command == "run":
        records.mkdir(parents=True, exist_ok=True)
        for seed in args.seeds:
            for count in args.counts:
                path = records / f"n_{count}_seed_{seed}.json"
                if path.exists():
                    print(f"N = {count}, seed {seed}: recorded, skipped", flush=True)
                    continue
                record = run_one(count, seed)
                path.write_text(json.dumps(record, indent=1) + "\n")
                print(f"N = {count}, seed {seed}: {json.dumps(record['stages'])}", flush=True)
    from credit_learning import write_results

    found = [json.loads(path.read_text()) for path in sorted(records.glob("n_*_seed_*.json"))]
    write_results(
        args.output / "results.md",
        "The main job with option-turn demonstrations",
        report_lines(found),
        script="main_job_option_turns.py",
    )


if __name__ == "__main__":
    main()
