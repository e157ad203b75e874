"""How many option-turn demonstrations lift the WebShop warm start's choice of option value above chance.

Issue 42, item 2. The quick start's warm start (32 expert episodes, 3 epochs) sees about 25 option
turns and picks the goal's option value about as often as picking at random does; the WebShop race
(``benchmarks/results/credit_race/webshop``) found that no credit rule can point at a value the
policy almost never clicks. So: the recipe's SFT, unchanged, plus ``N`` further expert option turns
(``SFTConfig.demonstrations_path``), for each ``N`` in ``COUNTS``.

The further option turns are the expert's on goals that ask for an option, each goal once: the
recipe's shop's training split first (shuffled with ``SOURCE_SEED``), then the training splits of
the shops of generator seeds 1, 2, ... (other generated products and goals; never a test or eval
split). Each goal's episode is played with the recipe's prompts and broken-action rate and only its
option turns are kept.

Measured on the **tuning set** (the recipe's shop's test split: 104 one-option goals; the report
set is not touched):

- teacher-forced, on the expert's turns of all 104 tuning goals (``warm_start_turns.score_turns``):
  on each option turn, whether the goal's value outranks the other offered values
  (``expert_best_value``) against ``chance`` (the mean of 1 / values offered), and how often
  ``click[Buy Now]`` outranks everything; per turn kind, greedy exactness;
- greedy play of the 104 goals: success, score, invalid rate and the option clicks' accuracy
  (``benchmarks/option_turns.py``);
- the SFT stage's seconds (demonstrations, fit, the run's own evaluation excluded).

Fixed before the first run (``DECISION``): a count lifts the choice *clearly* above chance when the
95 % Wilson interval of ``expert_best_value`` lies above ``chance``; it fits the SFT stage when the
stage takes at most ``EXTRA_SECONDS`` more than the recipe's (``N = 0``) on the same machine,
which keeps the main job within 8 minutes on 2 cores with bf16 units (it took 5 min 10 s). The
answer is the smallest count that does both, or the smallest that lifts it, with its cost.

Then the **report set** (``report-set``, ``REPORT_CHOICE``): N = 0 against one chosen count, SFT
seeds 0, 1, 2 each, greedy on 128 goals of the eval split; the success and score gains paired by
seed (95 % t-interval). Adopting a count into the recipe needs that gain above 0.

Usage (resumable: a count or seed with a record is skipped)::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/option_warm_start.py run
    PYTHONPATH=$PWD .venv/bin/python benchmarks/option_warm_start.py report-set
    PYTHONPATH=$PWD .venv/bin/python benchmarks/option_warm_start.py report
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

COUNTS = (0, 128, 512, 2048)
"""The further option turns tried (fixed before the first run)."""
SOURCE_SEED = 1
"""Shuffles each shop's option goals."""
TUNING: dict[str, bool | int | float | str] = {"split": "test"}
"""The tuning set: the recipe's shop's test split (its one-option goals, given the recipe's env settings)."""
TUNING_EPISODES = 104
TURN_SEED = 123
"""Seeds the expert's tuning episodes that the teacher-forced scores use (warm_start_turns.py's)."""
EXTRA_SECONDS = 150.0
DECISION = (
    "lifted: the 95 % Wilson interval of expert_best_value above chance; fits: the SFT stage at most "
    f"{EXTRA_SECONDS:g} s longer than N = 0's"
)
OUTPUT = Path("benchmarks/results/option_warm_start")
REPORT: dict[str, bool | int | float | str] = {"split": "eval"}
"""The report set: the recipe's shop's eval split (its one-option goals), which no recipe choice has looked at."""
REPORT_EPISODES = 128
REPORT_SEEDS = (0, 1, 2)
REPORT_CHOICE = (
    "the count DECISION names where one lifts and fits; else, among the counts that fit, the one with "
    "the highest tuning-set success, if above N = 0's; else none (no report-set runs)"
)


