"""Learning comparison of credit rules (GRPO, RLOO, GiGPO, ORSD, TASPO) at the same env-interaction budget, ≥ 3 seeds.

Every (algorithm, seed) run trains the same model on the same env with the same config
(only ``config.credit`` differs), in its own process, so runs can share one machine in
parallel (``--parallel``; on a GPU, plain HF ``generate`` is CPU-overhead-bound, so several
small-model processes use it far better than one). Each run writes its metrics JSONL; the
aggregate step draws held-out success, score and invalid-action rate vs env episodes (mean ±
std over seeds) in one PNG and writes ``results.md``: final and area-under-curve success and
score (mean ± std), the credit activity of each rule, seconds per step (collect / credit /
update, and credit + update as a ratio to GRPO's), between the file's markers so that the
study's hand-written setting and reading around them stay; and ``examples.md``: a few rubrics,
PI texts and step groups.

Presets:

- ``cpu``: SearchQA-v0 (two turns) sized for a few CPU cores (SmolLM2-135M, the one-turn quick start's config).
- ``multiturn``: the multi-turn study (WebShop-v0 or ALFWorld-v0 via ``--env``): the quick start's RL
  recipe for that env (``agents.cli.quickstart.PRESETS``), held-out evaluation every 4 steps, from the
  recipe's expert warm start. Unless ``--model`` names one, the warm start is trained once into
  ``<output>/warm_start`` (its final evaluation is every run's step 0: same model, tasks and greedy
  decoding). Sized for 2 CPU cores.
- ``gpu``: one CUDA GPU: larger groups, more steps, more held-out episodes, several processes at
  once; SearchQA-v0 by default, the multi-turn recipe with ``--env WebShop-v0`` / ``ALFWorld-v0``.
- ``race``: WebShop-v0's option-turn race: the ``multiturn`` warm start and recipe, every evaluation
  on the tuning set (the test split's 104 one-option goals) every 8 steps, 24 steps (the recipe's 8,
  then 3x), the rules of ``RACE_ALGORITHMS``; the report adds intervals over seeds, the option turns'
  accuracy (``benchmarks/option_turns.py``), the paired gain over GRPO and each rule's cost.
- ``smoke``: seconds, with the tiny random model (checks the script end to end).

Resumable: runs checkpoint every step (multi-turn presets); a rerun with the same arguments skips
finished runs (their last step evaluated) and continues unfinished ones from their checkpoints,
so a study can be completed over several sittings. ``--max-minutes`` stops launching new runs
after that long (running ones finish).

Rules (``--algorithms``; default: the original three for SearchQA, every paper rule for the
multi-turn envs): ``grpo``, ``rloo`` (the paper's estimator: ``scale_rewards="none"``), ``gigpo``
(verl-agent's defaults), ``orsd``, ``taspo``, ``taspo_token`` (TASPO's token-level ablation:
``support_level="token"``), ``orsd_full`` / ``taspo_full`` (the former defaults: the PI after the task
line and a PI pass over the whole prompt, instead of the fast path on the rollout's prompt KV), and ``orsd_env`` / ``taspo_env`` (the env-PI
extension, ``env_pi="add"``), ``vine2`` / ``vine4`` (VinePPO with K = 2 / 4 continuations), and
``orsd_opt`` / ``taspo_opt`` (the env PI alone, the goal's option values: ``env_pi="replace"``,
``env_pi_keys="goal_options"``: PI aimed at WebShop's option turn).

Usage:
    python benchmarks/credit_learning.py --preset cpu --seeds 0 1 2 --parallel 2 --threads 1
    python benchmarks/credit_learning.py --preset multiturn --env WebShop-v0 --parallel 2 --threads 1 \
        --output benchmarks/results/credit_multiturn/webshop
    python benchmarks/credit_learning.py --preset race --env WebShop-v0 --parallel 2 --threads 1 \
        --output benchmarks/results/credit_race/webshop
    python benchmarks/credit_learning.py --preset gpu --env ALFWorld-v0 --parallel 8 \
        --output benchmarks/results/credit_multiturn_gpu/alfworld
    python benchmarks/credit_learning.py --aggregate-only --output benchmarks/results/credit_learning
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RULES: dict[str, tuple[str, dict[str, object], dict[str, object]]] = {
    "grpo": ("grpo", {}, {}),
    "rloo": ("rloo", {}, {"scale_rewards": "none"}),
    "gigpo": ("gigpo", {}, {}),
    "orsd": ("orsd", {}, {}),
    "taspo": ("taspo", {}, {}),
    "taspo_token": ("taspo", {"support_level": "token"}, {}),
    "orsd_full": ("orsd", {"placement": "after_task", "reuse_prompt_cache": False}, {}),
    "taspo_full": ("taspo", {"placement": "after_task", "reuse_prompt_cache": False}, {}),
    "orsd_env": ("orsd", {"env_pi": "add"}, {}),
    "taspo_env": ("taspo", {"env_pi": "add"}, {}),
    "vine2": ("vine", {"continuations": 2}, {}),
    "vine4": ("vine", {"continuations": 4}, {}),
    "orsd_opt": ("orsd", {"env_pi": "replace", "env_pi_keys": "goal_options"}, {}),
    "taspo_opt": ("taspo", {"env_pi": "replace", "env_pi_keys": "goal_options"}, {}),
}
"""Name -> (registered credit rule, its credit_options, other GRPOConfig fields)."""
PI_RULES = ("orsd", "taspo")
"""The rules ``--success-score`` applies to (their PI comes from successful trajectories)."""
ALGORITHMS = tuple(RULES)
DEFAULT_ALGORITHMS = ("grpo", "orsd", "taspo")
MULTITURN_ALGORITHMS = ("grpo", "rloo", "gigpo", "orsd", "taspo", "taspo_token")
RACE_ALGORITHMS = ("grpo", "gigpo", "vine2", "vine4", "orsd_opt", "taspo_opt")
RACE_FIELDS: dict[str, Any] = {
    "eval_env_kwargs": {"split": "test"},
    "eval_episodes": 104,
    "eval_every": 8,
    "save_every": 1,
    "progress": False,
}
"""What ``--preset race`` changes in WebShop-v0's recipe: every evaluation on the tuning set (the test
split's 104 one-option goals), every 8 steps; 24 steps by default (the recipe's 8, then 3x it: the
recipe's learning rate is constant and nothing else depends on a run's length, so step 8 measures the recipe's
budget)."""
RACE_STEPS = 24
MULTITURN_RECIPES = {"WebShop-v0": "webshop", "ALFWorld-v0": "alfworld"}
"""Multi-turn env -> the quick-start preset whose warm start and RL recipe the study uses."""
WARM_START = "warm_start"
_ORSD_ACTIVITY = ("orsd/groups_with_rubric", "orsd/groups_uniform_outcome", "orsd/shaping_to_advantage")
_TASPO_ACTIVITY = ("taspo/pi_coverage", "taspo/aligned_turn_fraction", "taspo/weight_std")
ACTIVITY_KEYS = {
    "orsd": _ORSD_ACTIVITY,
    "taspo": _TASPO_ACTIVITY,
    "taspo_token": _TASPO_ACTIVITY,
    "orsd_full": _ORSD_ACTIVITY,
    "taspo_full": _TASPO_ACTIVITY,
    "orsd_env": (*_ORSD_ACTIVITY, "orsd/shaping_abs_mean", "orsd/env_pi_rows"),
    "taspo_env": (*_TASPO_ACTIVITY, "taspo/env_pi_rows"),
    "gigpo": (
        "gigpo/nonsingleton_turn_fraction",
        "gigpo/step_group_size_mean",
        "gigpo/step_advantage_abs_mean",
        "gigpo/step_to_episode",
    ),
}
"""Per-step statistics showing how often each rule's extra credit was in play."""
TIME_KEYS = ("time/collect_s", "time/credit_s", "time/update_s")
GPU_FIELDS: dict[str, Any] = {
    "num_groups": 8,
    "group_size": 8,
    "eval_every": 5,
    "eval_episodes": 64,
    "device": "cuda",
    "micro_batch_size": 32,
    "progress": False,
}
"""What ``--preset gpu`` changes in a recipe's RL config (SearchQA's and the multi-turn ones)."""


