"""The credit study's bookkeeping: resumption (which runs are finished), areas, the tables."""

import argparse
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import credit_learning  # noqa: E402


def write_run(
    folder: Path, evaluations: dict[int, tuple[float, float]], steps: int, *, credit_s: float, update_s: float
):
    """A run's metrics.jsonl: steps 0..steps, held-out (success, score) at the given steps (invalid rate 1 − score)."""
    folder.mkdir(parents=True)
    with open(folder / "metrics.jsonl", "w") as handle:
        for step in range(steps + 1):
            record: dict[str, float] = {"step": step}
            if step:
                record |= {
                    "train/success_rate": 0.25 * step,
                    "time/collect_s": 10.0,
                    "time/credit_s": credit_s,
                    "time/update_s": update_s,
                    "taspo/pi_coverage": 0.5,
                }
            if step in evaluations:
                success, score = evaluations[step]
                record |= {"eval/success_rate": success, "eval/mean_score": score, "eval/invalid_rate": 1 - score}
            handle.write(json.dumps(record) + "\n")


def test_area_under_curve_is_the_trapezoid_mean_level():
    # (4 * (0 + 0.5) / 2 + 4 * (0.5 + 0.5) / 2) / 8
    assert credit_learning.area_under_curve([0, 4, 8], [0.0, 0.5, 0.5]) == pytest.approx(0.375)
    assert credit_learning.area_under_curve([0, 2, 8], [1.0, 0.0, 0.0]) == pytest.approx(0.125)
    assert credit_learning.area_under_curve([3], [0.7]) == 0.7


def test_a_run_is_finished_when_its_last_step_is_evaluated(tmp_path):
    write_run(tmp_path / "done", {0: (0, 0), 2: (1, 1)}, 2, credit_s=0, update_s=1)
    write_run(tmp_path / "cut", {0: (0, 0)}, 1, credit_s=0, update_s=1)
    write_run(tmp_path / "unevaluated", {0: (0, 0)}, 2, credit_s=0, update_s=1)
    assert credit_learning.is_finished(tmp_path / "done", 2)
    assert not credit_learning.is_finished(tmp_path / "cut", 2)
    assert not credit_learning.is_finished(tmp_path / "unevaluated", 2)
    assert not credit_learning.is_finished(tmp_path / "missing", 2)


def test_summary_and_table_hand_computed(tmp_path):
    write_run(tmp_path / "grpo_0", {0: (0.0, 0.2), 2: (0.5, 0.6)}, 2, credit_s=0.1, update_s=1.0)
    write_run(tmp_path / "grpo_1", {0: (0.0, 0.2), 2: (0.25, 0.4)}, 2, credit_s=0.1, update_s=1.0)
    write_run(tmp_path / "taspo_0", {0: (0.0, 0.2), 2: (1.0, 1.0)}, 2, credit_s=0.3, update_s=1.1)
    write_run(tmp_path / "taspo_1", {0: (0.0, 0.2)}, 1, credit_s=0.3, update_s=1.1)  # unfinished: left out
    grpo = credit_learning.summarize(tmp_path, "grpo", [0, 1], 2)
    taspo = credit_learning.summarize(tmp_path, "taspo", [0, 1], 2)
    assert grpo is not None and taspo is not None
    assert taspo.seeds == [0] and grpo.steps == [0, 2]
    assert grpo.success == {0: [0.0, 0.5], 1: [0.0, 0.25]}
    assert grpo.train_success == [pytest.approx(0.375)] * 2  # mean of 0.25 and 0.5
    assert taspo.activity == {"taspo/pi_coverage": 0.5}
    assert credit_learning.summarize(tmp_path, "orsd", [0], 2) is None
    lines = credit_learning.results_table([grpo, taspo])
    # Final success 0.375 ± 0.125; AUC per seed (0 + 0.5) / 2 and (0 + 0.25) / 2; invalid 0.8, then 0.4 and 0.6.
    assert "| GRPO | 2 | 0.000 | 0.375 ± 0.125 | 0.188 ± 0.062 | 0.200 | 0.500 ± 0.100 |" in lines[2]
    assert lines[2].endswith("| 0.800 | 0.500 ± 0.100 |")
    # Credit + update: GRPO 1.1 s, TASPO 1.4 s -> 1.27x.
    assert "| TASPO | 10.0 | 0.30 | 1.1 | 1.4 | 1.27× |" in lines


