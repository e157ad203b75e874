"""The README's main job: an expert warm start, then RL, on a multi-turn env, sized for 2 CPU cores.

A :class:`Preset` names the env, the model, the behaviour-cloning settings (``sft``, None
for none) and the RL run (``rl``: its config, the agent class, the number of steps). Both
stages use the same prompt settings, env settings and held-out tasks, so the evaluations
(after the warm start, end, and with ``--eval-start`` the bare model's first) are comparable:
the start and the warm-start figures are the SFT run's evaluations before and after fitting,
and the RL run logs the latter as its step 0 (same model, tasks, prompts and greedy decoding:
measuring it again would give the same figures and cost a minute and a half). The warm-start
recipes skip the bare model's evaluation (``SFTConfig.eval_before=False``): a bare chat model
plays every WebShop and ALFWorld turn invalid, and the evaluation cost 109 s of the job on a
slow machine.

Presets (``python -m agents quickstart --preset NAME``), each an env's recipe from
:mod:`agents.recipes` (``GRPOConfig.for_env`` / ``SFTConfig.for_env``) with the model and step count:

- ``webshop`` (default): WebShop-v0's generated shop, sized for a 135M model on 2 CPU cores:
  goals that ask for at most one option (``max_goal_options=1``: the expert needs 4 turns; 5
  allowed), 5 results per page, the compact page rendering (``observation_mode="text_compact"``:
  a line per part of the page, chosen options marked), the admissible actions listed (without
  them the warm-started model invents option values: invalid rate 0.37 against 0.08), an empty
  system prompt and preamble, and the expert searching the instruction before its option and
  price clauses (``expert_query="product"``: responses of at most ~30 tokens instead of ~50).
  About 250 prompt tokens a turn. The expert is the env's ``expert_action`` (32 episodes and 128
  further option turns, 3 epochs: without those RL learns to buy without choosing an option); then
  8 GRPO steps of 4 goals x 4 rollouts. GRPO, not TASPO: TASPO takes its PI from successful
  siblings, and the warm-started model wins rarely (3 % of the report goals, 11 % of the tuning goals), so its credit would
  mostly be GRPO's at the cost of a rescoring pass.
- ``alfworld``: the same recipe on ALFWorld-v0's generated ``pick_and_place_simple`` games
  (8 turns; the walkthrough needs ~5).
- ``searchqa``: the one-turn SearchQA run that was the quick start before (RL only).
- ``credit-lab``: a race to watch. The credit lab's 4-turn Umbrella (``Umbrella-v0``'s recipe:
  the first turn's pick decides the reward, three filler turns follow), one warm start that
  teaches the format (the uniform demonstrator), then GRPO and VinePPO (K = 2) from it, 16 steps
  each: GRPO gives every turn the episode's advantage, VinePPO each turn its own from
  continuations of the restored states. The summary prints both held-out curves with 95% Wilson
  intervals and ``race.png`` draws them (the lab's ``long`` study measured this setting at three
  seeds: benchmarks/results/credit_lab/long/results.md).

Files under ``output_dir``: ``sft/`` and ``rl/`` (each a run folder; a race has ``rl-<credit>/``
per rule and ``race.png``), ``summary.json`` (the evaluations, the curves of a race and the wall
times) and each RL folder's ``learning_curve.png``.

Example:
    >>> sorted(PRESETS)
    ['alfworld', 'credit-lab', 'searchqa', 'webshop']
    >>> PRESETS["credit-lab"].title(), sorted(PRESETS["credit-lab"].rl_runs())
    ('GRPO vs VINE', ['rl-grpo', 'rl-vine'])
    >>> PRESETS["webshop"].rl.history_observations == PRESETS["webshop"].sft.history_observations
    True
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from agents.agent import GRPOAgent, ORSDAgent, TASPOAgent
from agents.config import GRPOConfig
from agents.policy.trunk_precision import resolve_trunk_dtype
from agents.policy.weights import torch_dtype
from agents.reports.curves import load_run
from agents.reports.plotting import plot_runs
from agents.runs.folders import folder_size, runs_root
from agents.settings import EnvSettings, OptionValue, PromptSettings
from agents.sft import SFTAgent, SFTConfig

AGENTS: dict[str, type[GRPOAgent]] = {"grpo": GRPOAgent, "orsd": ORSDAgent, "taspo": TASPOAgent}
SUMMARY_FILE = "summary.json"
RACE_PLOT = "race.png"
"""A race's held-out curves, one per rule with its intervals, in ``output_dir``."""
EVAL_KEYS = ("success_rate", "mean_score", "invalid_rate", "mean_episode_length")