def rule_settings(name: str, success_score: float | None) -> tuple[str, dict[str, object], dict[str, object]]:
    """``RULES[name]``, with ``success_score`` added to the options of ORSD / TASPO rules when given."""
    credit, options, fields = RULES[name]
    if success_score is not None and credit in PI_RULES:
        options = {**options, "success_score": success_score}
    return credit, options, fields


def preset_config(preset: str, env: str, steps: int | None):
    """(model, env, steps, GRPOConfig) of a preset; ORSD/TASPO use their documented default options."""
    from agents.cli.quickstart import PRESETS

    if preset == "race":
        if env != "WebShop-v0":
            raise ValueError(f"--preset race is WebShop-v0's (its option turns), got --env {env!r}")
        recipe = PRESETS["webshop"]
        return recipe.model, env, steps or RACE_STEPS, dataclasses.replace(recipe.rl, **RACE_FIELDS)
    if env in MULTITURN_RECIPES and preset in ("multiturn", "gpu"):
        recipe = PRESETS[MULTITURN_RECIPES[env]]
        if preset == "multiturn":
            config = dataclasses.replace(recipe.rl, eval_every=4, save_every=1, progress=False)
            return recipe.model, env, steps or recipe.total_steps, config
        config = dataclasses.replace(recipe.rl, **GPU_FIELDS, save_every=5)
        return recipe.model, env, steps or 40, config
    if preset == "multiturn":
        raise ValueError(f"--preset multiturn needs --env in {sorted(MULTITURN_RECIPES)}, got {env!r}")
    searchqa = PRESETS["searchqa"]
    # Two turns instead of the quick start's one, so an unclosed answer gets a second try
    # and trajectories can have more than one turn for TASPO to weigh.
    base = dataclasses.replace(searchqa.rl, env_kwargs={**searchqa.rl.env_kwargs, "max_turns": 2})
    if preset == "cpu":
        config = dataclasses.replace(base, eval_every=4, eval_episodes=32, save_every=0, progress=False)
        return searchqa.model, env, steps or 12, config
    if preset == "gpu":
        config = dataclasses.replace(base, **GPU_FIELDS, save_every=0)
        return searchqa.model, env, steps or 60, config
    if preset == "smoke":  # seconds: checks the script end to end with the tiny random model
        config = dataclasses.replace(
            base,
            num_groups=2,
            group_size=2,
            max_new_tokens=4,
            eval_every=1,
            eval_episodes=2,
            save_every=0,
            progress=False,
        )
        return "tiny-random-qwen3", env, steps or 1, config
    raise ValueError(f"--preset must be cpu, gpu, smoke or multiturn, got {preset!r}")


