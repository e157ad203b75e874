"""Credit quality: does each rule's per-turn credit point where the step values do?

Learning curves at 8 steps of 16 episodes cannot tell the credit rules apart, so this measures
the credit itself. From a quick-start warm start (``--preset webshop`` or ``alfworld``), a fixed
set of batches is collected (batch ``b`` is seeded ``--seed + b``, the same for every rule), and
on each batch

- every rule of :data:`QUALITY_RULES` computes its credit (GRPO, RLOO, GiGPO, ORSD, TASPO, TASPO
  token-level, the env-PI and whole-prompt variants, ORSD and TASPO in the papers' own form —
  bundles written by the current policy and judged by the frozen initial one, guidance from the
  policy as analyzer — and VinePPO with its own continuations); a turn's credit is the mean of
  the rule's advantages over the action's tokens (the whole response where the turn has no
  valid action), and for the PI rules also the mean PI log-prob shift Δ there;
- two references value every turn (:mod:`agents.reference`): the env's **expert** (QVal-style
  A^E = Q^E − V^E: the expert's return after the turn's action against its return from the
  turn's start; ALFWorld plans from any state, ``expert_plan=True``) and the current policy's
  **Monte Carlo** advantage (VinePPO-style A^MC = r_t + V̂(s_{t+1}) − V̂(s_t), V̂ the mean return
  of ``--mc-samples`` continuations, drawn independently of the vine rule's own).

For the diagnostic envs (``agentenvs.diagnostics``) the reference is exact: :func:`exact_reference`
(the env's closed-form advantages under the policy's own probability of each turn's marked item),
which ``benchmarks/credit_lab.py`` measures every rule against.

Every batch is one JSON file under ``--output/<preset>/`` (turns, references, credits), written
when the batch is done, so a run stops and resumes at batch granularity (``collect`` skips the
batches on disk). ``report`` reads them all and writes ``results.md``, ``results.json`` and
``credit_quality.png``: per env, rule and reference, Spearman's ρ over all turns, the mean ρ
**within trajectories** (what only step-level credit can get right: a rule flat within a
trajectory, like GRPO, scores 0 there), the sign agreement on turns with |A| above
``--threshold``, each with a 95 % bootstrap interval over trajectories, and the same for the
privileged shift alone.

Usage:
    PYTHONPATH=$PWD .venv/bin/python benchmarks/credit_quality.py collect --preset webshop --batches 6
    PYTHONPATH=$PWD .venv/bin/python benchmarks/credit_quality.py collect --preset alfworld --batches 3
    PYTHONPATH=$PWD .venv/bin/python benchmarks/credit_quality.py report
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from credit_learning import RULES, write_results

RESULTS = Path(__file__).resolve().parent / "results" / "credit_quality"
"""Where ``report`` writes, and ``collect``'s default output."""
QUALITY_RULES: dict[str, tuple[str, dict[str, object], dict[str, object]]] = {
    **RULES,
    "orsd_paper": ("orsd", {"proposer": "policy", "verifier": "reference"}, {}),
    "taspo_paper": ("taspo", {"analyzer": "policy"}, {}),
    "orsd_score": ("orsd", {"success_score": 0.75}, {}),
    "taspo_score": ("taspo", {"success_score": 0.75}, {}),
    "vine": ("vine", {"continuations": 4}, {}),
}
"""Name -> (registered credit rule, its credit_options, other GRPOConfig fields): ``credit_learning``'s
rules, the PI rules in their papers' form (an LLM writes the rubrics / guidance: here the policy
itself), ORSD and TASPO counting a trajectory as successful from a score of 0.75 (``success_score``,
our extension: WebShop's warm start rarely wins outright, and without a success they have no PI)
and VinePPO with its own K = 4 continuations."""
REFERENCES = {"expert": "A^E (expert)", "mc": "A^MC (policy)"}
"""Reference key in a batch file -> how the tables name it."""
EXPERT_KWARGS: dict[str, dict[str, Any]] = {"ALFWorld-v0": {"expert_plan": True}}
"""Env keywords the expert reference adds (ALFWorld: plan from any state, not just the walkthrough)."""
METRICS = ("overall", "within", "sign")
TOLERANCE = 1e-5
"""Values closer than this are equal (and |x| below it is 0): float32 sums leave ~1e-7 where a
difference is 0, and such dust must not rank or sign a turn."""