def test_launch_skips_finished_runs_and_aggregate_reports_them(tmp_path, capsys):
    _, _, steps, _ = credit_learning.preset_config("smoke", "SearchQA-v0", None)
    for name in ("grpo_0", "taspo_0"):
        write_run(tmp_path / name, {0: (0.0, 0.1), steps: (0.5, 0.5)}, steps, credit_s=0.1, update_s=1.0)
    args = argparse.Namespace(
        preset="smoke", env="SearchQA-v0", steps=None, seeds=[0], algorithms=["grpo", "taspo"], model=None,
        parallel=1, threads=1, max_minutes=0, examples=1, output=str(tmp_path), success_score=None,
    )  # fmt: skip
    credit_learning.launch(args)  # starts nothing: both are finished
    assert "finished already: grpo_0, taspo_0" in capsys.readouterr().out
    assert not (tmp_path / "grpo_0.log").exists()
    credit_learning.aggregate(args)
    assert (tmp_path / "learning_curves.png").stat().st_size > 0
    results = (tmp_path / "results.md").read_text()
    assert results.startswith("# Learning comparison (smoke preset, SearchQA-v0)") and "| TASPO | 1 |" in results


def test_aggregate_rewrites_only_the_marked_block_of_results_md(tmp_path):
    begin, end = credit_learning.GENERATED_BEGIN, credit_learning.GENERATED_END
    path = tmp_path / "results.md"
    path.write_text(f"# WebShop study\n\nThe command.\n\n{begin}\n| old |\n{end}\n\n## Reading\n\nNo rule wins.\n")
    credit_learning.write_results(path, "Learning comparison", ["| new |", "", "- activity"])
    assert path.read_text() == (
        f"# WebShop study\n\nThe command.\n\n{begin}\n| new |\n\n- activity\n{end}\n\n## Reading\n\nNo rule wins.\n"
    )
    path.write_text("# WebShop race\n\n## Results\n\nNot run yet.\n")  # no markers: kept, the block appended
    credit_learning.write_results(path, "Learning comparison", ["| new |"])
    assert path.read_text() == f"# WebShop race\n\n## Results\n\nNot run yet.\n\n{begin}\n| new |\n{end}\n"
    path.unlink()
    credit_learning.write_results(path, "Learning comparison", ["| new |"])
    assert path.read_text() == f"# Learning comparison\n\n{begin}\n| new |\n{end}\n"


def test_multiturn_preset_uses_the_quick_start_recipe_and_needs_a_multi_turn_env():
    from agents.cli.quickstart import PRESETS

    model, env, steps, config = credit_learning.preset_config("multiturn", "WebShop-v0", None)
    assert (model, env, steps) == ("smollm2-135m", "WebShop-v0", PRESETS["webshop"].total_steps)
    assert config.env_kwargs == PRESETS["webshop"].rl.env_kwargs and config.save_every == 1
    assert credit_learning.preset_config("gpu", "ALFWorld-v0", None)[3].device == "cuda"
    with pytest.raises(ValueError, match="--preset multiturn needs --env"):
        credit_learning.preset_config("multiturn", "SearchQA-v0", None)


def test_examples_come_from_the_lowest_seed_that_logged_any(tmp_path):
    for seed in (0, 1, 2):
        write_run(tmp_path / f"orsd_{seed}", {0: (0.0, 0.0), 2: (0.0, 0.0)}, 2, credit_s=0.1, update_s=1.0)
    for seed in (1, 2):  # seed 0's groups all had one outcome: it logged nothing
        record = {"step": 3, "group_id": seed, "rubric": "Process rubric:\n1. open the drawer"}
        (tmp_path / f"orsd_{seed}" / "credit_examples.jsonl").write_text(json.dumps(record) + "\n")
    summary = credit_learning.summarize(tmp_path, "orsd", [0, 1, 2], 2)
    assert summary is not None
    lines = "\n".join(credit_learning.example_lines(tmp_path, [summary], per_rule=1))
    assert "## ORSD (seed 1)" in lines and "- step 3, group_id 1" in lines
    assert "  rubric:\n  ```text\n  Process rubric:\n  1. open the drawer\n  ```" in lines
    assert "group_id 2" not in lines


