"""The credit lab's bookkeeping and analysis on hand-made records (no model): the plan's order, the
race and quality tables, the report's files."""

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import credit_lab  # noqa: E402


def race_record(setting: str, rule: str, seed: int, successes: list[float]) -> dict:
    return {
        "kind": "race",
        "setting": setting,
        "rule": rule,
        "seed": seed,
        "warm_start": 0,
        "curve": [{"step": 4 * i, "episodes": 64 * i, "success": s} for i, s in enumerate(successes)],
        "continuation_plays": 10.0 if rule == "vine" else 0.0,
        "seconds": 60.0,
        "machine": "test",
    }


def test_the_plan_is_seed_major_and_every_rule_has_one_default() -> None:
    plan = credit_lab.plan(["a", "b"], ["grpo", "vine"], [0, 1])
    assert plan[:4] == [("a", "grpo", 0), ("a", "vine", 0), ("b", "grpo", 0), ("b", "vine", 0)]
    assert {seed for _, _, seed in plan[4:]} == {1}
    for study in credit_lab.STUDIES.values():
        assert set(study.rules) <= set(credit_lab.RULES) and set(study.settings) <= set(credit_lab.SETTINGS)


def test_a_studys_lab_settings_reach_the_run_config(tmp_path: Path) -> None:
    long = credit_lab.STUDIES["long"]
    config = credit_lab.rl_config(credit_lab.SETTINGS["umbrella-4"], "vine", 2, tmp_path, long.lab)
    assert (config.num_iterations, config.seed, config.credit, config.credit_options) == (
        4,
        2,
        "vine",
        {"continuations": 2},
    )
    assert (
        credit_lab.rl_config(credit_lab.SETTINGS["umbrella-4"], "grpo", 0, tmp_path, credit_lab.LAB).num_iterations == 1
    )


def test_the_settings_chance_is_the_uniform_policys_exact_success() -> None:
    import gymnasium as gym

    import agentenvs  # noqa: F401

    for setting in credit_lab.SWEEP:
        env = gym.make(setting.env, **setting.env_kwargs).unwrapped
        task = env.task_ids[0]
        if setting.env == "KeyDoor-v0":  # the return counts apples too; success is the door's share
            door = 1.0 / 2
            assert setting.chance == pytest.approx(door / env.choices)
        else:
            assert setting.chance == pytest.approx(env.start_value(task))


def test_race_table_means_auc_score_and_episodes_to_80_percent() -> None:
    records = [
        race_record("umbrella-4", "grpo", 0, [0.3, 0.5, 0.9]),
        race_record("umbrella-4", "grpo", 1, [0.3, 0.7, 0.7]),
        race_record("umbrella-4", "vine", 0, [0.3, 0.3, 0.3]),
    ]
    table = credit_lab.race_table(records)
    grpo = table[("umbrella-4", "grpo")]
    assert grpo["final"] == [0.9, 0.7] and grpo["auc"] == pytest.approx([1.7 / 3, 1.7 / 3])
    assert grpo["episodes_to_80"] == 128  # the mean curve is 0.3, 0.6, 0.8: 0.8 × best (1.0) at 128 episodes
    assert grpo["score"] == pytest.approx([(0.9 - 1 / 3) / (2 / 3), (0.7 - 1 / 3) / (2 / 3)])
    assert table[("umbrella-4", "vine")]["episodes_to_80"] is None
    assert table[("umbrella-4", "vine")]["score"] == [0.0]  # below chance counts as 0
    mean, half = credit_lab.interval([0.9, 0.7])
    assert mean == pytest.approx(0.8) and half == pytest.approx(12.706 * 0.1, rel=1e-3)


def test_paired_gains_compare_each_seed_with_grpos_run_of_the_same_seed() -> None:
    records = [
        race_record("umbrella-4", "grpo", 0, [0.3, 0.5]),
        race_record("umbrella-4", "grpo", 1, [0.3, 0.7]),
        race_record("umbrella-4", "vine", 1, [0.3, 0.9]),
        race_record("umbrella-4", "vine", 2, [0.3, 0.9]),  # no GRPO run of seed 2: left out
        race_record("keydoor", "vine", 0, [0.1, 0.2]),  # no GRPO run in this setting: no entry
    ]
    other_start = {**race_record("umbrella-4", "vine", 0, [0.3, 0.9]), "warm_start": 1}  # GRPO's seed 0 is sitting 0
    gains = credit_lab.paired_gains(credit_lab.race_table([*records, other_start]))
    assert list(gains) == [("umbrella-4", "vine")]
    assert gains[("umbrella-4", "vine")] == pytest.approx([0.1])  # AUC 0.6 against GRPO's 0.5 at seed 1
    assert credit_lab.paired_gains(credit_lab.race_table(records), "final")[("umbrella-4", "vine")] == pytest.approx(
        [0.2]
    )