def tied(values: Any) -> np.ndarray:
    """``values`` with every run of sorted neighbours closer than :data:`TOLERANCE` set to the run's
    first value (so they tie), and near-zeros set to 0.

    >>> tied([0.3, 0.1 + 1e-7, 0.1, 4e-7]).tolist()
    [0.3, 0.1, 0.1, 0.0]
    """
    array = np.asarray(values, dtype=float).copy()
    array[np.abs(array) < TOLERANCE] = 0.0
    order = np.argsort(array, kind="stable")
    for previous, current in zip(order, order[1:], strict=False):
        if array[current] - array[previous] < TOLERANCE:
            array[current] = array[previous]
    return array


# -- metrics -------------------------------------------------------------------------------------


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ (ties share their mean rank); NaN when either side is constant or has < 2 values."""
    from scipy.stats import spearmanr

    a, b = tied(x), tied(y)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(spearmanr(a, b).statistic)


def trajectory_rhos(credit: np.ndarray, reference: np.ndarray, trajectories: np.ndarray) -> dict[int, float]:
    """Per trajectory whose reference varies across its turns, Spearman's ρ of credit and reference
    (0 where the credit is flat there: it orders nothing)."""
    rhos = {}
    for trajectory in np.unique(trajectories):
        rows = trajectories == trajectory
        if rows.sum() < 2 or np.ptp(tied(reference[rows])) == 0:
            continue
        rho = spearman(credit[rows], reference[rows])
        rhos[int(trajectory)] = 0.0 if math.isnan(rho) else rho
    return rhos


def sign_agreement(credit: np.ndarray, reference: np.ndarray, threshold: float) -> float:
    """Share of turns with |reference| > threshold whose credit has the same sign (a zero credit disagrees)."""
    chosen = np.abs(reference) > threshold
    if not chosen.any():
        return math.nan
    signs = np.sign(tied(credit[chosen]))
    return float(np.mean(signs == np.sign(reference[chosen])))


def quality(
    credit: np.ndarray, reference: np.ndarray, trajectories: np.ndarray, *, threshold: float
) -> dict[str, float]:
    """The three point estimates: ``overall`` ρ, ``within`` (mean per-trajectory ρ), ``sign`` agreement."""
    rhos = trajectory_rhos(credit, reference, trajectories)
    return {
        "overall": spearman(credit, reference),
        "within": float(np.mean(list(rhos.values()))) if rhos else math.nan,
        "sign": sign_agreement(credit, reference, threshold),
    }


def bootstrap(
    credit: np.ndarray,
    reference: np.ndarray,
    trajectories: np.ndarray,
    *,
    threshold: float,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """95 % intervals of :func:`quality`'s three figures, resampling whole trajectories (their turns
    are not independent)."""
    ids = np.unique(trajectories)
    rows_of = {int(t): np.flatnonzero(trajectories == t) for t in ids}
    rhos = trajectory_rhos(credit, reference, trajectories)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {name: [] for name in METRICS}
    for _ in range(resamples):
        sample = rng.choice(ids, size=len(ids), replace=True)
        rows = np.concatenate([rows_of[int(t)] for t in sample])
        within = [rhos[int(t)] for t in sample if int(t) in rhos]
        draws["overall"].append(spearman(credit[rows], reference[rows]))
        draws["within"].append(float(np.mean(within)) if within else math.nan)
        draws["sign"].append(sign_agreement(credit[rows], reference[rows], threshold))
    intervals = {}
    for name, values in draws.items():
        finite = np.asarray([v for v in values if not math.isnan(v)])
        intervals[name] = (
            (float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))) if len(finite) else (math.nan,) * 2
        )
    return intervals


# -- collection ----------------------------------------------------------------------------------


def turn_means(values: Any, batch: Any) -> list[float]:
    """Per row, the mean of ``values`` ``[B, T]`` over the action's tokens (``RolloutBatch.action_mask``;
    the whole response where the turn has no action span)."""
    import torch

    action = batch.action_mask()
    mask = torch.where(action.any(dim=1, keepdim=True), action, batch.response_mask).double()
    totals = (values.double() * mask).sum(dim=1)  # float64: a constant row's mean is exact
    return (totals / mask.sum(dim=1).clamp(min=1.0)).tolist()


def marked_probabilities(policy: Any, env: Any, prompts: Sequence[str], task_id: str) -> list[float]:
    """A diagnostic env's turns (``agentenvs.diagnostics``): the policy's probability of each turn's
    marked item, teacher-forced on that turn's prompt (the item's tokens, then the end of the turn);
    0 where the turn has no marked item, the uniform policy's where the trajectory never got there."""
    import torch

    stages = env.task(task_id).stages
    probabilities = list(env.uniform_probabilities(task_id))
    rows = [i for i, stage in enumerate(stages) if stage.marked and i < len(prompts)]
    if not rows:
        return probabilities
    end = policy.tokenizer.convert_tokens_to_ids("<|im_end|>")
    responses = [policy.tokenizer.encode(stages[i].marked, add_special_tokens=False) + [end] for i in rows]
    logprobs = policy.score([prompts[i] for i in rows], responses)
    for row, i in enumerate(rows):
        probabilities[i] = float(torch.exp(logprobs[row, : len(responses[row])].sum()))
    return probabilities


