"""The quick start's presets: both stages prompt alike, and a scaled-down preset runs end to end."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from agents.cli.quickstart import PRESETS, SUMMARY_FILE, Preset, describe, format_summary, run_quickstart
from agents.config import GRPOConfig
from agents.policy import trunk_precision
from agents.sft import SFTConfig
from agents.sft.config import PROMPT_FIELDS


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_presets_stages_share_prompt_and_env_settings(name):
    preset = PRESETS[name]
    if preset.sft is not None:
        assert preset.sft.prompt_settings() == {field: getattr(preset.rl, field) for field in PROMPT_FIELDS}
        assert preset.sft.env_kwargs == preset.rl.env_kwargs and preset.sft.max_turns == preset.rl.max_turns
        assert preset.sft.eval_episodes == preset.rl.eval_episodes >= 32
        assert preset.sft.evaluation_env_kwargs(preset.env) == preset.rl.evaluation_env_kwargs(preset.env)


def test_the_wider_evaluation_changes_every_evaluation_and_nothing_else():
    preset = PRESETS["webshop"]
    wider = preset.with_eval_episodes(128)
    assert wider.sft is not None and preset.sft is not None
    assert wider.rl.eval_episodes == wider.sft.eval_episodes == 128
    assert dataclasses.replace(wider.rl, eval_episodes=32) == preset.rl
    assert dataclasses.replace(wider.sft, eval_episodes=32) == preset.sft
    with pytest.raises(ValueError, match=r"GRPOConfig\.eval_episodes must be an integer >= 1, got 0"):
        preset.with_eval_episodes(0)


def test_a_preset_whose_stages_prompt_differently_is_refused():
    with pytest.raises(ValueError, match="history_length"):
        Preset(
            env="WebShop-v0", model="m", rl=GRPOConfig(history_length=1), total_steps=1, sft=SFTConfig(history_length=2)
        )
    with pytest.raises(ValueError, match="agent"):
        Preset(env="WebShop-v0", model="m", rl=GRPOConfig(), total_steps=1, agent="ppo")


@pytest.mark.slow
@pytest.mark.parametrize("eval_start", [False, True])
def test_a_scaled_down_webshop_preset_warm_starts_then_trains(tmp_path, tiny_model_path, capsys, eval_start):
    webshop = PRESETS["webshop"].with_start_evaluation() if eval_start else PRESETS["webshop"]
    assert webshop.sft is not None and webshop.sft.eval_before is eval_start
    small = {"max_new_tokens": 6, "eval_episodes": 2, "lora_top_layers": 1}
    preset = dataclasses.replace(
        webshop,
        model=str(tiny_model_path),
        sft=dataclasses.replace(webshop.sft, expert_episodes=2, epochs=1, **small),
        rl=dataclasses.replace(webshop.rl, num_groups=1, group_size=2, tensorboard=False, **small),
        total_steps=1,
        output_dir=str(tmp_path / "quick"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the run's own warnings are fixed, peft's one is filtered
        summary = run_quickstart(preset)
    assert list(summary["stages"]) == ["start", "warm start", "end"][0 if eval_start else 1 :]
    sft_records = [json.loads(line) for line in (tmp_path / "quick" / "sft" / "metrics.jsonl").read_text().splitlines()]
    assert ("eval/success_rate" in sft_records[0]) is eval_start and sft_records[0]["step"] == 0
    assert (tmp_path / "quick" / "sft" / "trajectories" / "eval_step_0.jsonl").is_file() is eval_start
    records = [json.loads(line) for line in (tmp_path / "quick" / "rl" / "metrics.jsonl").read_text().splitlines()]
    assert (
        records[0]["step"] == 0 and records[0]["eval/success_rate"] == summary["stages"]["warm start"]["success_rate"]
    )
    assert all(0.0 <= stage["invalid_rate"] <= 1.0 for stage in summary["stages"].values())
    assert json.loads((tmp_path / "quick" / SUMMARY_FILE).read_text()) == summary
    assert (tmp_path / "quick" / "rl" / "learning_curve.png").is_file()
    captured = capsys.readouterr()
    out = captured.out
    # It talks: what it will do first, then a banner per stage, the SFT and evaluation lines, the summary.
    assert out.startswith(describe(preset))
    assert ("SFT: before cloning, held out: success " in out) is eval_start
    assert ("evaluate the model on 2 held-out goals" in out) is eval_start
    for line in (
        "== 1/2 warm start",
        "SFT: 2 expert episodes",
        "SFT: after cloning, held out: success ",
        "== 2/2 RL: 1 GRPO steps ==",
        "step 1 | ",
        "== summary ==",
    ):
        assert line in out, line
    assert "evaluate (2 held-out goals)" in captured.err and "collect WebShop-v0" in captured.err  # the bars
    assert format_summary(summary).count("\n") == 4 + eval_start


def test_the_first_lines_say_what_will_happen_and_how_long() -> None:
    text = describe(PRESETS["webshop"])
    assert text.splitlines()[0] == "Quick start: smollm2-135m on WebShop-v0, GRPO after an expert warm start."
    assert "8 steps of 4 goals x 4 rollouts" in text and "32 held-out goals (eval split)" in text
    assert "runs/quickstart-webshop/" in text
    assert "1/1 RL" in describe(PRESETS["searchqa"])
    # The bare model is evaluated only when asked (--eval-start): it plays every WebShop turn invalid.
    assert (
        "clone the env's expert (32 episodes, 128 further option turns, 3 epochs), evaluate on 32 held-out goals"
        in text
    )
    asked = describe(PRESETS["webshop"].with_start_evaluation())
    assert "evaluate the model on 32 held-out goals (eval split), greedy, clone" in asked
    assert PRESETS["searchqa"].with_start_evaluation() == PRESETS["searchqa"]  # RL alone evaluates its step 0


@pytest.mark.parametrize(
    ("units", "announced"),
    [
        (True, "about 7.5 min on 2 idle CPU cores with bf16 units (the frozen layers run in bf16 here"),
        (
            False,
            "about 16 min on 2 idle CPU cores without bf16 units (the frozen layers run in float32 here; measured",
        ),
    ],
)
def test_the_announced_time_is_the_one_measured_with_this_cpus_trunk_dtype(monkeypatch, units, announced) -> None:
    monkeypatch.setattr(trunk_precision, "cpu_has_bf16_units", lambda: units)
    assert announced in describe(PRESETS["webshop"])
    assert "about 6 min on 2 idle CPU cores (up to" in describe(PRESETS["searchqa"])  # no trunk dtype to resolve
    lab = describe(PRESETS["credit-lab"])  # measured with bf16 units only
    assert ("about 11 min on 2 idle CPU cores with bf16 units" in lab) and (("longer here" in lab) != units)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_sets_its_own_optimiser_and_seed_not_grpoconfigs_trl_defaults(name):
    # The README's figures were measured with these; GRPOConfig's defaults follow TRL (1e-6, linear, 42).
    preset = PRESETS[name]
    learning_rate = 8e-4 if name == "searchqa" else 1e-3
    for config in (preset.rl, preset.sft):
        if config is not None:
            assert (config.learning_rate, config.lr_scheduler_type, config.seed) == (learning_rate, "constant", 0)


@pytest.mark.slow
def test_a_scaled_down_credit_lab_race_trains_each_rule_from_one_warm_start(tmp_path, tiny_model_path, capsys):
    lab = PRESETS["credit-lab"]
    assert lab.sft is not None and [credit for credit, _ in lab.race] == ["grpo", "vine"]
    small = {"eval_episodes": 4, "lora_top_layers": 1}
    preset = dataclasses.replace(
        lab,
        model=str(tiny_model_path),
        sft=dataclasses.replace(lab.sft, expert_episodes=2, epochs=1, **small),
        rl=dataclasses.replace(lab.rl, num_groups=1, group_size=2, num_iterations=1, eval_every=1, **small),
        total_steps=2,
        output_dir=str(tmp_path / "race"),
    )
    summary = run_quickstart(preset)
    assert list(summary["stages"]) == ["warm start", "end grpo", "end vine"]
    assert summary["agent"] == "GRPO vs VINE" and set(summary["run_seconds"]) == {"grpo", "vine"}
    for credit in ("grpo", "vine"):
        folder = tmp_path / "race" / f"rl-{credit}"
        config = json.loads((folder / "config.json").read_text())["config"]
        assert config["credit"] == credit
        curve = summary["curves"][credit]
        assert [point["step"] for point in curve] == [0, 1, 2]
        # Both start from the one warm start: step 0 is its evaluation, not a new one.
        assert curve[0]["success"] == summary["stages"]["warm start"]["success_rate"]
        for point in curve:
            assert 0.0 <= point["low"] <= point["success"] <= point["high"] <= 1.0
        assert curve[-1]["success"] == summary["stages"][f"end {credit}"]["success_rate"]
    records = [json.loads(line) for line in (tmp_path / "race" / "rl-vine" / "metrics.jsonl").read_text().splitlines()]
    assert any(record.get("vine/plays", 0) > 0 for record in records)  # VinePPO played its continuations
    assert (tmp_path / "race" / "race.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "race" / SUMMARY_FILE).read_text()) == summary
    out = capsys.readouterr().out
    assert out.startswith(describe(preset))
    for line in ("== 2/2 RL, 1/2: 2 GRPO steps ==", "== 2/2 RL, 2/2: 2 VINE steps ==", "grpo held-out success by step"):
        assert line in out, line
    assert "vine held-out success by step [95% interval]: 0: " in format_summary(summary)


def test_a_race_names_two_different_rules_and_checks_their_options_before_any_model_loads():
    lab = PRESETS["credit-lab"]
    with pytest.raises(ValueError, match="two or more different rules"):
        dataclasses.replace(lab, race=(("grpo", {}), ("grpo", {})))
    with pytest.raises(ValueError, match="two or more different rules"):
        dataclasses.replace(lab, race=(("grpo", {}),))
    with pytest.raises(ValueError, match="continuations"):
        dataclasses.replace(lab, race=(("grpo", {}), ("vine", {"continuations": 0})))