@dataclass(frozen=True)
class Preset:
    """One quick-start recipe.

    Attributes:
        env: A registered env id.
        model: The model to start from.
        rl: The RL run's settings (its ``output_dir`` is replaced by ``<output_dir>/rl``).
        total_steps: RL training steps.
        agent: ``"grpo"``, ``"orsd"`` or ``"taspo"``.
        sft: The warm start's settings (None: RL from the model itself).
        output_dir: Where the stages write.
        minutes: The whole run's wall time as measured on 2 CPU cores with the frozen trunk in
            float32 (what the first line of output announces; None when not measured); with
            ``bf16_minutes``, measured on the slowest machine of this kind (an AMD EPYC without
            bf16 units).
        bf16_minutes: The same with the trunk in bf16, which ``trunk_dtype="auto"`` picks on a
            CPU with bf16 units (announced there; None: not measured). Measured alone (no
            ``minutes``), a CPU without bf16 units is told it runs longer than this.
        race: Credit rules raced from the one warm start, each ``(credit, credit_options)``: one RL
            run per rule, ``rl`` with that rule (``agent`` unused), in ``rl-<credit>/``. Empty: one
            RL run with ``agent``, in ``rl/``.
    """

    env: str
    model: str
    rl: GRPOConfig
    total_steps: int
    agent: str = "grpo"
    sft: SFTConfig | None = None
    output_dir: str = dataclasses.field(default_factory=lambda: str(runs_root() / "quickstart"))
    minutes: float | None = None
    bf16_minutes: float | None = None
    race: tuple[tuple[str, dict[str, OptionValue]], ...] = ()

    def __post_init__(self) -> None:
        if self.agent not in AGENTS:
            raise ValueError(f"Preset.agent must be one of {sorted(AGENTS)}, got {self.agent!r}")
        credits = [credit for credit, _ in self.race]
        if len(set(credits)) != len(credits) or len(credits) == 1:
            raise ValueError(f"Preset.race must name two or more different rules (or none), got {credits}")
        self.rl_runs()  # each raced rule's config is checked here, before any model loads
        if self.sft is not None:
            differ = [
                name
                for group in (PromptSettings, EnvSettings)
                for name, value in dataclasses.asdict(group.of(self.sft)).items()
                if value != getattr(self.rl, name)
            ]
            if differ:
                raise ValueError(f"Preset: the SFT and RL stages must prompt alike; they differ in {differ}")

    def rl_runs(self) -> dict[str, tuple[type[GRPOAgent], GRPOConfig]]:
        """The RL stage's runs by folder name: ``rl`` with ``agent``, or ``rl-<credit>`` per raced rule."""
        if not self.race:
            return {"rl": (AGENTS[self.agent], self.rl)}
        return {
            f"rl-{credit}": (GRPOAgent, dataclasses.replace(self.rl, credit=credit, credit_options=dict(options)))
            for credit, options in self.race
        }

    def title(self) -> str:
        """The RL stage's rules as the output names them (``GRPO``, ``GRPO vs VINE``)."""
        names = [credit for credit, _ in self.race] or [self.agent]
        return " vs ".join(name.upper() for name in names)

    def with_start_evaluation(self) -> Preset:
        """This preset with the bare model evaluated too, before the warm start (one more evaluation)."""
        if self.sft is None:
            return self  # RL alone evaluates its start anyway (its step 0)
        return dataclasses.replace(self, sft=dataclasses.replace(self.sft, eval_before=True))

    def with_eval_episodes(self, episodes: int) -> Preset:
        """This preset with ``episodes`` held-out goals in every evaluation (both stages alike)."""
        sft = None if self.sft is None else dataclasses.replace(self.sft, eval_episodes=episodes)
        return dataclasses.replace(self, rl=dataclasses.replace(self.rl, eval_episodes=episodes), sft=sft)


def _warm_start_then_grpo(
    env: str, *, total_steps: int, output_dir: str, minutes: float | None, bf16_minutes: float | None = None
) -> Preset:
    """An expert warm start (SFT) then GRPO: both stages of the env's recipe (:mod:`agents.recipes`)."""
    return Preset(
        env=env,
        model="smollm2-135m",
        sft=SFTConfig.for_env(env),
        rl=GRPOConfig.for_env(env),
        total_steps=total_steps,
        agent="grpo",
        output_dir=output_dir,
        minutes=minutes,
        bf16_minutes=bf16_minutes,
    )