def option_goal_ids(env_kwargs: dict[str, Any]) -> list[str]:
    """The task ids of a shop's goals that ask for an option."""
    import gymnasium as gym

    import agentenvs  # noqa: F401  (registers the envs)

    env = gym.make("WebShop-v0", **env_kwargs)
    try:
        shop: Any = env.unwrapped
        return [task_id for task_id in shop.task_ids if shop.goals[int(task_id)].goal_options]
    finally:
        env.close()


def option_turn_demonstrations(count: int, config: Any) -> tuple[list[Any], list[dict[str, int]]]:
    """``count`` expert option turns (see the module docstring) and, per shop used, its goals played."""
    from warm_start_turns import turn_kind

    from agents.sft.demonstrations import collect_demonstrations

    kept: list[Any] = []
    sources: list[dict[str, int]] = []
    builder = config.prompt_builder()
    shop = 0
    while len(kept) < count:
        env_kwargs = {**config.env_kwargs_with_limit(), "generator_seed": shop}
        goals = option_goal_ids(env_kwargs)
        order = [goals[i] for i in np.random.default_rng(SOURCE_SEED).permutation(len(goals))]
        played = 0
        for start in range(0, len(order), 64):
            chunk = order[start : start + 64]
            demonstrations, _ = collect_demonstrations(
                "WebShop-v0",
                episodes=len(chunk),
                prompt_builder=builder,
                env_kwargs=env_kwargs,
                task_ids=chunk,
                invalid_action_rate=config.invalid_action_rate,
                seed=SOURCE_SEED + 1000 * shop + start,
            )
            played += len(chunk)
            kept += [d for d in demonstrations if turn_kind(d) == "option"]
            if len(kept) >= count:
                break
        sources.append({"generator_seed": shop, "goals_played": played})
        shop += 1
    return kept[:count], sources


def train_warm_start(
    count: int, folder: Path, *, seed: int, eval_env_kwargs: dict[str, Any], eval_episodes: int
) -> dict[str, Any]:
    """The recipe's SFT (seed ``seed``) with ``count`` further option turns into ``folder/sft``,
    evaluated on ``eval_episodes`` goals of ``eval_env_kwargs``; returns its part of a record."""
    from credit_lab import machine
    from option_turns import run_option_clicks, webshop_goal_options

    from agents.sft import SFTAgent, SFTConfig

    folder.mkdir(parents=True, exist_ok=True)
    recipe = SFTConfig.for_env("WebShop-v0")
    started = time.perf_counter()
    extra: dict[str, Any] = {}
    sources: list[dict[str, int]] = []
    if count:
        demonstrations, sources = option_turn_demonstrations(count, recipe)
        path = folder / "option_turns.jsonl"
        path.write_text("".join(json.dumps(dataclasses.asdict(d)) + "\n" for d in demonstrations))
        extra = {"demonstrations_path": str(path)}
    config = dataclasses.replace(
        recipe,
        **extra,
        seed=seed,
        eval_episodes=eval_episodes,
        eval_env_kwargs=eval_env_kwargs,
        output_dir=str(folder / "sft"),
        resume=True,
    )
    final = SFTAgent("smollm2-135m", "WebShop-v0", config).learn()
    wall = time.perf_counter() - started
    clicks = run_option_clicks(folder / "sft", webshop_goal_options(config.evaluation_env_kwargs("WebShop-v0")))
    last = clicks[max(clicks)] if clicks else None
    return {
        "count": count,
        "seed": seed,
        "sources": sources,
        # the run's step-0 record: what the expert's demonstrations were
        "demonstrations": json.loads((folder / "sft" / "metrics.jsonl").read_text().splitlines()[0]),
        "sft_seconds": wall - float(final["time/eval_s"]),
        "wall_seconds": wall,
        "evaluation": {key: value for key, value in final.items() if key.startswith("eval/")},
        "option_clicks": None if last is None else dataclasses.asdict(last),
        "machine": machine(),
        "trunk_dtype": str(config.trunk_dtype),
    }