def uses_warm_start(args: argparse.Namespace) -> bool:
    """Whether the runs start from the study's own expert warm start (multi-turn env, no ``--model``)."""
    return args.env in MULTITURN_RECIPES and args.preset in ("multiturn", "gpu", "race") and not args.model


def warm_start_config(args: argparse.Namespace):
    """The recipe's SFT config, evaluated as the RL runs are (so its final evaluation is their step 0)."""
    from agents.cli.quickstart import PRESETS

    recipe = PRESETS[MULTITURN_RECIPES[args.env]]
    _, _, _, config = preset_config(args.preset, args.env, args.steps)
    assert recipe.sft is not None
    return dataclasses.replace(
        recipe.sft,
        eval_episodes=config.eval_episodes,
        eval_env_kwargs=config.eval_env_kwargs,
        device=config.device,
        output_dir=str(Path(args.output) / WARM_START),
        resume=True,
    )


def warm_start_evaluation(args: argparse.Namespace) -> dict[str, float] | None:
    """The finished warm start's final ``eval/*`` metrics (None while it is not finished)."""
    from agents.policy.models import adapter_folder

    folder = Path(args.output) / WARM_START
    if not (folder / "model" / "config.json").exists() and adapter_folder(folder) is None:
        return None
    records = read_records(folder / "metrics.jsonl")
    if not records or "eval/success_rate" not in records[-1] or records[-1]["step"] == 0:
        return None
    return {key: value for key, value in records[-1].items() if key.startswith("eval/")}


def ensure_warm_start(args: argparse.Namespace) -> None:
    """Trains the warm start once (resuming a partial one); later calls find it finished."""
    if warm_start_evaluation(args) is not None:
        return
    import torch

    from agents.cli.quickstart import PRESETS
    from agents.sft import SFTAgent

    if args.threads:
        torch.set_num_threads(args.threads * args.parallel)
    print(f"training the warm start into {Path(args.output) / WARM_START}", flush=True)
    recipe = PRESETS[MULTITURN_RECIPES[args.env]]
    agent = SFTAgent(recipe.model, recipe.env, warm_start_config(args))
    agent.learn()


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSONL records of ``path`` ([] if it does not exist)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def is_finished(run_dir: Path, steps: int) -> bool:
    """Whether a run logged its last step with its evaluation."""
    return records_finished(read_records(run_dir / "metrics.jsonl"), steps)


