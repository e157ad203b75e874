"""A run folder under a resume: the newest intact checkpoint, its records kept, its settings kept,
one run at a time (issue 25, items 8 and 9)."""

import json
import os

import pytest

from agents import GRPOAgent
from agents.runs.credit_record import recorded_steps
from agents.runs.lock import LOCK_FILE, RunLockedError
from tests.agents.training.test_trainer import _one_group_config


def _learn(model, run, steps, **fields):
    agent = GRPOAgent(model=str(model), env="SearchQA-v0", config=_one_group_config(run, save_every=1, **fields))
    try:
        return agent.learn(steps, plot=False)
    finally:
        agent.close()


def _damage_latest_to_missing(run):
    (run / "checkpoints" / "latest").write_text("step_9\n")


def _damage_latest_to_outside(run):
    (run / "checkpoints" / "latest").write_text("../../../../etc\n")


def _tear_the_last_lines(run):
    for name in ("metrics.jsonl", "credit_examples.jsonl"):
        with open(run / name, "a", encoding="utf-8") as handle:
            handle.write('{"step": 3, "lo')


@pytest.mark.parametrize("damage", [_damage_latest_to_missing, _damage_latest_to_outside, _tear_the_last_lines])
def test_a_damaged_run_resumes_from_its_newest_intact_checkpoint_keeping_its_records(
    damage, tmp_path, tiny_model_path, capsys
):
    run = tmp_path / "run"
    _learn(tiny_model_path, run, 2)
    metrics = (run / "metrics.jsonl").read_text()
    damage(run)
    capsys.readouterr()
    _learn(tiny_model_path, run, 2, resume=True)
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("resumed from")]
    assert len(printed) == 1 and "step_2 (step 2)" in printed[0]
    if damage is not _tear_the_last_lines:
        assert "skipped:" in printed[0] and "latest names" in printed[0]
    assert (run / "metrics.jsonl").read_text() == metrics  # nothing deleted, nothing to redo
    assert recorded_steps(run) == [1, 2]


def test_a_truncated_state_falls_back_to_the_previous_checkpoint_and_redoes_the_step(tmp_path, tiny_model_path, capsys):
    run = tmp_path / "run"
    _learn(tiny_model_path, run, 2)
    state = run / "checkpoints" / "step_2" / "state.pt"
    state.write_bytes(state.read_bytes()[:100])
    capsys.readouterr()
    _learn(tiny_model_path, run, 2, resume=True)
    printed = capsys.readouterr().out
    assert "step_1 (step 1); skipped:" in printed and f"{state} is truncated" in printed
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2]


@pytest.mark.parametrize(("field", "value"), [("group_size", 3), ("learning_rate", 1e-3)])
def test_resuming_with_changed_settings_is_refused_unless_allowed(field, value, tmp_path, tiny_model_path, capsys):
    run = tmp_path / "run"
    _learn(tiny_model_path, run, 1)
    metrics, saved = (run / "metrics.jsonl").read_text(), (run / "config.json").read_text()
    with pytest.raises(
        ValueError, match=rf"GRPOConfig: resuming .*changed settings \({field}: .*resume_changed_config"
    ):
        _learn(tiny_model_path, run, 2, resume=True, **{field: value})
    assert (run / "metrics.jsonl").read_text() == metrics and (run / "config.json").read_text() == saved
    assert not (run / LOCK_FILE).exists()  # the refused run let go of the folder
    capsys.readouterr()
    _learn(tiny_model_path, run, 2, resume=True, resume_changed_config=True, **{field: value})
    assert f"resuming with changed settings (resume_changed_config=True): {field}" in capsys.readouterr().out
    assert json.loads((run / "config.json").read_text())["config"][field] == value
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2]


def test_a_fresh_start_into_another_runs_folder_is_refused_and_deletes_nothing(tmp_path, tiny_model_path):
    run = tmp_path / "run"
    _learn(tiny_model_path, run, 1)
    before = {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()}
    with pytest.raises(
        FileExistsError,
        match=r"already holds a run \(metrics.jsonl, credit, checkpoints\).*new output_dir.*resume=True",
    ):
        _learn(tiny_model_path, run, 1)
    assert {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_a_second_trainer_on_a_locked_folder_fails_naming_the_first(tmp_path, tiny_model_path):
    run = tmp_path / "run"
    first = GRPOAgent(model=str(tiny_model_path), env="SearchQA-v0", config=_one_group_config(run, save_every=1))
    second = GRPOAgent(
        model=str(tiny_model_path), env="SearchQA-v0", config=_one_group_config(run, save_every=1, resume=True)
    )
    try:
        first.learn(1, plot=False)
        metrics = (run / "metrics.jsonl").read_text()
        with pytest.raises(RunLockedError, match=rf"in use by another run: pid {os.getpid()} "):
            second.learn(2, plot=False)
        assert (run / "metrics.jsonl").read_text() == metrics
        first.close()  # releases the folder
        assert second.learn(2, plot=False)["step"] == 2
    finally:
        first.close()
        second.close()
    assert not (run / LOCK_FILE).exists()


def test_a_stale_lock_of_a_dead_run_is_taken_over(tmp_path, tiny_model_path, capsys):
    import socket
    import subprocess
    import sys

    run = tmp_path / "run"
    run.mkdir()
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)
    (run / LOCK_FILE).write_text(json.dumps({"pid": dead, "host": socket.gethostname()}))
    assert _learn(tiny_model_path, run, 1)["step"] == 1
    assert f"taking over the lock of pid {dead}" in capsys.readouterr().out
