"""An SFT run folder: never overwritten by a fresh start, resumed only with its settings, one run at a time."""

from __future__ import annotations

import json
import os

import pytest

from agents.runs.lock import LOCK_FILE, RunLock, RunLockedError
from agents.sft import SFTAgent
from tests.agents.sft.test_agent import sft_config


def test_a_fresh_start_into_another_runs_folder_is_refused_before_any_work(tmp_path, tiny_model_path):
    run = tmp_path / "sft"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0}\n')
    agent = SFTAgent(str(tiny_model_path), "SearchQA-v0", sft_config(tmp_path))
    with pytest.raises(FileExistsError, match=r"SFTConfig.output_dir .* already holds a run \(metrics.jsonl\)"):
        agent.learn()
    assert (run / "metrics.jsonl").read_text() == '{"step": 0}\n'
    assert sorted(p.name for p in run.iterdir()) == ["metrics.jsonl"]  # no demonstrations, no lock left


def test_a_locked_folder_is_refused_naming_the_holder(tmp_path, tiny_model_path):
    agent = SFTAgent(str(tiny_model_path), "SearchQA-v0", sft_config(tmp_path))
    with RunLock(tmp_path / "sft"), pytest.raises(RunLockedError, match=f"pid {os.getpid()}"):
        agent.learn()
    assert not (tmp_path / "sft" / LOCK_FILE).exists()


@pytest.mark.slow
def test_a_resume_with_a_changed_learning_rate_is_refused_but_more_epochs_are_not(tmp_path, tiny_model_path):
    first = SFTAgent(str(tiny_model_path), "SearchQA-v0", sft_config(tmp_path, eval_episodes=0))
    first.learn()
    run = tmp_path / "sft"
    metrics = (run / "metrics.jsonl").read_text()
    changed = sft_config(tmp_path, eval_episodes=0, resume=True, learning_rate=1e-3)
    with pytest.raises(ValueError, match=r"SFTConfig: resuming .*learning_rate: 0.01 -> 0.001"):
        SFTAgent(str(tiny_model_path), "SearchQA-v0", changed).learn()
    assert (run / "metrics.jsonl").read_text() == metrics
    (run / "checkpoints" / "latest").write_text("../../elsewhere\n")  # and a bad pointer on the way
    longer = SFTAgent(str(tiny_model_path), "SearchQA-v0", sft_config(tmp_path, eval_episodes=0, resume=True, epochs=2))
    longer.learn()
    assert json.loads((run / "config.json").read_text())["config"]["epochs"] == 2
    assert (run / "metrics.jsonl").read_text().startswith(metrics)  # the first epoch's records kept