def records_finished(records: list[dict[str, Any]], steps: int) -> bool:
    """Whether a run's records end with its last step, evaluated."""
    return bool(records) and records[-1]["step"] >= steps and "eval/success_rate" in records[-1]


def run_one(algorithm: str, seed: int, args: argparse.Namespace) -> None:
    """Worker: trains one (algorithm, seed) run into ``output/algorithm_seed`` (resuming it if it can)."""
    import torch

    from agents import GRPOAgent

    if args.threads:
        torch.set_num_threads(args.threads)
    model, env, steps, config = preset_config(args.preset, args.env, args.steps)
    credit, options, fields = rule_settings(algorithm, args.success_score)
    config = dataclasses.replace(
        config,
        seed=seed,
        credit=credit,
        credit_options={**config.credit_options, **options},
        tensorboard=False,
        output_dir=str(Path(args.output) / f"{algorithm}_{seed}"),
        resume=config.save_every > 0,
        **fields,
    )
    start_evaluation = None
    if uses_warm_start(args):
        start_evaluation = warm_start_evaluation(args)
        if start_evaluation is None:
            raise RuntimeError(f"the warm start in {Path(args.output) / WARM_START} is not finished")
        model = str(Path(args.output) / WARM_START)
    agent = GRPOAgent(model=args.model or model, env=env, config=config)
    try:
        agent.learn(steps, plot=False, start_evaluation=start_evaluation)
    finally:
        agent.close()
    if args.preset == "race":
        save_option_clicks(Path(config.output_dir), config.evaluation_env_kwargs(env))


OPTION_CLICKS = "option_clicks.json"
"""A race run's option clicks per evaluated step (kept: the evaluation trajectories are not committed)."""


def save_option_clicks(run_dir: Path, env_kwargs: dict[str, Any]) -> None:
    """Counts the option clicks of every evaluation ``run_dir`` wrote into ``run_dir/option_clicks.json``."""
    from option_turns import run_option_clicks, webshop_goal_options

    counts = run_option_clicks(run_dir, webshop_goal_options(env_kwargs))
    if counts:
        saved = {str(step): dataclasses.asdict(count) for step, count in sorted(counts.items())}
        (run_dir / OPTION_CLICKS).write_text(json.dumps(saved, indent=1) + "\n")


def load_option_clicks(run_dir: Path) -> dict[int, tuple[int, int]]:
    """Step -> (option clicks, right ones) saved by :func:`save_option_clicks` ({} if none)."""
    path = run_dir / OPTION_CLICKS
    if not path.exists():
        return {}
    return {int(step): (count["clicks"], count["right"]) for step, count in json.loads(path.read_text()).items()}


def launch(args: argparse.Namespace) -> None:
    """Runs every unfinished (algorithm, seed) as a subprocess, ``--parallel`` at a time."""
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    if uses_warm_start(args):
        ensure_warm_start(args)
    _, env, steps, config = preset_config(args.preset, args.env, args.steps)
    if args.preset == "race" and not (output / WARM_START / OPTION_CLICKS).exists():
        save_option_clicks(output / WARM_START, config.evaluation_env_kwargs(env))
    jobs = [(algorithm, seed) for seed in args.seeds for algorithm in args.algorithms]
    done = [f"{a}_{s}" for a, s in jobs if is_finished(output / f"{a}_{s}", steps)]
    if done:
        print(f"finished already: {', '.join(done)}", flush=True)
    jobs = [(a, s) for a, s in jobs if f"{a}_{s}" not in done]
    running: list[tuple[subprocess.Popen, str, float]] = []
    deadline = time.time() + args.max_minutes * 60 if args.max_minutes else float("inf")
    while jobs or running:
        while jobs and len(running) < args.parallel and time.time() < deadline:
            algorithm, seed = jobs.pop(0)
            name = f"{algorithm}_{seed}"
            log = open(output / f"{name}.log", "a")  # noqa: SIM115 (closed when the process ends)
            command = [
                sys.executable,
                __file__,
                "--worker",
                algorithm,
                str(seed),
                "--preset",
                args.preset,
                "--env",
                args.env,
                "--output",
                args.output,
                "--threads",
                str(args.threads),
            ]
            command += ["--steps", str(args.steps)] if args.steps else []
            command += ["--success-score", str(args.success_score)] if args.success_score is not None else []
            command += ["--model", args.model] if args.model else []
            running.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), name, time.time()))
            print(f"started {name}", flush=True)
        if not running:
            print(f"--max-minutes reached; not started: {', '.join(f'{a}_{s}' for a, s in jobs)}", flush=True)
            return
        time.sleep(2)
        for process, name, started in list(running):
            if process.poll() is not None:
                running.remove((process, name, started))
                print(f"finished {name} (exit {process.returncode}, {time.time() - started:.0f} s)", flush=True)