PRESETS: dict[str, Preset] = {
    # minutes: measured on 2 idle cores without bf16 units (float32 trunk); bf16_minutes: with them (bf16 trunk).
    # The sittings behind both: docs/multiturn-training.md.
    "webshop": _warm_start_then_grpo(
        "WebShop-v0", total_steps=8, output_dir=str(runs_root() / "quickstart-webshop"), minutes=16, bf16_minutes=7.5
    ),
    "alfworld": _warm_start_then_grpo(
        "ALFWorld-v0", total_steps=6, output_dir=str(runs_root() / "quickstart-alfworld"), minutes=32
    ),
    "credit-lab": Preset(
        env="Umbrella-v0",
        model="smollm2-135m",
        sft=SFTConfig.for_env("Umbrella-v0"),
        rl=GRPOConfig.for_env("Umbrella-v0"),
        total_steps=16,
        race=(("grpo", {}), ("vine", {"continuations": 2})),
        output_dir=str(runs_root() / "quickstart-credit-lab"),
        bf16_minutes=11,
    ),
    "searchqa": Preset(
        env="SearchQA-v0",
        model="smollm2-135m",
        rl=GRPOConfig.for_env("SearchQA-v0"),
        total_steps=24,
        output_dir=str(runs_root() / "quickstart"),
        minutes=6,
    ),
}
"""The built-in recipes (see the module docstring)."""


def _evaluation(record: dict[str, Any]) -> dict[str, float]:
    return {key: float(record[f"eval/{key}"]) for key in EVAL_KEYS if f"eval/{key}" in record}


def _announced_time(preset: Preset) -> str:
    """The first lines' time estimate: the one measured with the trunk dtype this machine runs."""
    slower = "up to ~2.9x that on a slower machine"
    rl = preset.rl
    if rl.trunk_dtype is None or (preset.bf16_minutes is None and preset.minutes is None):
        # LoraSettings checked that a trunk_dtype has a trunk
        return "" if preset.minutes is None else f"about {preset.minutes:g} min on 2 idle CPU cores ({slower}); "
    here = torch.device(rl.device)
    bf16 = resolve_trunk_dtype(rl.trunk_dtype, dtype=torch_dtype(rl.dtype), device=here, has_trunk=True)
    if bf16 == torch.bfloat16 and preset.bf16_minutes is None:
        return (
            f"about {preset.minutes:g} min on 2 idle CPU cores without bf16 units, less here (the frozen layers "
            "run in bf16 on this CPU; not measured); "
        )
    if bf16 == torch.bfloat16:
        return (
            f"about {preset.bf16_minutes:g} min on 2 idle CPU cores with bf16 units (the frozen layers run in bf16 "
            f"here; {slower}); "
        )
    if preset.minutes is None:
        return (
            f"about {preset.bf16_minutes:g} min on 2 idle CPU cores with bf16 units, longer here (the frozen layers "
            "run in float32 on this CPU; not measured); "
        )
    return (
        f"about {preset.minutes:g} min on 2 idle CPU cores without bf16 units (the frozen layers run in float32 "
        "here; measured on a slow AMD EPYC, less on a faster machine); "
    )


def describe(preset: Preset) -> str:
    """What the run will do and about how long it takes: the first lines it prints."""
    rl = preset.rl
    split = rl.evaluation_env_kwargs(preset.env).get("split")
    goals = f"{rl.eval_episodes} held-out goals{f' ({split} split)' if split else ''}, greedy"
    uniform = preset.sft is not None and preset.sft.env_kwargs.get("demonstrator") == "uniform"
    warm = "" if preset.sft is None else " after a warm start" if uniform else " after an expert warm start"
    lines = [f"Quick start: {preset.model} on {preset.env}, {preset.title()}{warm}."]
    if preset.sft is not None:
        before = f"evaluate the model on {goals}, " if preset.sft.eval_before else ""
        after = "evaluate again" if preset.sft.eval_before else f"evaluate on {goals}"
        demonstrator = "uniform demonstrator (the format, not the answer)" if uniform else "expert"
        extra = "".join(f", {count} further {kind} turns" for kind, count in preset.sft.extra_expert_turns.items())
        lines.append(
            f"  1/2 warm start: {before}clone the env's {demonstrator} "
            f"({preset.sft.expert_episodes} episodes{extra}, {preset.sft.epochs} epochs), {after}"
        )
    each = f"{', '.join(credit for credit, _ in preset.race)} from the same start, each " if preset.race else ""
    lines.append(
        f"  {'2/2' if preset.sft else '1/1'} RL: {each}{preset.total_steps} steps of {rl.num_groups} goals x "
        f"{rl.group_size} rollouts, then evaluate on the same {goals}"
    )
    timing = _announced_time(preset)
    plots = f"{RACE_PLOT}, rl-*/learning_curve.png" if preset.race else "rl/learning_curve.png"
    lines.append(f"  {timing}writes {preset.output_dir}/ (summary.json, {plots})")
    return "\n".join(lines)


def _banner(text: str) -> None:
    print(f"\n== {text} ==", flush=True)