def exact_reference(policy: Any, env: Any, batch: Any) -> dict[str, list[Any]]:
    """The **exact** reference of a diagnostic env's batch: per row (turn), the advantage
    ``Q(s_t, a_t) − V(s_t)`` under the policy's own probability of each turn's marked item
    (:func:`marked_probabilities`; ``env.exact_credit``: closed form, no sampling) and whether the
    turn is decisive; per trajectory, the policy's probability of the first turn's marked item."""
    advantage, decisive = [0.0] * len(batch), [False] * len(batch)
    first: list[float] = []
    for t, rows in enumerate(batch.rows_by_trajectory()):
        trajectory = batch.trajectories[t]
        probabilities = marked_probabilities(policy, env, [batch.prompts[row] for row in rows], trajectory.task_id)
        first.append(probabilities[0])
        credit = env.trajectory_credit(trajectory, probabilities)
        for k, row in enumerate(rows):
            advantage[row], decisive[row] = credit.advantages[k], credit.decisive[k]
    return {"advantage": advantage, "decisive": decisive, "marked_probability_turn0": first}


def warm_start(preset_name: str, folder: Path) -> str:
    """The preset's SFT warm start in ``folder`` (trained there first, without evaluations, if absent)."""
    from agents.cli.quickstart import PRESETS
    from agents.policy.models import adapter_folder
    from agents.sft import SFTAgent

    if not (folder / "model").is_dir() and adapter_folder(folder) is None:
        preset = PRESETS[preset_name]
        assert preset.sft is not None
        config = dataclasses.replace(
            preset.sft, output_dir=str(folder), eval_episodes=0, resume=(folder / "config.json").exists()
        )
        SFTAgent(preset.model, preset.env, config).learn()
    return str(folder)