@dataclasses.dataclass(frozen=True)
class RuleSummary:
    """One rule's finished runs, reduced over steps and seeds."""

    name: str
    seeds: list[int]
    steps: list[int]
    success: dict[int, list[float]]
    """seed -> held-out success at each of ``steps``."""
    score: dict[int, list[float]]
    invalid: dict[int, list[float]]
    """seed -> held-out invalid-action rate at each of ``steps``."""
    train_success: list[float]
    """Per seed: mean training-batch success over the steps."""
    activity: dict[str, float]
    seconds: dict[str, float]
    """Mean seconds per step of each ``TIME_KEYS`` entry."""


def area_under_curve(steps: list[int], values: list[float]) -> float:
    """Trapezoid area under ``values`` over ``steps``, divided by the span (a mean level; one point: it)."""
    if len(steps) < 2:
        return values[0]
    area = sum((b - a) * (u + v) / 2 for a, b, u, v in zip(steps, steps[1:], values, values[1:], strict=False))
    return area / (steps[-1] - steps[0])


def mean_std(values: list[float]) -> str:
    return f"{statistics.mean(values):.3f} ± {statistics.pstdev(values):.3f}"


def summarize(output: Path, algorithm: str, seeds: list[int], total_steps: int) -> RuleSummary | None:
    """The finished runs of ``algorithm`` (None if none finished)."""
    runs = {seed: read_records(output / f"{algorithm}_{seed}" / "metrics.jsonl") for seed in seeds}
    runs = {seed: records for seed, records in runs.items() if records_finished(records, total_steps)}
    if not runs:
        return None
    evaluated = [{r["step"]: r for r in records if "eval/success_rate" in r} for records in runs.values()]
    steps = sorted(set.intersection(*(set(e) for e in evaluated)))
    train = [[r for r in records if r["step"] > 0] for records in runs.values()]
    pooled = [r for records in train for r in records]
    activity = {
        key: statistics.mean(r[key] for r in pooled if key in r)
        for key in ACTIVITY_KEYS.get(algorithm, ())
        if any(key in r for r in pooled)
    }
    return RuleSummary(
        name=algorithm,
        seeds=list(runs),
        steps=steps,
        success={seed: [e[s]["eval/success_rate"] for s in steps] for seed, e in zip(runs, evaluated, strict=True)},
        score={seed: [e[s]["eval/mean_score"] for s in steps] for seed, e in zip(runs, evaluated, strict=True)},
        invalid={seed: [e[s]["eval/invalid_rate"] for s in steps] for seed, e in zip(runs, evaluated, strict=True)},
        train_success=[statistics.mean(r["train/success_rate"] for r in records) for records in train],
        activity=activity,
        seconds={key: statistics.mean(r[key] for r in pooled) for key in TIME_KEYS},
    )