def run_count(count: int, output: Path) -> dict[str, Any]:
    """Trains and measures the warm start with ``count`` further option turns on the tuning set; returns its record."""
    from warm_start_turns import score_turns

    from agents.sft import SFTAgent, SFTConfig
    from agents.sft.demonstrations import collect_demonstrations

    folder = output / "runs" / f"n_{count}"
    record = train_warm_start(count, folder, seed=0, eval_env_kwargs=TUNING, eval_episodes=TUNING_EPISODES)
    scorer = SFTAgent(
        str(folder / "sft"),
        "WebShop-v0",
        SFTConfig.for_env("WebShop-v0", output_dir=str(folder / "scores"), eval_episodes=0, trunk_dtype=None),
    )
    stop = list(scorer.prompt_builder.stop_strings(scorer._action_format()))
    tuning, _ = collect_demonstrations(
        "WebShop-v0",
        episodes=TUNING_EPISODES,
        prompt_builder=scorer.prompt_builder,
        env_kwargs={**scorer.env_kwargs, **TUNING},
        seed=TURN_SEED,
    )
    scores = score_turns(scorer, tuning, stop)
    return {**record, "turns": scores}


def episode_outcomes(run_dir: Path) -> dict[str, Any] | None:
    """How a run's last held-out evaluation ended: episodes, those that bought, won, the mean score
    of those that bought, and the commonest turn patterns (S search, c a valid click, B Buy Now,
    x an invalid turn). None without the evaluation's trajectories."""
    from agentenvs.core.trajectory import TrajectoryGroup, read_jsonl

    paths = sorted((run_dir / "trajectories").glob("eval_step_*.jsonl"), key=lambda p: int(p.stem.split("_")[-1]))
    if not paths:
        return None
    episodes = [
        episode
        for item in read_jsonl(paths[-1])
        for episode in (item.trajectories if isinstance(item, TrajectoryGroup) else [item])
    ]

    def letter(action: str, valid: bool) -> str:
        if not valid:
            return "x"
        return "S" if action.startswith("search[") else "B" if action == "click[Buy Now]" else "c"

    bought = [e for e in episodes if any(t.valid and t.action == "click[Buy Now]" for t in e.turns)]
    patterns = collections.Counter("".join(letter(t.action, t.valid) for t in e.turns) for e in episodes)
    return {
        "episodes": len(episodes),
        "bought": len(bought),
        "won": sum(bool(e.success) for e in episodes),
        "bought_mean_score": sum(e.score for e in bought) / len(bought) if bought else 0.0,
        "patterns": dict(patterns.most_common(5)),
    }


def with_outcomes(path: Path, output: Path) -> dict[str, Any]:
    """The record at ``path``, its ``outcomes`` added (and saved) where they are missing and its run's
    trajectories are still here."""
    record = json.loads(path.read_text())
    if "outcomes" not in record:
        name = path.stem
        run_dir = output / "runs" / ("report" if "seed" in name else "") / name / "sft"
        outcomes = episode_outcomes(run_dir)
        if outcomes is not None:
            record["outcomes"] = outcomes
            path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def read_records(output: Path) -> list[dict[str, Any]]:
    """The tuning-set records (one per count)."""
    return [with_outcomes(path, output) for path in sorted((output / "records").glob("n_*.json"))]


def classify(records: list[dict[str, Any]]) -> tuple[list[int], list[int]] | None:
    """(counts that lift the choice, counts that fit the SFT stage's time) by ``DECISION``; None without N = 0."""
    from agents.reports.curves import wilson_interval

    by_count = {record["count"]: record for record in records}
    if 0 not in by_count:
        return None
    base = by_count[0]["sft_seconds"]
    lifted, fitting = [], []
    for count, record in sorted(by_count.items()):
        options = record["turns"]["options"]
        low, _ = wilson_interval(options["expert_best_value_count"], options["turns"])
        if low > options["chance"]:
            lifted.append(count)
        if record["sft_seconds"] - base <= EXTRA_SECONDS:
            fitting.append(count)
    return lifted, fitting