@dataclasses.dataclass
class Bench:
    """What every batch of one preset is measured with: the policy, its collector, the players."""

    preset: str
    env: str
    model: str
    config: Any
    policy: Any
    collector: Any
    runner: Any
    expert: Any

    @classmethod
    def build(cls, preset_name: str, model: str, args: argparse.Namespace) -> Bench:
        """The RL recipe's policy (LoRA adapter fresh, as at RL's step 0), collector and players."""
        from agents.agent import build_policy
        from agents.cli.quickstart import PRESETS
        from agents.collection.collector import Collector
        from agents.reference import ContinuationRunner, ExpertPlayer

        preset = PRESETS[preset_name]
        config = dataclasses.replace(
            preset.rl, num_groups=args.groups, group_size=args.group_size, seed=args.seed, progress=False
        )
        env_kwargs = config.env_kwargs_with_limit()
        policy = build_policy(model, config)
        players = {
            "prompt_builder": config.prompt_builder(),
            "invalid_action_penalty": config.invalid_action_penalty,
            "success_bonus": config.success_bonus,
        }
        return cls(
            preset=preset_name,
            env=preset.env,
            model=model,
            config=config,
            policy=policy,
            collector=Collector(
                policy,
                preset.env,
                num_groups=config.num_groups,
                group_size=config.group_size,
                env_kwargs=env_kwargs,
                record_snapshots=True,
                **players,
            ),
            runner=ContinuationRunner(policy, preset.env, env_kwargs=env_kwargs, width=args.width, **players),
            expert=ExpertPlayer(
                preset.env,
                env_kwargs={**env_kwargs, **EXPERT_KWARGS.get(preset.env, {})},
                invalid_action_penalty=config.invalid_action_penalty,
                success_bonus=config.success_bonus,
            ),
        )

    def close(self) -> None:
        self.collector.close()
        self.runner.close()
        self.expert.close()


def measure_batch(bench: Bench, index: int, args: argparse.Namespace, rules: Sequence[str]) -> dict[str, Any]:
    """Collects batch ``index`` and computes every rule's credit and both references (module docstring)."""
    import torch
    from tqdm.auto import tqdm

    from agents.algorithms.base import CreditContext, make_credit_rule
    from agents.reference import step_values, turn_starts

    policy, config = bench.policy, bench.config
    seed = args.seed + index
    seconds: dict[str, float] = {}
    phases = tqdm(total=len(rules) + 3, desc=f"batch {index}", unit="phase", leave=False)
    phases.set_postfix_str("collect")
    started = time.perf_counter()
    torch.manual_seed(seed)
    with policy.keeping_prompt_caches(True):
        batch, stats = bench.collector.collect(seed=seed)
    seconds["collect"] = time.perf_counter() - started
    phases.update()
    credits: dict[str, list[float]] = {}
    shifts: dict[str, list[float | None]] = {}
    rule_stats: dict[str, dict[str, float]] = {}
    # Vine last: the PI rules score on the rollout's kept prompt KV, which continuations would not keep.
    for name in sorted(rules, key=lambda rule: QUALITY_RULES[rule][0] == "vine"):
        credit, options, fields = QUALITY_RULES[name]
        if credit == "vine":
            options = {**options, "continuations": args.vine_samples}
            policy.clear_prompt_caches()
        rule_config = dataclasses.replace(config, credit=credit, credit_options=options, **fields)
        phases.set_postfix_str(name)
        started = time.perf_counter()
        torch.manual_seed(seed)
        context = CreditContext(rule_config, policy=policy, continuations=bench.runner)
        result = make_credit_rule(credit, rule_config).compute(batch, context)
        seconds[name] = time.perf_counter() - started
        phases.update()
        credits[name] = turn_means(result.advantages, batch)
        rule_stats[name] = {key: float(value) for key, value in result.stats.items()}
        if "delta" in result.token_values:
            privileged = result.row_info.get("privileged") or [None] * len(batch)
            means = turn_means(result.token_values["delta"], batch)
            shifts[name] = [mean if pi is not None else None for mean, pi in zip(means, privileged, strict=True)]
    policy.clear_prompt_caches()
    starts = turn_starts(batch)
    references = {}
    for key, player, samples in (("expert", bench.expert, 1), ("mc", bench.runner, args.mc_samples)):
        phases.set_postfix_str(f"reference {key}")
        started = time.perf_counter()
        torch.manual_seed(seed + 7919)  # the references' continuations are not the vine rule's
        values = step_values(batch, player, samples=samples, starts=starts)
        seconds[key] = time.perf_counter() - started
        phases.update()
        references[key] = {
            "advantage": values.advantages.tolist(),
            "value_before": values.value_before.tolist(),
            "value_after": values.value_after.tolist(),
            "states": values.states,
        }
    phases.close()
    trajectories = batch.trajectories
    return {
        "preset": bench.preset,
        "env": bench.env,
        "model": bench.model,
        "batch": index,
        "seed": seed,
        "settings": settings_of(args, rules),
        "collect_stats": {
            "success_rate": stats.success_rate,
            "invalid_rate": stats.invalid_rate,
            "mean_episode_length": stats.mean_episode_length,
        },
        "turns": [
            {
                "trajectory": int(t),
                "turn": int(turn),
                "group": int(group),
                "task_id": trajectories[int(t)].task_id,
                "action": trajectories[int(t)].turns[int(turn)].action,
                "valid": bool(valid),
                "reward": float(reward),
                "trajectory_reward": float(batch.trajectory_rewards[int(t)]),
                "won": bool(batch.trajectory_success[int(t)]),
            }
            for t, turn, group, valid, reward in zip(
                batch.trajectory_index.tolist(),
                batch.turn_index.tolist(),
                batch.group_ids.tolist(),
                batch.turn_valid.tolist(),
                batch.turn_rewards.tolist(),
                strict=True,
            )
        ],
        "references": references,
        "credit": credits,
        "shift": shifts,
        "rule_stats": rule_stats,
        "seconds": seconds,
    }