def _held_out_curve(folder: Path) -> list[dict[str, float]]:
    """A run's held-out success by step with its 95% Wilson interval over the evaluation's episodes."""
    return [
        {
            "step": point.step,
            "success": point.success,
            "low": point.success_interval[0] if point.success_interval else math.nan,
            "high": point.success_interval[1] if point.success_interval else math.nan,
        }
        for point in load_run(folder).held_out
    ]


def run_quickstart(preset: Preset, *, resume: bool = False) -> dict[str, Any]:
    """Runs the warm start (if any) and RL (once, or once per raced rule); prints and returns the
    summary (also in ``summary.json``)."""
    print(describe(preset), flush=True)
    output = Path(preset.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"env": preset.env, "model": preset.model, "agent": preset.title(), "stages": {}}
    model = preset.model
    warm_start: dict[str, float] | None = None
    started = time.perf_counter()
    if preset.sft is not None:
        _banner(f"1/2 warm start: behaviour cloning of the {preset.env} expert")
        sft_config = dataclasses.replace(preset.sft, output_dir=str(output / "sft"), resume=resume)
        sft = SFTAgent(preset.model, preset.env, sft_config)
        final = sft.learn()
        records = [json.loads(line) for line in (output / "sft" / "metrics.jsonl").read_text().splitlines()]
        start = _evaluation(next(r for r in records if r["step"] == 0))
        if start:  # evaluated before cloning (eval_before)
            summary["stages"]["start"] = start
        summary["stages"]["warm start"] = _evaluation(final)
        warm_start = {key: value for key, value in final.items() if key.startswith("eval/")}
        summary["sft_seconds"] = time.perf_counter() - started
        model = str(output / "sft")
        del sft
    rl_started = time.perf_counter()
    stage = "2/2" if preset.sft else "1/1"
    runs = preset.rl_runs()
    for number, (folder, (agent_class, config)) in enumerate(runs.items(), start=1):
        credit = config.credit if preset.race else preset.agent
        of = f", {number}/{len(runs)}" if preset.race else ""
        _banner(f"{stage} RL{of}: {preset.total_steps} {credit.upper()} steps")
        run_started = time.perf_counter()
        agent = agent_class(
            model=model,
            env=preset.env,
            config=dataclasses.replace(config, output_dir=str(output / folder), resume=resume),
        )
        try:
            last = agent.learn(preset.total_steps, start_evaluation=warm_start)
        finally:
            agent.close()
        records = [json.loads(line) for line in (output / folder / "metrics.jsonl").read_text().splitlines()]
        evaluations = [r for r in records if "eval/success_rate" in r]
        if preset.sft is None and "start" not in summary["stages"]:
            summary["stages"]["start"] = _evaluation(evaluations[0])
        end = _evaluation(last if "eval/success_rate" in last else evaluations[-1])
        summary["stages"][f"end {credit}" if preset.race else "end"] = end
        if preset.race:
            summary.setdefault("curves", {})[credit] = _held_out_curve(output / folder)
            summary.setdefault("run_seconds", {})[credit] = time.perf_counter() - run_started
    if preset.race:
        plot_runs([output / folder for folder in runs], output / RACE_PLOT, title=f"{preset.title()} on {preset.env}")
    summary["rl_seconds"] = time.perf_counter() - rl_started
    summary["total_seconds"] = time.perf_counter() - started
    (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
    _banner("summary")
    print(format_summary(summary), flush=True)
    print(f"everything is in {output} ({folder_size(output)})", flush=True)
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a small table: one line per evaluation, each raced rule's held-out curve with
    its 95% intervals, then the wall times."""
    lines = [f"{summary['agent']} · {summary['model']} · {summary['env']} (held-out, greedy)"]
    lines.append(f"{'':<12} {'success':>8} {'score':>8} {'invalid':>8} {'turns':>6}")
    for stage, values in summary["stages"].items():
        lines.append(
            f"{stage:<12} {values.get('success_rate', float('nan')):>8.3f} {values.get('mean_score', float('nan')):>8.3f} "
            f"{values.get('invalid_rate', float('nan')):>8.3f} {values.get('mean_episode_length', float('nan')):>6.2f}"
        )
    for credit, curve in summary.get("curves", {}).items():
        points = ", ".join(f"{p['step']}: {p['success']:.2f} [{p['low']:.2f}, {p['high']:.2f}]" for p in curve)
        lines.append(f"{credit} held-out success by step [95% interval]: {points}")
    times = [
        f"{name} {summary[key]:.0f} s" for name, key in (("sft", "sft_seconds"), ("rl", "rl_seconds")) if key in summary
    ]
    times += [f"{credit} {seconds:.0f} s" for credit, seconds in summary.get("run_seconds", {}).items()]
    lines.append("wall time: " + ", ".join(times) + f" (total {summary['total_seconds']:.0f} s)")
    return "\n".join(lines)