def decide(records: list[dict[str, Any]]) -> str:
    """The pre-registered answer (``DECISION``) from the records."""
    classes = classify(records)
    if classes is None:
        return "N = 0 (the recipe) not measured yet: no decision"
    lifted, fitting = classes
    both = [count for count in lifted if count in fitting]
    if both:
        return f"N = {both[0]} lifts the choice clearly above chance within the SFT stage's time"
    if lifted:
        seconds = {record["count"]: record["sft_seconds"] for record in records}
        extra = seconds[lifted[0]] - seconds[0]
        return f"N = {lifted[0]} lifts it, but its SFT stage takes {extra:.0f} s more than the recipe's (> {EXTRA_SECONDS:g} s)"
    return f"no count in {sorted(r['count'] for r in records)} lifts the choice clearly above chance"


def chosen_count(records: list[dict[str, Any]]) -> int | None:
    """The count the report-set stage compares with N = 0 (``REPORT_CHOICE``), from the tuning-set records."""
    classes = classify(records)
    if classes is None:
        return None
    lifted, fitting = classes
    both = [count for count in lifted if count in fitting]
    if both:
        return both[0]
    success = {record["count"]: record["evaluation"]["eval/success_rate"] for record in records}
    best = max((count for count in fitting if count), key=lambda count: (success[count], -count), default=None)
    return best if best is not None and success[best] > success[0] else None


def run_report_set(count: int, seed: int, output: Path) -> dict[str, Any]:
    """The warm start with ``count`` further option turns and SFT seed ``seed``, on the report set."""
    folder = output / "runs" / "report" / f"n_{count}_seed_{seed}"
    return train_warm_start(count, folder, seed=seed, eval_env_kwargs=REPORT, eval_episodes=REPORT_EPISODES)


def report_set_lines(records: list[dict[str, Any]]) -> list[str]:
    """The report-set table: each count's warm starts over seeds, and the chosen count's paired gain."""
    from credit_lab import interval

    if not records:
        return []
    lines = [
        "",
        f"### The report set ({REPORT_EPISODES} goals of the eval split, greedy; SFT seeds {list(REPORT_SEEDS)})",
        "",
        "| further option turns | seeds | success | score | invalid | option clicks right / clicked | SFT s |",
        "|---|---|---|---|---|---|---|",
    ]
    by_count: dict[int, dict[int, dict[str, Any]]] = {}
    for record in records:
        by_count.setdefault(record["count"], {})[record["seed"]] = record
    for count, runs in sorted(by_count.items()):
        cells = []
        for key in ("eval/success_rate", "eval/mean_score", "eval/invalid_rate"):
            mean, half = interval([run["evaluation"][key] for run in runs.values()])
            cells.append(f"{mean:.3f} ± {half:.3f}")
        right = sum((run["option_clicks"] or {"right": 0})["right"] for run in runs.values())
        clicked = sum((run["option_clicks"] or {"clicks": 0})["clicks"] for run in runs.values())
        seconds = sum(run["sft_seconds"] for run in runs.values()) / len(runs)
        lines.append(f"| {count} | {len(runs)} | {' | '.join(cells)} | {right} / {clicked} | {seconds:.0f} |")
    base = by_count.get(0, {})
    for count, runs in sorted(by_count.items()):
        paired = sorted(set(runs) & set(base))
        if count == 0 or not paired:
            continue
        for key, name in (("eval/success_rate", "success"), ("eval/mean_score", "score")):
            mean, half = interval([runs[seed]["evaluation"][key] - base[seed]["evaluation"][key] for seed in paired])
            lines.append("")
            lines.append(
                f"N = {count} against N = 0, {name} paired by seed: **{mean:+.3f} ± {half:.3f}** ({len(paired)} seeds)"
            )
    return lines