def settings_of(args: argparse.Namespace, rules: Sequence[str]) -> dict[str, Any]:
    """What makes batches comparable: a batch file written with other settings is not reused."""
    return {
        "groups": args.groups,
        "group_size": args.group_size,
        "seed": args.seed,
        "mc_samples": args.mc_samples,
        "vine_samples": args.vine_samples,
        "rules": sorted(rules),
    }


def collect(args: argparse.Namespace) -> None:
    """Measures batches ``0 .. --batches − 1`` not yet on disk (each written when done)."""
    from tqdm.auto import tqdm

    from agents.cli.quickstart import PRESETS

    rules = args.rules or list(QUALITY_RULES)
    folder = Path(args.output) / args.preset
    folder.mkdir(parents=True, exist_ok=True)
    model = args.warm_start or warm_start(args.preset, Path(args.warm_start_dir) / args.preset)
    print(f"credit quality · {PRESETS[args.preset].env} · {model} · batches 0..{args.batches - 1}", flush=True)
    todo = []
    for index in range(args.batches):
        path = folder / f"batch_{index:03d}.json"
        if not (path.exists() and json.loads(path.read_text())["settings"] == settings_of(args, rules)):
            todo.append(index)
    if not todo:
        return
    bench = Bench.build(args.preset, model, args)
    try:
        for index in tqdm(todo, desc=f"{args.preset} batches", unit="batch"):
            record = measure_batch(bench, index, args, rules)
            path = folder / f"batch_{index:03d}.json"
            partial = path.with_suffix(".partial")
            partial.write_text(json.dumps(record))
            os.replace(partial, path)
            seconds = ", ".join(f"{key} {value:.0f}s" for key, value in record["seconds"].items())
            print(f"batch {index}: {len(record['turns'])} turns; {seconds}", flush=True)
    finally:
        bench.close()


# -- report --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Turns:
    """One env's turns over all its batch files, as arrays (trajectory ids unique across batches)."""

    env: str
    trajectories: np.ndarray
    references: dict[str, np.ndarray]
    credits: dict[str, np.ndarray]
    shifts: dict[str, np.ndarray]
    batches: int
    won: np.ndarray


