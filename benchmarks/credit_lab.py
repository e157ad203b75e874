"""The credit lab: every credit rule raced on the diagnostic envs, whose credit is known exactly.

For each setting of :data:`SWEEP` (an env of :mod:`agentenvs.diagnostics` and its difficulty
knobs), decided before any rule was compared:

1. **Warm start** (once per setting, shared by every rule and seed): SFT of SmolLM2-135M on
   :data:`WARM_START_TURNS` turns of the env's *uniform* demonstrator (``demonstrator="uniform"``:
   a uniformly random menu item each turn), so the start acts validly but knows nothing about
   the signal, and its success is about chance.
2. **Credit quality** (``quality``): from the warm start, :data:`QUALITY_BATCHES` fixed batches are
   collected; every rule computes its credit on each, and a turn's credit (the mean of its
   action's token advantages) is compared with the env's **exact** advantage
   (:meth:`~agentenvs.diagnostics.chain.DiagnosticEnv.exact_credit`) under the warm start's own
   probability of the marked item at every turn (teacher-forced, no sampling): Spearman's ρ within
   trajectories and the share of |credit| that lands on decisive turns.
3. **The race** (``race``): each rule of :data:`RULES`, with its one default, trains from the warm
   start for :data:`LAB.steps` steps of :data:`LAB.groups` × :data:`LAB.group_size` episodes, for
   every seed; held-out success (the eval split's signal words, greedy) every
   :data:`LAB.eval_every` steps.

Every (setting, rule, seed) run and every setting's quality measurement is one JSON record under
``--records`` (small, committed), written when it is done, so the sweep stops and resumes at run
granularity; shards can run side by side (``--parallel 2``: one process a core), though on 2 cores
one process with both threads collected faster (2.4 s against 5.5 s a step, the quick run's first
steps on an Intel Xeon with AMX), so the sweep runs in one.
Runs go seed-major (every setting and rule at seed 0, then seed 1, ...), so a partial sweep covers
everything with fewer seeds. ``report`` turns the records into ``results.md`` (between its markers),
``results.json`` and the plots: per setting and rule the success against env episodes with 95 %
intervals over seeds, episodes to reach 80 % of the best achievable success, a bsuite-style
score per rule across the sweep, the credit quality, and whether credit quality predicts
learning speed across settings.

Usage:
    PYTHONPATH=$PWD .venv/bin/python benchmarks/credit_lab.py run --study quick
    PYTHONPATH=$PWD .venv/bin/python benchmarks/credit_lab.py run --max-minutes 60   # the sweep, resumable
    PYTHONPATH=$PWD .venv/bin/python benchmarks/credit_lab.py report
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "credit_lab"
"""Where ``report`` writes; ``records/`` below it holds the runs."""
MODEL = "smollm2-135m"


@dataclass(frozen=True)
class Setting:
    """One env at one difficulty.

    Attributes:
        name: The setting's key in records and tables.
        env: A diagnostic env id.
        env_kwargs: Its difficulty knobs.
        best: The best achievable success (the expert's).
        chance: The uniform policy's success.
        what: One line for the tables.
    """

    name: str
    env: str
    env_kwargs: dict[str, Any]
    best: float
    chance: float
    what: str


SWEEP: tuple[Setting, ...] = (
    Setting("umbrella-1", "Umbrella-v0", {"length": 1}, 1.0, 1 / 3, "Umbrella, 1 turn (the one-turn control)"),
    Setting("umbrella-4", "Umbrella-v0", {"length": 4}, 1.0, 1 / 3, "Umbrella, decisive turn then 3 fillers"),
    Setting(
        "umbrella-4-distract",
        "Umbrella-v0",
        {"length": 4, "distractor": 1.0},
        1.0,
        1 / 3,
        "Umbrella, 4 turns, ±1 coin on each filler",
    ),
    Setting(
        "keydoor",
        "KeyDoor-v0",
        {"key_turns": 1, "apple_turns": 2, "door_turns": 1, "apple_reward": 0.5},
        1.0,
        1 / 6,
        "KeyDoor: key, 2 apple turns (0.5 each), door",
    ),
    Setting(
        "bifurcation-early",
        "Bifurcation-v0",
        {"length": 4, "fork_at": 0, "p": 0.9, "q": 0.1, "choices": 3},
        0.9,
        (0.9 + 2 * 0.1) / 3,
        "Bifurcation, fork at turn 1 of 4, p=0.9 q=0.1",
    ),
    Setting(
        "bifurcation-late",
        "Bifurcation-v0",
        {"length": 4, "fork_at": 3, "p": 0.9, "q": 0.1, "choices": 3},
        0.9,
        (0.9 + 2 * 0.1) / 3,
        "Bifurcation, fork at turn 4 of 4, p=0.9 q=0.1",
    ),
)
"""The sweep, fixed before any rule was compared (results.md lists what was tried). Longer chains
(Umbrella 8, 16) and a small p − q cost 2-4× a run here and are left out of the default sweep."""
SETTINGS = {setting.name: setting for setting in SWEEP}

RULES: dict[str, tuple[str, dict[str, object]]] = {
    "grpo": ("grpo", {}),
    "rloo": ("rloo", {}),
    "gigpo": ("gigpo", {}),
    "vine": ("vine", {"continuations": 2}),
    "orsd": ("orsd", {}),
    "taspo": ("taspo", {}),
    "orsd_env": ("orsd", {"env_pi": "add"}),
    "taspo_env": ("taspo", {"env_pi": "add"}),
    "orsd_paper": ("orsd", {"proposer": "policy", "verifier": "reference"}),
    "taspo_paper": ("taspo", {"analyzer": "policy"}),
}
"""Name -> (registered credit rule, its one default in the lab). Each rule's registered defaults,
except VinePPO's K: 2 continuations per state instead of 4 (its cost grows with K × turns²; K is
counted in its env episodes). ``*_env``: the env's privileged information added to the rule's own
PI (the extension); ``*_paper``: the PI written by the policy itself, as in the papers."""
SCALE_REWARDS = {"rloo": "none"}
"""RLOO's estimator leaves rewards unscaled (its paper's form), as everywhere in the project."""


@dataclass(frozen=True)
class LabSettings:
    """What every run of a study shares (fixed before any rule was compared).

    Attributes:
        steps: RL steps a run.
        groups, group_size: Tasks a step and episodes a task.
        updates_per_batch: Optimiser passes over each collected batch (``num_iterations``; above 1
            the clipped ratio is active).
        eval_every, eval_episodes: Held-out evaluation cadence and size.
        seeds: The seeds every rule runs.
        quality_batches, quality_groups: The credit-quality stage's batches and their groups.
    """

    steps: int = 16
    groups: int = 4
    group_size: int = 4
    updates_per_batch: int = 1
    eval_every: int = 4
    eval_episodes: int = 32
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    quality_batches: int = 2
    quality_groups: int = 8


LAB = LabSettings()


@dataclass(frozen=True)
class Study:
    """A named part of the lab: which settings and rules run at which :class:`LabSettings`.

    Attributes:
        settings, rules: Keys of :data:`SETTINGS` and :data:`RULES`.
        lab: What the runs share.
        folder: Under :data:`RESULTS`: where its ``records/`` and report go ("" for the sweep).
        quality: Whether the study measures credit quality (the warm starts are the sweep's, so
            its quality records are the sweep's too).
    """

    settings: tuple[str, ...]
    rules: tuple[str, ...]
    lab: LabSettings
    folder: str
    quality: bool = True


STUDIES: dict[str, Study] = {
    "sweep": Study(tuple(SETTINGS), tuple(RULES), LAB, ""),
    "quick": Study(
        ("umbrella-4",), ("grpo", "gigpo", "taspo_env"), dataclasses.replace(LAB, steps=8, seeds=(0, 1)), "quick"
    ),
    "long": Study(
        ("umbrella-4",),
        ("grpo", "gigpo", "vine", "orsd_env", "taspo_env"),
        dataclasses.replace(LAB, steps=32, updates_per_batch=4, eval_every=8, seeds=(0, 1, 2)),
        "long",
        quality=False,
    ),
}
"""``sweep``: every setting and rule, the lab's budget. ``quick``: one setting, three rules, two
seeds, 8 steps (the ≤ 10 min check). ``long``: the 4-turn Umbrella with GRPO and the four rules
whose credit ranked the exact advantages best there (the sweep's quality stage, ρ ≥ 0.23), at twice
the episodes and four updates a batch: the budget at which GRPO learned the one-turn control in
the calibration (results.md lists every configuration tried), so that a rule whose credit finds
the decisive turn has room to learn faster."""
WARM_START_TURNS = 384
"""Demonstrated turns of the uniform demonstrator per warm start (episodes = turns / chain length)."""


def shared_fields(setting: Setting) -> dict[str, Any]:
    """The prompt, adapter and optimiser settings of both stages (SFT and RL must prompt alike)."""
    return {
        "history_length": 0,  # every diagnostic env is Markov in its observation and task line
        "prompt_preamble": "",
        "system_prompt": "",
        "show_admissible": True,
        "lora": True,
        "lora_top_layers": 8,
        "trunk_dtype": "auto",
        "micro_batch_size": 16,
        "max_new_tokens": 6,
        "learning_rate": 1e-3,
        "lr_scheduler_type": "constant",
        "seed": 0,
        "eval_episodes": LAB.eval_episodes,
        "eval_env_kwargs": {"split": "eval"},
        "env_kwargs": dict(setting.env_kwargs),
        "progress": False,
    }


def sft_config(setting: Setting, folder: Path):
    from agents.sft import SFTConfig

    fields = shared_fields(setting)
    fields["env_kwargs"] = {**fields["env_kwargs"], "demonstrator": "uniform"}
    turns = chain_length(setting)
    return SFTConfig(
        **fields,
        expert_episodes=-(-WARM_START_TURNS // turns),
        epochs=2,
        batch_size=16,
        eval_before=False,
        output_dir=str(folder),
        resume=(folder / "config.json").exists(),
    )


def rl_config(setting: Setting, rule: str, seed: int, folder: Path, lab: LabSettings):
    from agents import GRPOConfig

    credit, options = RULES[rule]
    return GRPOConfig(
        **{**shared_fields(setting), "seed": seed},
        credit=credit,
        credit_options=dict(options),
        scale_rewards=SCALE_REWARDS.get(rule, "group"),
        num_groups=lab.groups,
        group_size=lab.group_size,
        num_iterations=lab.updates_per_batch,
        temperature=1.0,
        eval_every=lab.eval_every,
        save_every=0,
        tensorboard=False,
        output_dir=str(folder),
        resume=True,  # a run killed before its record was written starts again in its own folder
    )


def chain_length(setting: Setting) -> int:
    import gymnasium as gym

    import agentenvs  # noqa: F401

    return int(gym.make(setting.env, **setting.env_kwargs).unwrapped.num_turns)


# -- records ---------------------------------------------------------------------------------------


def record_path(records: Path, setting: str, kind: str) -> Path:
    return records / setting / f"{kind}.json"


def write_record(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    os.replace(partial, path)  # a record is whole or absent


def read_records(records: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(records.glob("*/*.json"))]


def machine() -> str:
    """The CPU as ``lscpu`` names it, and whether it has bf16 units."""
    name, flags = platform.processor() or "unknown", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and name in ("unknown", "x86_64", ""):
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line
    except OSError:
        pass
    return f"{name} ({os.cpu_count()} cores{', avx512_bf16' if 'avx512_bf16' in flags else ''})"


# -- stage 1: the warm start -----------------------------------------------------------------------


def weights_digest(model: Path) -> str:
    """A short digest of a saved model's weights: which warm start a run started from."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(model.glob("*.safetensors")):
        with path.open("rb") as handle:
            while block := handle.read(1 << 24):
                digest.update(block)
    return digest.hexdigest()[:16]


def warm_start(setting: Setting, work: Path, records: Path) -> tuple[str, int, dict[str, float]]:
    """The setting's warm start: its model folder, its sitting and its held-out evaluation.

    The model is trained once per machine (model folders are not committed). The record keeps one
    sitting per distinct set of weights, so that a run names the warm start it started from and the
    report pairs rules only within one; training again never replaces an earlier sitting."""
    folder = work / setting.name / "warm_start"
    path = record_path(records, setting.name, "warm_start")
    record = json.loads(path.read_text()) if path.exists() else {"kind": "warm_start", "setting": setting.name}
    sittings: list[dict[str, Any]] = record.setdefault("sittings", [])
    if not (folder / "model" / "config.json").exists():
        from agents.sft import SFTAgent

        started = time.perf_counter()
        agent = SFTAgent(MODEL, setting.env, sft_config(setting, folder))
        result = agent.learn()
        agent.save_pretrained(folder / "model")
        evaluation = {key: float(value) for key, value in result.items() if key.startswith("eval/")}
        seconds = time.perf_counter() - started
        (folder / "evaluation.json").write_text(json.dumps({"evaluation": evaluation, "seconds": seconds}))
    digest = weights_digest(folder / "model")
    for number, sitting in enumerate(sittings):
        if sitting["digest"] == digest:
            return str(folder / "model"), number, sitting["evaluation"]
    trained = json.loads((folder / "evaluation.json").read_text())
    sittings.append({"digest": digest, "machine": machine(), **trained})
    write_record(path, record)
    return str(folder / "model"), len(sittings) - 1, trained["evaluation"]


# -- stage 2: credit quality against the exact advantages -----------------------------------------


def quality(setting: Setting, model: str, records: Path, rules: Sequence[str], lab: LabSettings) -> None:
    """Measures every rule's credit against the exact advantages on the warm start's batches."""
    path = record_path(records, setting.name, "quality")
    done = json.loads(path.read_text()) if path.exists() else {"rules": {}}
    missing = [rule for rule in rules if rule not in done["rules"]]
    if not missing:
        return
    import gymnasium as gym
    import torch
    from credit_quality import exact_reference, turn_means

    import agentenvs  # noqa: F401
    from agents.agent import build_policy
    from agents.algorithms.base import CreditContext, make_credit_rule
    from agents.collection.collector import Collector
    from agents.reference import ContinuationRunner

    config = dataclasses.replace(rl_config(setting, "grpo", 0, Path("unused"), lab), num_groups=lab.quality_groups)
    policy = build_policy(model, config)
    env_kwargs = config.env_kwargs_with_limit()
    players = {
        "prompt_builder": config.prompt_builder(),
        "invalid_action_penalty": config.invalid_action_penalty,
        "success_bonus": config.success_bonus,
    }
    privileged_kwargs = {**env_kwargs, "privileged": True}
    collector = Collector(
        policy,
        setting.env,
        num_groups=config.num_groups,
        group_size=config.group_size,
        env_kwargs=privileged_kwargs,
        record_snapshots=True,
        **players,
    )
    runner = ContinuationRunner(policy, setting.env, env_kwargs=privileged_kwargs, width=64, **players)
    env = gym.make(setting.env, **env_kwargs).unwrapped
    # A batch's credits must all come from one collection: with rules missing, all are computed anew
    # (a re-collected batch can differ in the last bits when the thread count differs).
    batches: list[dict[str, Any]] = []
    try:
        for index in range(lab.quality_batches):
            seed = 1000 + index
            torch.manual_seed(seed)
            with policy.keeping_prompt_caches(True):
                batch, _ = collector.collect(seed=seed)
            reference = exact_reference(policy, env, batch)
            entry: dict[str, Any] = {"credit": {}, "seconds": {}}
            entry.update(
                {
                    "seed": seed,
                    "trajectory": [int(i) for i in batch.trajectory_index.tolist()],
                    "turn": [int(i) for i in batch.turn_index.tolist()],
                    "exact": reference["advantage"],
                    "decisive": reference["decisive"],
                    "marked_probability_turn0": float(np.mean(reference["marked_probability_turn0"])),
                    "success_rate": float(batch.trajectory_success.float().mean()),
                }
            )
            for rule in sorted(rules, key=lambda name: RULES[name][0] == "vine"):
                credit_name, options = RULES[rule]
                if credit_name == "vine":
                    policy.clear_prompt_caches()
                rule_config = dataclasses.replace(
                    config,
                    credit=credit_name,
                    credit_options=dict(options),
                    scale_rewards=SCALE_REWARDS.get(rule, "group"),
                )
                started = time.perf_counter()
                torch.manual_seed(seed)
                context = CreditContext(rule_config, policy=policy, continuations=runner)
                result = make_credit_rule(credit_name, rule_config).compute(batch, context)
                entry["seconds"][rule] = time.perf_counter() - started
                entry["credit"][rule] = turn_means(result.advantages, batch)
            policy.clear_prompt_caches()
            batches.append(entry)
            write_record(
                path,
                {
                    "kind": "quality",
                    "setting": setting.name,
                    "rules": {rule: True for rule in rules} if index + 1 == lab.quality_batches else {},
                    "batches": batches,
                    "machine": machine(),
                },
            )
    finally:
        collector.close()
        runner.close()


# -- stage 3: the race -----------------------------------------------------------------------------


def race_run(
    setting: Setting,
    rule: str,
    seed: int,
    model: str,
    sitting: int,
    start: dict[str, float],
    work: Path,
    records: Path,
    lab: LabSettings,
) -> None:
    """Trains one rule from the warm start (``sitting``: which one, see :func:`warm_start`) and
    records its curve."""
    from agents import GRPOAgent
    from agents.reports.plotting import read_metrics

    folder = work / setting.name / f"{rule}_{seed}"
    config = rl_config(setting, rule, seed, folder, lab)
    started = time.perf_counter()
    agent = GRPOAgent(model, setting.env, config)
    try:
        agent.learn(lab.steps, plot=False, start_evaluation=start)
    finally:
        agent.close()
    seconds = time.perf_counter() - started
    metrics = read_metrics(folder / "metrics.jsonl")
    episodes_per_step = lab.groups * lab.group_size
    curve = [
        {
            "step": int(r["step"]),
            "episodes": int(r["step"]) * episodes_per_step,
            "success": float(r["eval/success_rate"]),
            "score": float(r.get("eval/mean_score", math.nan)),
            "invalid": float(r.get("eval/invalid_rate", math.nan)),
        }
        for r in metrics
        if "eval/success_rate" in r
    ]
    plays = sum(float(r.get("vine/plays", 0.0)) for r in metrics)
    totals = {key: sum(float(r.get(f"time/{key}_s", 0.0)) for r in metrics) for key in ("collect", "credit", "update")}
    write_record(
        record_path(records, setting.name, f"{rule}_{seed}"),
        {
            "kind": "race",
            "setting": setting.name,
            "rule": rule,
            "seed": seed,
            "warm_start": sitting,
            "curve": curve,
            "train_success": [float(r["train/success_rate"]) for r in metrics if "train/success_rate" in r],
            "training_episodes": lab.steps * episodes_per_step,
            "continuation_plays": plays,
            "seconds": seconds,
            "seconds_by_part": totals,
            "machine": machine(),
        },
    )


def plan(settings: Sequence[str], rules: Sequence[str], seeds: Sequence[int]) -> list[tuple[str, str, int]]:
    """The race's runs, seed-major (a partial sweep covers every setting and rule with fewer seeds)."""
    return [(setting, rule, seed) for seed in seeds for setting in settings for rule in rules]


def run(args: argparse.Namespace) -> None:
    import torch

    if args.parallel > 1:
        parallel(args)
        return
    study = STUDIES[args.study]
    settings = list(args.settings or study.settings)
    rules = list(args.rules or study.rules)
    seeds = list(args.seeds or study.lab.seeds)
    unknown = [name for name in settings if name not in SETTINGS] + [name for name in rules if name not in RULES]
    if unknown:
        raise SystemExit(f"unknown setting or rule: {unknown}; settings {list(SETTINGS)}, rules {list(RULES)}")
    shard, shards = (int(part) for part in args.shard.split("/"))
    if args.threads:
        torch.set_num_threads(args.threads)
    lab, sweep_records, work = study.lab, Path(args.records), Path(args.work)
    records = sweep_records.parent / study.folder / "records" if study.folder else sweep_records
    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else math.inf
    starts: dict[str, tuple[str, int, dict[str, float]]] = {}
    jobs: list[tuple[str, Any]] = []
    for index, name in enumerate(settings):
        if study.quality and index % shards == shard:
            jobs.append(("quality", name))
    for index, (name, rule, seed) in enumerate(plan(settings, rules, seeds)):
        if index % shards == shard and not record_path(records, name, f"{rule}_{seed}").exists():  # resumable
            jobs.append(("race", (name, rule, seed)))
    print(f"credit lab, shard {shard}/{shards}: {len(jobs)} jobs on {machine()}", flush=True)
    for number, (kind, job) in enumerate(jobs, start=1):
        if time.monotonic() > deadline:
            print("--max-minutes reached: stopping (rerun to go on)", flush=True)
            return
        name = job if kind == "quality" else job[0]
        setting = SETTINGS[name]
        if name not in starts:
            starts[name] = warm_start(setting, work, sweep_records)  # every study starts from the sweep's
        model, sitting, start = starts[name]
        began = time.perf_counter()
        if kind == "quality":
            quality(setting, model, records, rules, lab)
            label = f"quality {name}"
        else:
            _, rule, seed = job
            race_run(setting, rule, seed, model, sitting, start, work / study.folder, records, lab)
            label = f"race {name} {rule} seed {seed}"
        print(f"[{number}/{len(jobs)}] {label}: {time.perf_counter() - began:.0f} s", flush=True)


def parallel(args: argparse.Namespace) -> None:
    """Trains the warm starts here, then runs ``--parallel`` shards as processes of one thread each."""
    import subprocess
    import sys

    settings = list(args.settings or STUDIES[args.study].settings)
    for name in settings:
        warm_start(SETTINGS[name], Path(args.work), Path(args.records))
    base = [sys.executable, str(Path(__file__).resolve()), "run", "--threads", "1", "--records", args.records]
    base += ["--work", args.work, "--max-minutes", str(args.max_minutes), "--study", args.study]
    for flag, values in (("--settings", args.settings), ("--rules", args.rules), ("--seeds", args.seeds)):
        if values:
            base += [flag, *map(str, values)]
    shards = [subprocess.Popen([*base, "--shard", f"{i}/{args.parallel}"]) for i in range(args.parallel)]
    codes = [shard.wait() for shard in shards]
    if any(codes):
        raise SystemExit(f"a shard failed: exit codes {codes}")


# -- the report --------------------------------------------------------------------------------------


def interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % t-interval (0 for one value; NaN ignored)."""
    from scipy import stats

    from agents.reports.curves import mean_interval

    finite = [float(v) for v in values if not math.isnan(v)]
    if not finite:
        return math.nan, math.nan
    t = float(stats.t.ppf(0.975, len(finite) - 1)) if len(finite) > 1 else 0.0
    mean, _, high = mean_interval(finite, z=t)
    return mean, high - mean


def race_table(race: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (setting, rule): the curve's steps, per-seed successes, final success, AUC and normalised gain."""
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for record in race:
        key = (record["setting"], record["rule"])
        entry = table.setdefault(key, {"seeds": [], "warm_starts": [], "curves": [], "seconds": [], "plays": []})
        entry["seeds"].append(record["seed"])
        entry["warm_starts"].append(record["warm_start"])
        entry["curves"].append([point["success"] for point in record["curve"]])
        entry["episodes"] = [point["episodes"] for point in record["curve"]]
        entry["seconds"].append(record["seconds"])
        entry["plays"].append(record["continuation_plays"])
    for (name, _), entry in table.items():
        setting = SETTINGS[name]
        curves = np.asarray(entry["curves"], dtype=float)
        entry["final"] = curves[:, -1].tolist()
        entry["auc"] = curves.mean(axis=1).tolist()
        span = max(setting.best - setting.chance, 1e-9)
        entry["score"] = np.clip((curves[:, -1] - setting.chance) / span, 0, 1).tolist()
        mean = curves.mean(axis=0)
        target = 0.8 * setting.best
        reached = [e for e, s in zip(entry["episodes"], mean, strict=True) if s >= target]
        entry["episodes_to_80"] = reached[0] if reached else None
    return table


def paired_gains(races: dict[tuple[str, str], dict[str, Any]], key: str = "auc") -> dict[tuple[str, str], list[float]]:
    """Per (setting, rule other than GRPO): ``key``'s per-seed difference from GRPO's run with the same
    seed from the same warm start (same weights, same first batch), over the seeds both have run."""
    gains: dict[tuple[str, str], list[float]] = {}
    for (name, rule), entry in races.items():
        base = races.get((name, "grpo"))
        if rule == "grpo" or base is None:
            continue
        grpo = dict(zip(zip(base["seeds"], base["warm_starts"], strict=True), base[key], strict=True))
        runs = zip(entry["seeds"], entry["warm_starts"], entry[key], strict=True)
        gains[(name, rule)] = [value - grpo[(seed, start)] for seed, start, value in runs if (seed, start) in grpo]
    return gains


def quality_table(quality_records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """Per (setting, rule): mean within-trajectory ρ with the exact advantage, the share of |credit|
    on decisive turns, and the sign agreement on decisive turns."""
    from credit_quality import trajectory_rhos

    table: dict[tuple[str, str], dict[str, float]] = {}
    for record in quality_records:
        batches = record["batches"]
        rules = sorted({rule for batch in batches for rule in batch["credit"]})
        for rule in rules:
            rhos, shares, signs, flat_shares = [], [], [], []
            for batch in batches:
                if rule not in batch["credit"]:
                    continue
                credit = np.asarray(batch["credit"][rule], dtype=float)
                exact = np.asarray(batch["exact"], dtype=float)
                decisive = np.asarray(batch["decisive"], dtype=bool)
                trajectories = np.asarray(batch["trajectory"])
                rhos += list(trajectory_rhos(credit, exact, trajectories).values())
                for t in np.unique(trajectories):
                    rows = trajectories == t
                    if rows.sum() < 2 or not decisive[rows].any():
                        continue
                    total = np.abs(credit[rows]).sum()
                    if total > 1e-9:
                        shares.append(float(np.abs(credit[rows & decisive]).sum() / total))
                    flat_shares.append(float(decisive[rows].mean()))
                chosen = decisive & (np.abs(exact) > 1e-6)
                signs += (np.sign(credit[chosen]) == np.sign(exact[chosen])).tolist()
            table[(record["setting"], rule)] = {
                "within_rho": float(np.mean(rhos)) if rhos else math.nan,
                "decisive_share": float(np.mean(shares)) if shares else math.nan,
                "flat_share": float(np.mean(flat_shares)) if flat_shares else math.nan,
                "sign": float(np.mean(signs)) if signs else math.nan,
                "trajectories": float(len(rhos)),
            }
    return table


def fmt(mean: float, half: float | None = None, digits: int = 2) -> str:
    if math.isnan(mean):
        return "–"
    return f"{mean:.{digits}f}" if half is None else f"{mean:.{digits}f} ± {half:.{digits}f}"


def report(args: argparse.Namespace) -> None:
    from credit_learning import write_results
    from scipy.stats import spearmanr

    records = read_records(Path(args.records))
    race = [r for r in records if r["kind"] == "race"]
    starts = {r["setting"]: r for r in records if r["kind"] == "warm_start"}
    races = race_table(race)
    qualities = quality_table([r for r in records if r["kind"] == "quality"])
    settings = [s.name for s in SWEEP if any(key[0] == s.name for key in races) or s.name in starts]
    rules = [rule for rule in RULES if any(key[1] == rule for key in races) or any(key[1] == rule for key in qualities)]
    lines = [
        "### Settings",
        "",
        "| setting | what | chance | best | warm start: held-out success / invalid |",
        "|---|---|---|---|---|",
    ]
    for name in settings:
        setting = SETTINGS[name]
        cells = [
            f"{fmt(sitting['evaluation'].get('eval/success_rate', math.nan))} / "
            f"{fmt(sitting['evaluation'].get('eval/invalid_rate', math.nan))} (sitting {number}: {sitting['machine']})"
            for number, sitting in enumerate(starts.get(name, {}).get("sittings", []))
        ]
        lines.append(
            f"| {name} | {setting.what} | {setting.chance:.2f} | {setting.best:.2f} | {'; '.join(cells) or '–'} |"
        )
    lines += ["", "### Final held-out success (mean ± 95 % interval over seeds; seeds in brackets)", ""]
    lines += ["| rule | " + " | ".join(settings) + " | bsuite-style score |", "|---" * (len(settings) + 2) + "|"]
    scores: dict[str, float] = {}
    for rule in rules:
        cells, rule_scores = [], []
        for name in settings:
            entry = races.get((name, rule))
            if entry is None:
                cells.append("–")
                continue
            mean, half = interval(entry["final"])
            cells.append(f"{fmt(mean, half)} [{len(entry['final'])}]")
            rule_scores.append(float(np.mean(entry["score"])))
        scores[rule] = float(np.mean(rule_scores)) if rule_scores else math.nan
        lines.append(f"| {rule} | " + " | ".join(cells) + f" | {fmt(scores[rule])} |")
    lines += ["", "### Area under the success curve (mean over evaluations and seeds ± 95 %)", ""]
    lines += ["| rule | " + " | ".join(settings) + " |", "|---" * (len(settings) + 1) + "|"]
    for rule in rules:
        cells = []
        for name in settings:
            entry = races.get((name, rule))
            cells.append("–" if entry is None else fmt(*interval(entry["auc"])))
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    gains = paired_gains(races)
    lines += [
        "",
        "### AUC gain over GRPO, paired by seed and warm start (mean ± 95 % interval; seeds in brackets; **bold**: "
        "above 0)",
        "",
    ]
    lines += ["| rule | " + " | ".join(settings) + " |", "|---" * (len(settings) + 1) + "|"]
    for rule in rules:
        if rule == "grpo":
            continue
        cells = []
        for name in settings:
            diffs = gains.get((name, rule), [])
            if not diffs:
                cells.append("–")
                continue
            mean, half = interval(diffs)
            text = f"{mean:+.3f} ± {half:.3f} [{len(diffs)}]"
            cells.append(f"**{text}**" if len(diffs) > 1 and mean - half > 0 else text)
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    lines += ["", "### Training episodes to reach 80 % of the best achievable success (mean curve; – not reached)", ""]
    lines += ["| rule | " + " | ".join(settings) + " | seconds a run (median) | continuation plays a run |"]
    lines += ["|---" * (len(settings) + 3) + "|"]
    for rule in rules:
        cells, seconds, plays = [], [], []
        for name in settings:
            entry = races.get((name, rule))
            cells.append("–" if entry is None or entry["episodes_to_80"] is None else str(entry["episodes_to_80"]))
            if entry is not None:
                seconds += entry["seconds"]
                plays += entry["plays"]
        lines.append(
            f"| {rule} | " + " | ".join(cells) + f" | {np.median(seconds) if seconds else math.nan:.0f} | "
            f"{np.mean(plays) if plays else 0:.0f} |"
        )
    lines += ["", "### Credit quality against the exact advantages (warm start's batches)", ""]
    lines += ["within-trajectory ρ / share of |credit| on decisive turns / sign agreement on decisive turns", ""]
    lines += ["| rule | " + " | ".join(settings) + " |", "|---" * (len(settings) + 1) + "|"]
    for rule in rules:
        cells = []
        for name in settings:
            q = qualities.get((name, rule))
            cells.append(
                "–" if q is None else f"{fmt(q['within_rho'])} / {fmt(q['decisive_share'])} / {fmt(q['sign'])}"
            )
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    flat = {name: qualities.get((name, "grpo"), {}).get("flat_share", math.nan) for name in settings}
    lines += ["", "Flat credit's share on decisive turns: " + ", ".join(f"{n} {fmt(v)}" for n, v in flat.items())]
    # Does credit quality predict learning speed? Across (setting, rule) pairs with both, rank the
    # within-trajectory ρ against the paired AUC gain over GRPO in the same setting.
    pairs = []
    for (name, rule), q in qualities.items():
        diffs = gains.get((name, rule), [])
        if not diffs or math.isnan(q["within_rho"]):
            continue
        pairs.append((q["within_rho"], float(np.mean(diffs)), name, rule))
    if len(pairs) >= 3:
        result = spearmanr([p[0] for p in pairs], [p[1] for p in pairs])
        lines += [
            "",
            f"Credit quality against learning speed: Spearman ρ = {result.statistic:.2f} (p = {result.pvalue:.2f}) "
            f"between a rule's within-trajectory ρ and its mean paired AUC gain over GRPO in the same setting, over "
            f"{len(pairs)} (setting, rule) pairs.",
        ]
    machines = sorted(
        {r["machine"] for r in records if "machine" in r}
        | {sitting["machine"] for start in starts.values() for sitting in start["sittings"]}
    )
    lines += ["", f"Machines: {'; '.join(machines)}. Records: {len(race)} runs."]
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    write_results(out / "results.md", "Credit lab", lines, script="credit_lab.py")
    summary = {
        "race": {f"{k[0]}/{k[1]}": {key: v for key, v in e.items() if key != "curves"} for k, e in races.items()},
        "quality": {f"{k[0]}/{k[1]}": v for k, v in qualities.items()},
        "scores": scores,
        "auc_gain_over_grpo": {f"{k[0]}/{k[1]}": v for k, v in gains.items()},
    }
    (out / "results.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    plot(races, settings, rules, out)
    print("\n".join(lines))


def plot(races: dict[tuple[str, str], dict[str, Any]], settings: list[str], rules: list[str], out: Path) -> None:
    """One panel per setting, one curve per rule (mean ± 95 % over seeds); also each panel alone."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def draw(axis: Any, name: str) -> None:
        for index, rule in enumerate(rules):
            entry = races.get((name, rule))
            if entry is None:
                continue
            columns = [interval(column) for column in zip(*entry["curves"], strict=True)]
            mean, half = (np.asarray(values) for values in zip(*columns, strict=True))
            style = "-" if index < 10 else "--"
            axis.plot(entry["episodes"], mean, style, label=rule, color=f"C{index % 10}")
            axis.fill_between(entry["episodes"], mean - half, mean + half, alpha=0.12, color=f"C{index % 10}")
        setting = SETTINGS[name]
        axis.axhline(setting.chance, color="gray", linestyle=":", linewidth=1)
        axis.set_title(f"{name}: {setting.what}", fontsize=8)
        axis.set_xlabel("training episodes")
        axis.set_ylabel("held-out success")

    columns = 4
    figure, axes = plt.subplots(
        math.ceil(len(settings) / columns),
        columns,
        figsize=(4 * columns, 3.2 * math.ceil(len(settings) / columns)),
        squeeze=False,
    )
    for axis, name in zip(axes.flat, settings, strict=False):
        draw(axis, name)
    for axis in list(axes.flat)[len(settings) :]:
        axis.axis("off")
    axes.flat[0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out / "credit_lab.png", dpi=110)
    plt.close(figure)
    for name in settings:
        figure, axis = plt.subplots(figsize=(5.5, 3.6))
        draw(axis, name)
        axis.legend(fontsize=7, ncol=2)
        figure.tight_layout()
        figure.savefig(out / f"credit_lab_{name}.png", dpi=110)
        plt.close(figure)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("run", help="warm starts, credit quality and the race (resumable)")
    runner.add_argument("--study", choices=list(STUDIES), default="sweep", help="see STUDIES (default: the sweep)")
    runner.add_argument("--settings", nargs="*", help="default: the study's")
    runner.add_argument("--rules", nargs="*", help="default: the study's")
    runner.add_argument("--seeds", nargs="*", type=int, help="default: the study's")
    runner.add_argument("--shard", default="0/1", help="i/n: this process runs every n-th job from the i-th")
    runner.add_argument("--threads", type=int, default=0, help="torch threads of this process (0: torch's default)")
    runner.add_argument("--parallel", type=int, default=1, help="run this many shards as processes (one thread each)")
    runner.add_argument("--max-minutes", type=float, default=0, help="stop starting jobs after this long (0: never)")
    runner.add_argument("--records", default=str(RESULTS / "records"), help="the sweep's (a study's: ../<folder>)")
    runner.add_argument("--work", default="runs/credit_lab", help="model folders (not committed)")
    reporter = commands.add_parser("report", help="tables, plots and results.json from the records")
    reporter.add_argument("--records", default=str(RESULTS / "records"))
    reporter.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args(argv)
    (run if args.command == "run" else report)(args)


if __name__ == "__main__":
    main()