def report_lines(records: list[dict[str, Any]]) -> list[str]:
    """The tables of ``results.md``."""
    from agents.reports.curves import wilson_interval

    lines = [
        "| further option turns | SFT s | option turns scored | goal's value best-ranked [95 %] | chance | "
        "Buy Now ranked first | option click greedy-exact | Buy Now after an option, exact | held-out success | "
        "score | invalid | option clicks right / clicked |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for record in sorted(records, key=lambda r: r["count"]):
        options, kinds = record["turns"]["options"], record["turns"]["kinds"]
        low, high = wilson_interval(options["expert_best_value_count"], options["turns"])
        clicks = record["option_clicks"] or {"right": 0, "clicks": 0}
        evaluation = record["evaluation"]
        lines.append(
            f"| {record['count']} | {record['sft_seconds']:.0f} | {options['turns']} | "
            f"{options['expert_best_value']:.2f} [{low:.2f}, {high:.2f}] | {options['chance']:.2f} | "
            f"{options['buy_first']:.2f} | {kinds.get('option', {}).get('greedy_exact', 0.0):.2f} | "
            f"{kinds.get('buy-after-option', {}).get('greedy_exact', 0.0):.2f} | "
            f"{evaluation.get('eval/success_rate', 0.0):.3f} | {evaluation.get('eval/mean_score', 0.0):.3f} | "
            f"{evaluation.get('eval/invalid_rate', 0.0):.3f} | {clicks['right']} / {clicks['clicks']} |"
        )
    outcomes = [(record["count"], record["outcomes"]) for record in records if record.get("outcomes")]
    if outcomes:
        lines += [
            "",
            "How the held-out episodes ended (S search, c a valid click, B Buy Now, x an invalid turn):",
            "",
            "| further option turns | episodes | bought | won | mean score of those that bought | commonest patterns |",
            "|---|---|---|---|---|---|",
        ]
        for count, ended in sorted(outcomes, key=lambda pair: pair[0]):
            patterns = ", ".join(f"{pattern} {n}" for pattern, n in ended["patterns"].items())
            lines.append(
                f"| {count} | {ended['episodes']} | {ended['bought']} | {ended['won']} | "
                f"{ended['bought_mean_score']:.3f} | {patterns} |"
            )
    machines = sorted({record["machine"] for record in records})
    lines += ["", f"Decision ({DECISION}): **{decide(records)}**.", "", f"Machines: {', '.join(machines)}."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "report-set", "report"))
    parser.add_argument("--counts", type=int, nargs="+", default=list(COUNTS), help="further option turns to try")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    records = args.output / "records"
    if args.command == "run":
        records.mkdir(parents=True, exist_ok=True)
        for count in args.counts:
            path = records / f"n_{count}.json"
            if path.exists():
                print(f"N = {count}: recorded, skipped", flush=True)
                continue
            record = run_count(count, args.output)
            path.write_text(json.dumps(record, indent=1) + "\n")
            print(f"N = {count}: {json.dumps(record['turns']['options'])}", flush=True)
    if args.command == "report-set":
        chosen = chosen_count(read_records(args.output))
        print(f"report set: N = 0 against N = {chosen} ({REPORT_CHOICE})", flush=True)
        (records / "report").mkdir(parents=True, exist_ok=True)
        compared = () if chosen is None else (0, chosen)
        for seed in REPORT_SEEDS:
            for count in compared:
                path = records / "report" / f"n_{count}_seed_{seed}.json"
                if path.exists():
                    print(f"N = {count}, seed {seed}: recorded, skipped", flush=True)
                    continue
                record = run_report_set(count, seed, args.output)
                path.write_text(json.dumps(record, indent=1) + "\n")
                print(f"N = {count}, seed {seed}: {json.dumps(record['evaluation'])}", flush=True)
    from credit_learning import write_results

    lines = report_lines(read_records(args.output))
    report = [with_outcomes(path, args.output) for path in sorted((records / "report").glob("n_*_seed_*.json"))]
    lines += report_set_lines(report)
    write_results(
        args.output / "results.md",
        "Option-turn demonstrations and the WebShop warm start",
        lines,
        script="option_warm_start.py",
    )


if __name__ == "__main__":
    main()