def load_turns(folder: Path) -> Turns | None:
    """The batch files of one preset's folder (None when there are none)."""
    records = [json.loads(path.read_text()) for path in sorted(folder.glob("batch_*.json"))]
    if not records:
        return None
    rules = [name for name in QUALITY_RULES if all(name in record["credit"] for record in records)]
    offset, trajectories, won = 0, [], []
    for record in records:
        ids = [turn["trajectory"] for turn in record["turns"]]
        trajectories += [offset + i for i in ids]
        won += [turn["won"] for turn in record["turns"]]
        offset += max(ids) + 1

    def stack(get: Any) -> np.ndarray:
        return np.asarray([value for record in records for value in get(record)], dtype=float)

    shift_rules = [name for name in QUALITY_RULES if all(name in record["shift"] for record in records)]
    return Turns(
        env=records[0]["env"],
        trajectories=np.asarray(trajectories),
        references={key: stack(lambda r, key=key: r["references"][key]["advantage"]) for key in REFERENCES},
        credits={name: stack(lambda r, name=name: r["credit"][name]) for name in rules},
        shifts={
            name: stack(lambda r, name=name: [math.nan if v is None else v for v in r["shift"][name]])
            for name in shift_rules
        },
        batches=len(records),
        won=np.asarray(won, dtype=bool),
    )


def evaluate(turns: Turns, *, threshold: float, resamples: int) -> dict[str, Any]:
    """Every rule's (and every PI rule's shift's) figures against both references."""
    table: dict[str, Any] = {"credit": {}, "shift": {}}
    for kind, series in (("credit", turns.credits), ("shift", turns.shifts)):
        for name, values in series.items():
            rows = ~np.isnan(values)
            for key, reference in turns.references.items():
                if rows.sum() < 2:
                    continue
                args = (values[rows], reference[rows], turns.trajectories[rows])
                point = quality(*args, threshold=threshold)
                interval = bootstrap(*args, threshold=threshold, resamples=resamples)
                flat = trajectory_rhos(*args)
                table[kind].setdefault(name, {})[key] = {
                    "turns": int(rows.sum()),
                    "trajectories_ranked": len(flat),
                    **{metric: {"value": point[metric], "ci": interval[metric]} for metric in METRICS},
                }
    return table


def _cell(entry: dict[str, Any]) -> str:
    value, (low, high) = entry["value"], entry["ci"]
    return "—" if math.isnan(value) else f"{value:+.2f} [{low:+.2f}, {high:+.2f}]"


def markdown(results: dict[str, Any], *, threshold: float) -> list[str]:
    """The tables of ``results.md`` (the block :func:`report` rewrites; the reading around it stays)."""
    lines = []
    lines.append(
        "Spearman's ρ of each rule's per-turn credit with the reference advantage over all turns (*overall*) "
        "and within trajectories (*within*: the mean per-trajectory ρ over trajectories whose reference "
        f"varies; 0 for a flat credit), and the sign agreement on turns with |A| > {threshold:g}; "
        "[95 % bootstrap interval over trajectories]. Written by `benchmarks/credit_quality.py report`."
    )
    for env, entry in results["envs"].items():
        lines += ["", f"## {env}", "", entry["about"], ""]
        for kind, title in (
            ("credit", "Credit"),
            ("shift", "Privileged shift alone (mean Δ over the action's tokens, rows with PI)"),
        ):
            table = entry["table"][kind]
            if not table:
                continue
            lines += [f"### {title}", ""]
            header = "| rule | turns |" + "".join(f" {REFERENCES[k]} {m} |" for k in REFERENCES for m in METRICS)
            lines += [header, "|" + " --- |" * (2 + len(REFERENCES) * len(METRICS))]
            for name, by_reference in table.items():
                first = next(iter(by_reference.values()))
                cells = [
                    _cell(by_reference[key][metric]) if key in by_reference else "—"
                    for key in REFERENCES
                    for metric in METRICS
                ]
                lines.append(f"| {name} | {first['turns']} | " + " | ".join(cells) + " |")
            lines.append("")
    return lines