def plot_curves(summaries: list[RuleSummary], episodes_per_step: int, title: str, path: Path) -> None:
    """Held-out success, score and invalid-action rate vs training episodes, mean ± std over seeds, one line per rule."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, panels = plt.subplots(1, 3, figsize=(15, 4))
    for summary in summaries:
        x = [step * episodes_per_step for step in summary.steps]
        for panel, series in zip(panels, (summary.success, summary.score, summary.invalid), strict=True):
            columns = list(zip(*series.values(), strict=True))
            mean = [statistics.mean(c) for c in columns]
            spread = [statistics.pstdev(c) for c in columns]
            panel.plot(x, mean, marker="o", label=summary.name.upper())
            panel.fill_between(
                x,
                [m - d for m, d in zip(mean, spread, strict=True)],
                [m + d for m, d in zip(mean, spread, strict=True)],
                alpha=0.15,
            )
    labels = ("held-out success rate", "held-out mean score", "held-out invalid-action rate")
    for panel, label in zip(panels, labels, strict=True):
        panel.set_xlabel("training episodes (env interactions)")
        panel.set_ylabel(label)
        panel.legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def results_table(summaries: list[RuleSummary]) -> list[str]:
    """Markdown: outcome table, credit activity, seconds per step (ratios to GRPO)."""
    lines = [
        "| rule | seeds | success at step 0 | final success | success AUC | score at step 0 | final score "
        "| score AUC | training success | invalid at step 0 | final invalid |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        success, score, invalid = list(s.success.values()), list(s.score.values()), list(s.invalid.values())
        lines.append(
            f"| {s.name.upper()} | {len(s.seeds)} | {statistics.mean(v[0] for v in success):.3f} "
            f"| {mean_std([v[-1] for v in success])} | {mean_std([area_under_curve(s.steps, v) for v in success])} "
            f"| {statistics.mean(v[0] for v in score):.3f} | {mean_std([v[-1] for v in score])} "
            f"| {mean_std([area_under_curve(s.steps, v) for v in score])} | {mean_std(s.train_success)} "
            f"| {statistics.mean(v[0] for v in invalid):.3f} | {mean_std([v[-1] for v in invalid])} |"
        )
    if any(s.activity for s in summaries):
        lines += ["", "Credit activity (mean over training steps and seeds):", ""]
    lines += [
        f"- {s.name.upper()}: " + ", ".join(f"{k.split('/')[1]} {v:.3f}" for k, v in s.activity.items())
        for s in summaries
        if s.activity
    ]
    baseline = next((s for s in summaries if s.name == "grpo"), None)
    lines += [
        "",
        "Seconds per training step (mean over steps and seeds; runs shared the cores as launched):",
        "",
        "| rule | collect | credit | update | credit + update | ÷ GRPO's credit + update |",
        "|---|---|---|---|---|---|",
    ]
    for s in summaries:
        collect, credit, update = (s.seconds[key] for key in TIME_KEYS)
        ratio = "-"
        if baseline is not None:
            reference = baseline.seconds["time/credit_s"] + baseline.seconds["time/update_s"]
            ratio = f"{(credit + update) / reference:.2f}×"
        lines.append(
            f"| {s.name.upper()} | {collect:.1f} | {credit:.2f} | {update:.1f} | {credit + update:.1f} | {ratio} |"
        )
    return lines


def example_lines(output: Path, summaries: list[RuleSummary], per_rule: int) -> list[str]:
    """A few of each rule's logged credit examples (rubrics, turn PI, step groups), as Markdown."""
    lines = [
        "# Credit examples",
        "",
        "The first records each rule logged (its lowest seed that logged any), verbatim.",
        "",
    ]
    for s in summaries:
        logged = {seed: read_records(output / f"{s.name}_{seed}" / "credit_examples.jsonl") for seed in sorted(s.seeds)}
        seed = next((seed for seed, records in logged.items() if records), None)
        if seed is None:
            continue
        records = logged[seed][:per_rule]
        lines += [f"## {s.name.upper()} (seed {seed})", ""]
        for record in records:
            text = {k: v for k, v in record.items() if isinstance(v, str) and ("\n" in v or len(v) > 100)}
            fields = ", ".join(f"{k} {v}" for k, v in record.items() if k not in text)
            lines += [f"- {fields}"] + [
                f"\n  {k}:\n  ```text\n  {v.replace(chr(10), chr(10) + '  ')}\n  ```" for k, v in text.items()
            ]
        lines.append("")
    return lines


def markers(script: str) -> tuple[str, str]:
    """The comments around the block of ``results.md`` that ``benchmarks/<script>`` writes."""
    return (
        f"<!-- begin: written by benchmarks/{script} (aggregate); edit outside this block -->",
        f"<!-- end: written by benchmarks/{script} -->",
    )


GENERATED_BEGIN, GENERATED_END = markers("credit_learning.py")