def test_race_preset_evaluates_on_the_tuning_set_and_is_webshops():
    from agents.cli.quickstart import PRESETS

    model, env, steps, config = credit_learning.preset_config("race", "WebShop-v0", None)
    assert (model, env, steps) == ("smollm2-135m", "WebShop-v0", 3 * PRESETS["webshop"].total_steps)
    assert config.evaluation_env_kwargs(env)["split"] == "test" and config.eval_episodes == 104
    assert config.eval_every == 8 and config.lr_scheduler_type == "constant"  # step 8 is the recipe's run
    assert config.env_kwargs == PRESETS["webshop"].rl.env_kwargs
    with pytest.raises(ValueError, match="--preset race is WebShop-v0's"):
        credit_learning.preset_config("race", "ALFWorld-v0", None)
    assert credit_learning.rule_settings("orsd_opt", None)[1] == {"env_pi": "replace", "env_pi_keys": "goal_options"}


def test_race_tables_hand_computed(tmp_path):
    write_run(tmp_path / "grpo_0", {0: (0.0, 0.2), 1: (0.25, 0.4), 2: (0.5, 0.6)}, 2, credit_s=0.0, update_s=60.0)
    write_run(tmp_path / "grpo_1", {0: (0.0, 0.2), 1: (0.25, 0.4), 2: (0.25, 0.4)}, 2, credit_s=0.0, update_s=60.0)
    write_run(tmp_path / "vine2_0", {0: (0.0, 0.2), 1: (0.5, 0.6), 2: (1.0, 1.0)}, 2, credit_s=6.0, update_s=60.0)
    write_run(tmp_path / "vine2_1", {0: (0.0, 0.2), 1: (0.5, 0.6), 2: (0.75, 0.8)}, 2, credit_s=6.0, update_s=60.0)
    for seed, right in ((0, 1), (1, 3)):
        (tmp_path / f"grpo_{seed}" / "option_clicks.json").write_text(json.dumps({"2": {"clicks": 4, "right": right}}))
    (tmp_path / "warm_start").mkdir()
    (tmp_path / "warm_start" / "option_clicks.json").write_text(json.dumps({"5": {"clicks": 10, "right": 2}}))
    metrics = tmp_path / "vine2_0" / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    records[1]["vine/plays"] = 30.0  # VinePPO's continuation plays at step 1
    metrics.write_text("".join(json.dumps(record) + "\n" for record in records))
    summaries = [credit_learning.summarize(tmp_path, name, [0, 1], 2) for name in ("grpo", "vine2")]
    lines = credit_learning.race_lines(tmp_path, summaries, episodes_per_run=32)
    # GRPO at step 2: 0.375 ± t(0.975, 1) · 0.1768 / √2 = 12.706 · 0.125 = 1.588.
    assert "| grpo | 2 | 0.250 ± 0.000 | 0.375 ± 1.588 | 0.400 ± 0.000 | 0.500 ± 1.271 |" in lines
    assert "| grpo | 0.20 (2/10) | – | 0.50 (4/8) |" in lines  # step 0 is the warm start's
    assert "| vine2 | 0.20 (2/10) | – | – |" in lines
    # Gains 0.5 and 0.5; VinePPO's runs 32 + (30 + 0) / 2 episodes; 2 steps × (10 + 6 + 60) s = 2.5 min.
    assert "| vine2 | +0.500 ± 0.000 | 2 | 47 | 2.5 |" in lines
    assert "| grpo | – | – | 32 | 2.3 |" in lines  # 2 × (10 + 60) s
