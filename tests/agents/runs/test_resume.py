"""Resume rules: a fresh start never deletes another run's records; a resume keeps the saved settings."""

import json

import pytest

from agents.runs.resume import changed_fields, check_resumed_config, refuse_fresh_start


def test_a_fresh_start_over_records_is_refused_naming_them(tmp_path):
    refuse_fresh_start(tmp_path, ["metrics.jsonl", "checkpoints"], "GRPOConfig")  # empty folder: fine
    (tmp_path / "metrics.jsonl").write_text("")
    (tmp_path / "checkpoints").mkdir()
    refuse_fresh_start(tmp_path, ["metrics.jsonl", "checkpoints"], "GRPOConfig")  # empty records: fine
    (tmp_path / "metrics.jsonl").write_text('{"step": 0}\n')
    with pytest.raises(
        FileExistsError, match=r"GRPOConfig.output_dir .* already holds a run \(metrics.jsonl\).*resume"
    ):
        refuse_fresh_start(tmp_path, ["metrics.jsonl", "checkpoints"], "GRPOConfig")


def test_changed_settings_are_named_unless_allowed(tmp_path):
    saved = {"env": "SearchQA-v0", "config": {"group_size": 4, "learning_rate": 1e-5, "progress": True}}
    (tmp_path / "config.json").write_text(json.dumps(saved))
    same = {"env": "SearchQA-v0", "config": {**saved["config"], "progress": False}}
    assert check_resumed_config(tmp_path, same, owner="GRPOConfig", ignored={"progress"}, allow_changes=False) == []
    changed = {"env": "WebShop-v0", "config": {**saved["config"], "group_size": 8, "learning_rate": 1e-4}}
    with pytest.raises(
        ValueError, match=r"GRPOConfig: resuming .*env: .*group_size: 4 -> 8, learning_rate: 1e-05 -> 0.0001"
    ):
        check_resumed_config(tmp_path, changed, owner="GRPOConfig", ignored={"progress"}, allow_changes=False)
    allowed = check_resumed_config(tmp_path, changed, owner="GRPOConfig", ignored=(), allow_changes=True)
    assert allowed == ["env", "group_size", "learning_rate"]


def test_without_config_json_the_checkpoints_own_config_is_compared(tmp_path):
    run = {"env": "SearchQA-v0", "config": {"seed": 1}}
    assert check_resumed_config(tmp_path, run, owner="X", ignored=(), allow_changes=False) == []
    with pytest.raises(ValueError, match="seed: 0 -> 1"):
        check_resumed_config(tmp_path, run, owner="X", ignored=(), allow_changes=False, checkpoint_config={"seed": 0})


def test_a_field_present_on_one_side_only_counts_as_changed():
    assert changed_fields({"a": 1}, {"a": 1, "b": None}) == ["b"]