def plot(results: dict[str, Any], path: Path) -> None:
    """Bars: each rule's within-trajectory and overall ρ against both references, per env, with intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(results["envs"])
    figure, axes = plt.subplots(len(envs), 2, figsize=(14, 4.5 * len(envs)), squeeze=False)
    for row, env in enumerate(envs):
        table = results["envs"][env]["table"]["credit"]
        names = list(table)
        for column, metric in enumerate(("within", "overall")):
            axis = axes[row][column]
            width = 0.38
            for offset, key in ((-width / 2, "expert"), (width / 2, "mc")):
                values = [table[name][key][metric]["value"] if key in table[name] else math.nan for name in names]
                lows = [table[name][key][metric]["ci"][0] if key in table[name] else math.nan for name in names]
                highs = [table[name][key][metric]["ci"][1] if key in table[name] else math.nan for name in names]
                errors = np.abs(np.asarray([np.subtract(values, lows), np.subtract(highs, values)]))
                axis.bar(np.arange(len(names)) + offset, values, width, yerr=errors, capsize=2, label=REFERENCES[key])
            axis.axhline(0, color="black", linewidth=0.6)
            axis.set_xticks(np.arange(len(names)), names, rotation=45, ha="right")
            axis.set_title(f"{env}: Spearman ρ {'within trajectories' if metric == 'within' else 'over all turns'}")
            axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def report(args: argparse.Namespace) -> dict[str, Any]:
    """Reads every preset folder under ``--output``; writes results.md / .json and the plot there."""
    output = Path(args.output)
    results: dict[str, Any] = {"threshold": args.threshold, "resamples": args.resamples, "envs": {}}
    for folder in sorted(path for path in output.iterdir() if path.is_dir()):
        turns = load_turns(folder)
        if turns is None:
            continue
        about = (
            f"{turns.batches} batches, {len(turns.trajectories)} turns in {len(np.unique(turns.trajectories))} "
            f"trajectories ({turns.won.mean():.0%} of turns in won ones)"
        )
        results["envs"][turns.env] = {
            "about": about,
            "table": evaluate(turns, threshold=args.threshold, resamples=args.resamples),
        }
    (output / "results.json").write_text(json.dumps(results, indent=1))
    write_results(
        output / "results.md", "Credit quality", markdown(results, threshold=args.threshold), script="credit_quality.py"
    )
    if results["envs"]:
        plot(results, output / "credit_quality.png")
    print((output / "results.md").read_text())
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    measure = commands.add_parser("collect", help="measure batches (resumable)")
    measure.add_argument("--preset", default="webshop", choices=["webshop", "alfworld"])
    measure.add_argument("--warm-start", default=None, help="the warm start's folder (default: trained first)")
    measure.add_argument(
        "--warm-start-dir", default="runs/credit-quality", help="where a warm start is trained when none is given"
    )
    measure.add_argument("--batches", type=int, default=6)
    measure.add_argument("--groups", type=int, default=4)
    measure.add_argument("--group-size", type=int, default=4)
    measure.add_argument("--seed", type=int, default=1000)
    measure.add_argument("--mc-samples", type=int, default=4, help="continuations per state for A^MC")
    measure.add_argument("--vine-samples", type=int, default=4, help="the vine rule's own continuations per state")
    measure.add_argument("--width", type=int, default=32, help="continuations played at once")
    measure.add_argument("--rules", nargs="+", default=None, choices=list(QUALITY_RULES))
    measure.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    measure.add_argument("--output", default=str(RESULTS))
    summary = commands.add_parser("report", help="tables and plot from the batches on disk")
    summary.add_argument("--output", default=str(RESULTS))
    summary.add_argument("--threshold", type=float, default=0.1, help="|A| above which sign agreement counts")
    summary.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.command == "collect":
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        collect(args)
    else:
        report(args)


if __name__ == "__main__":
    main()