def write_results(path: Path, title: str, generated: list[str], *, script: str = "credit_learning.py") -> None:
    """Writes the generated tables into ``results.md`` between its markers, keeping the text around them.

    A study's ``results.md`` also holds its hand-written setting, command and reading; a rerun of
    the aggregate refreshes the tables and leaves those alone. A file without both markers keeps
    its text and gets the block appended; no file gets a title, then the block.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "results.md"
        >>> write_results(path, "Study", ["| table |"])
        >>> _ = path.write_text(path.read_text().replace("# Study", "# Study\\n\\nWhy we ran it."))
        >>> write_results(path, "Study", ["| new table |"])
        >>> print(path.read_text().replace(GENERATED_BEGIN, "BEGIN").replace(GENERATED_END, "END"))
        # Study
        <BLANKLINE>
        Why we ran it.
        <BLANKLINE>
        BEGIN
        | new table |
        END
        <BLANKLINE>
    """
    begin, end = markers(script)
    block = "\n".join([begin, *generated, end])
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin in text and end in text.split(begin, 1)[1]:
        before, rest = text.split(begin, 1)
        after = rest.split(end, 1)[1]
        path.write_text(before + block + after, encoding="utf-8")
    elif text.strip():
        path.write_text(f"{text.rstrip()}\n\n{block}\n", encoding="utf-8")
    else:
        path.write_text(f"# {title}\n\n{block}\n", encoding="utf-8")


def run_cost(run_dir: Path) -> tuple[float, float]:
    """(continuation plays, minutes) of one run: VinePPO's extra episodes and the logged step and eval times."""
    records = read_records(run_dir / "metrics.jsonl")
    plays = sum(float(r.get("vine/plays", 0.0)) for r in records)
    seconds = sum(float(r.get(key, 0.0)) for r in records for key in (*TIME_KEYS, "time/eval_s"))
    return plays, seconds / 60


def race_lines(output: Path, summaries: list[RuleSummary], episodes_per_run: int) -> list[str]:
    """Markdown: the race's success and score by evaluated step (95 % t-intervals over seeds), the option
    turns' accuracy, the paired success gain over GRPO at the last step, and each rule's cost."""
    from credit_lab import interval

    def cell(values: list[float], signed: bool = False) -> str:
        mean, half = interval(values)
        return f"{mean:+.3f} ± {half:.3f}" if signed else f"{mean:.3f} ± {half:.3f}"

    steps = summaries[0].steps
    lines = [
        "### Held-out success and score on the tuning set (mean ± 95 % t-interval over seeds)",
        "",
        "| rule | seeds | "
        + " | ".join(f"success at step {step}" for step in steps[1:])
        + " | "
        + " | ".join(f"score at step {step}" for step in steps[1:])
        + " |",
        "|---|---|" + "---|" * (2 * (len(steps) - 1)),
    ]
    for s in summaries:
        success = [[s.success[seed][i] for seed in s.seeds] for i in range(1, len(steps))]
        score = [[s.score[seed][i] for seed in s.seeds] for i in range(1, len(steps))]
        lines.append(
            f"| {s.name} | {len(s.seeds)} | "
            + " | ".join(cell(v) for v in success)
            + " | "
            + " | ".join(cell(v) for v in score)
            + " |"
        )
    warm = load_option_clicks(output / WARM_START)
    start = warm[max(warm)] if warm else None
    lines += [
        "",
        "### Option turns: share of option clicks that pick the goal's value (right / clicks, seeds pooled)",
        "",
        "| rule | " + " | ".join(f"step {step}" for step in steps) + " |",
        "|---|" + "---|" * len(steps),
    ]
    for s in summaries:
        counts = [load_option_clicks(output / f"{s.name}_{seed}") for seed in s.seeds]
        cells = []
        for step in steps:
            pairs = [start] if step == 0 and start else [c[step] for c in counts if step in c]
            clicks, right = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
            cells.append(f"{right / clicks:.2f} ({right}/{clicks})" if clicks else "–")
        lines.append(f"| {s.name} | " + " | ".join(cells) + " |")
    grpo = next((s for s in summaries if s.name == "grpo"), None)
    lines += [
        "",
        f"### Gain over GRPO and cost (success at step {steps[-1]}, paired by seed; a run's {episodes_per_run} "
        "training episodes plus VinePPO's continuation plays; minutes of logged step and evaluation time)",
        "",
        "| rule | success gain over GRPO | seeds paired | env episodes a run | minutes a run |",
        "|---|---|---|---|---|",
    ]
    for s in summaries:
        paired = [seed for seed in s.seeds if grpo is not None and seed in grpo.success]
        gain = (
            cell([s.success[seed][-1] - grpo.success[seed][-1] for seed in paired], signed=True)
            if grpo is not None and s is not grpo and paired
            else "–"
        )
        costs = [run_cost(output / f"{s.name}_{seed}") for seed in s.seeds]
        plays = statistics.mean(c[0] for c in costs)
        minutes = statistics.mean(c[1] for c in costs)
        lines.append(
            f"| {s.name} | {gain} | {len(paired) if s is not grpo else '–'} | {episodes_per_run + plays:.0f} "
            f"| {minutes:.1f} |"
        )
    return lines


