"""The main-job option-turn study: its runs are the quick start's preset but for the compared fields; its decision the pre-registered one."""

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import main_job_option_turns as study  # noqa: E402

from agents.cli.quickstart import PRESETS  # noqa: E402


def test_a_run_is_the_webshop_preset_but_for_its_option_turns_seed_and_report_set():
    base, run = PRESETS["webshop"], study.preset_for(128, 2)
    assert run.sft.extra_expert_turns == {"option": 128} and study.preset_for(0, 2).sft.extra_expert_turns == {}
    assert run.sft.seed == run.rl.seed == 2 and run.rl.eval_episodes == run.sft.eval_episodes == study.EPISODES
    assert run.rl.evaluation_env_kwargs(run.env)["split"] == "eval"
    same = ("seed", "extra_expert_turns", "eval_episodes", "output_dir")
    assert dataclasses.replace(run.sft, **{k: getattr(base.sft, k) for k in same}) == base.sft
    assert dataclasses.replace(run.rl, **{k: getattr(base.rl, k) for k in same[:1] + same[2:]}) == base.rl
    assert run.total_steps == base.total_steps and run.model == base.model


def record(count, seed, warm, end):
    def stage(success):
        return {"success_rate": success, "mean_score": 0.5, "invalid_rate": 0.05}

    clicks = {"clicks": 10, "right": 4}
    return {
        "count": count,
        "seed": seed,
        "stages": {"warm start": stage(warm), "end": stage(end)},
        "option_clicks": {"warm start": clicks, "end": None},
        "sft_seconds": 100.0,
        "rl_seconds": 200.0,
        "machine": "cpu",
    }


def test_the_report_adopts_only_a_gain_above_zero_at_every_seed():
    base = [record(0, seed, 0.1, 0.1 + 0.01 * seed) for seed in study.SEEDS]
    gain = [record(128, seed, 0.3, 0.3 + 0.02 * seed) for seed in study.SEEDS]
    lines = "\n".join(study.report_lines(base + gain))
    assert "success after RL, paired by seed: **+0.210 ± 0.025** (3 seeds)" in lines
    assert (
        "**N = 128 adopted**" in lines
        and "| 128 | 2 | 0.300 / 0.500 / 0.050 | 0.340 / 0.500 / 0.050 | 4 / 10, – |" in lines
    )
    noisy = [record(128, seed, 0.3, end) for seed, end in zip(study.SEEDS, (0.3, 0.0, 0.2), strict=True)]
    assert "**N = 128 not adopted**" in "\n".join(study.report_lines(base + noisy))
    assert "**N = 128 pending (2 of the 3 seeds paired)**" in "\n".join(study.report_lines(base + gain[:2]))