def test_a_warm_start_trained_again_is_a_new_sitting_and_the_first_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained = []

    class FakeSFT:  # trains nothing: writes weights that differ per call, as another machine's would
        def __init__(self, model: str, env: str, config: object) -> None:
            self.config = config

        def learn(self) -> dict[str, float]:
            trained.append(1)
            return {"eval/success_rate": 0.25 * len(trained), "loss": 1.0}

        def save_pretrained(self, folder: Path) -> None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "config.json").write_text("{}")
            (folder / "model.safetensors").write_bytes(bytes([len(trained)]) * 64)

    import agents.sft

    monkeypatch.setattr(agents.sft, "SFTAgent", FakeSFT)
    setting, records = credit_lab.SETTINGS["umbrella-4"], tmp_path / "records"
    model, sitting, start = credit_lab.warm_start(setting, tmp_path / "work", records)
    assert (sitting, start, len(trained)) == (0, {"eval/success_rate": 0.25}, 1)
    assert credit_lab.warm_start(setting, tmp_path / "work", records)[1:] == (0, start)  # found, not trained
    (Path(model) / "config.json").unlink()  # a fresh machine: the model folder is gone, the record is not
    _, sitting, start = credit_lab.warm_start(setting, tmp_path / "other", records)
    record = json.loads(credit_lab.record_path(records, "umbrella-4", "warm_start").read_text())
    assert (sitting, start, len(trained)) == (1, {"eval/success_rate": 0.5}, 2)
    assert [s["evaluation"]["eval/success_rate"] for s in record["sittings"]] == [0.25, 0.5]
    assert record["sittings"][0]["digest"] != record["sittings"][1]["digest"]


def test_quality_table_ranks_and_shares_against_the_exact_advantages() -> None:
    batch = {
        "trajectory": [0, 0, 1, 1],
        "exact": [0.6, 0.0, -0.4, 0.0],
        "decisive": [True, False, True, False],
        "credit": {"grpo": [1.0, 1.0, -1.0, -1.0], "vine": [0.5, 0.1, -0.5, 0.0]},
    }
    table = credit_lab.quality_table([{"kind": "quality", "setting": "umbrella-4", "batches": [batch]}])
    grpo, vine = table[("umbrella-4", "grpo")], table[("umbrella-4", "vine")]
    assert grpo["within_rho"] == 0.0 and grpo["decisive_share"] == 0.5 and grpo["sign"] == 1.0
    assert vine["within_rho"] == pytest.approx(1.0) and vine["decisive_share"] == pytest.approx((0.5 / 0.6 + 1.0) / 2)
    assert grpo["flat_share"] == 0.5


def test_report_writes_the_tables_plots_and_summary(tmp_path: Path) -> None:
    records = tmp_path / "records"
    for seed in (0, 1):
        for rule, curve in (("grpo", [0.3, 0.4, 0.5]), ("vine", [0.3, 0.6, 0.9])):
            credit_lab.write_record(
                credit_lab.record_path(records, "umbrella-4", f"{rule}_{seed}"),
                race_record("umbrella-4", rule, seed, curve),
            )
    batch = {
        "trajectory": [0, 0],
        "exact": [0.6, 0.0],
        "decisive": [True, False],
        "credit": {"grpo": [1.0, 1.0], "vine": [0.5, 0.1]},
    }
    quality = {"kind": "quality", "setting": "umbrella-4", "batches": [batch], "rules": {}, "machine": "test"}
    credit_lab.write_record(credit_lab.record_path(records, "umbrella-4", "quality"), quality)
    output = tmp_path / "out"
    credit_lab.report(argparse.Namespace(records=str(records), output=str(output)))
    text = (output / "results.md").read_text()
    assert "| vine | 0.90 ± 0.00 [2] |" in text and "| grpo | 0.50 ± 0.00 [2] |" in text
    assert "| vine | **+0.200 ± 0.000 [2]** |" in text  # AUC 0.6 against 0.4 at both seeds: bold, above 0
    assert (output / "credit_lab.png").stat().st_size > 0 and (output / "credit_lab_umbrella-4.png").exists()
    summary = json.loads((output / "results.json").read_text())
    assert summary["scores"]["vine"] == pytest.approx((0.9 - 1 / 3) / (2 / 3))


@pytest.mark.parametrize("rule", ["grpo", "vine"])
def test_the_quick_starts_credit_lab_race_is_the_long_studys_setting(tmp_path: Path, rule: str) -> None:
    """``python -m agents quickstart --preset credit-lab`` trains what the long study measured: the same
    warm start and, for each raced rule, the same RL settings (only where runs write, how they log,
    and the demonstrator, which RL never calls, differ)."""
    from agents.cli.quickstart import PRESETS

    preset = PRESETS["credit-lab"]
    setting, long = credit_lab.SETTINGS["umbrella-4"], credit_lab.STUDIES["long"]
    assert rule in long.rules and preset.total_steps <= long.lab.steps
    lab = credit_lab.rl_config(setting, rule, 0, tmp_path, long.lab)
    ours = preset.rl_runs()[f"rl-{rule}"][1]
    assert ours.env_kwargs == {**lab.env_kwargs, "demonstrator": "uniform"}
    logging = {"output_dir", "resume", "progress", "save_every", "tensorboard", "env_kwargs"}
    differ = {
        name for name in dataclasses.asdict(lab) if name not in logging and getattr(lab, name) != getattr(ours, name)
    }
    assert not differ, {name: (getattr(lab, name), getattr(ours, name)) for name in differ}
    assert preset.sft is not None
    lab_sft = credit_lab.sft_config(setting, tmp_path)
    differ = {
        name
        for name in dataclasses.asdict(lab_sft)
        if name not in {"output_dir", "resume", "progress"} and getattr(lab_sft, name) != getattr(preset.sft, name)
    }
    assert not differ, {name: (getattr(lab_sft, name), getattr(preset.sft, name)) for name in differ}