def aggregate(args: argparse.Namespace) -> None:
    """Curves (PNG), the results table and the examples of every finished run under ``--output``."""
    output = Path(args.output)
    model, env, steps, config = preset_config(args.preset, args.env, args.steps)
    if uses_warm_start(args):
        model = f"the warm start in {WARM_START}/ (the `{MULTITURN_RECIPES[env]}` quick-start recipe's SFT of {model})"
    summaries = [s for a in args.algorithms if (s := summarize(output, a, args.seeds, steps)) is not None]
    if not summaries:
        print(f"no finished runs under {output}")
        return
    title = f"{' vs '.join(s.name.upper() for s in summaries)} · {env} · {args.preset} · mean ± std over seeds"
    plot_curves(summaries, config.num_groups * config.group_size, title, output / "learning_curves.png")
    unfinished = [
        f"{a}_{s}" for a in args.algorithms for s in args.seeds if not is_finished(output / f"{a}_{s}", steps)
    ]
    lines = [
        f"Model: {args.model or model}. {steps} steps x {config.num_groups} groups x {config.group_size} rollouts "
        f"({steps * config.num_groups * config.group_size} training episodes per run), held-out evaluation of "
        f"{config.eval_episodes} episodes (greedy) every {config.eval_every} steps; seeds {list(args.seeds)}; "
        "rules with the options of `RULES` in `benchmarks/credit_learning.py` (defaults otherwise)"
        + (
            f"; ORSD and TASPO count a trajectory as successful when it wins or scores at least {args.success_score} "
            "(`success_score`, an extension of the papers: they use wins only). "
            if args.success_score is not None
            else ". "
        )
        + "AUC: area under the held-out curve divided by its span (the curve's mean level); "
        "training success: the training batches' success, a sample of 16 episodes a step.",
        "",
        *results_table(summaries),
    ]
    if args.preset == "race":
        lines += ["", *race_lines(output, summaries, steps * config.num_groups * config.group_size)]
    if unfinished:
        lines += ["", f"Not finished (left out): {', '.join(unfinished)}."]
    write_results(output / "results.md", f"Learning comparison ({args.preset} preset, {env})", lines)
    (output / "examples.md").write_text("\n".join(example_lines(output, summaries, args.examples)) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu", choices=["cpu", "gpu", "smoke", "multiturn", "race"])
    parser.add_argument("--env", default="SearchQA-v0")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default: the preset's)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--algorithms", nargs="+", default=None, choices=ALGORITHMS, help="rules (default: by env, see above)"
    )
    parser.add_argument(
        "--model", default=None, help="model to start from (e.g. a warm start's folder; default: the preset's)"
    )
    parser.add_argument("--parallel", type=int, default=1, help="runs at once")
    parser.add_argument("--threads", type=int, default=0, help="torch threads per run (0: torch's default)")
    parser.add_argument("--max-minutes", type=float, default=0, help="stop starting runs after this long (0: never)")
    parser.add_argument(
        "--success-score",
        type=float,
        default=None,
        help="ORSD/TASPO count a trajectory as successful when it wins or scores at least this "
        "(their success_score option; default: wins only, the papers' rule)",
    )
    parser.add_argument("--examples", type=int, default=3, help="credit examples per rule in examples.md")
    parser.add_argument("--output", default="benchmarks/results/credit_learning")
    parser.add_argument("--aggregate-only", action="store_true")
    parser.add_argument("--worker", nargs=2, metavar=("ALGORITHM", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.algorithms is None:
        by_env = MULTITURN_ALGORITHMS if args.env in MULTITURN_RECIPES else DEFAULT_ALGORITHMS
        args.algorithms = list(RACE_ALGORITHMS if args.preset == "race" else by_env)
    if args.worker:
        run_one(args.worker[0], int(args.worker[1]), args)
        return
    if not args.aggregate_only:
        launch(args)
    aggregate(args)


if __name__ == "__main__":
    main()
