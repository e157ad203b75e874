"""Run folders: a run without an ``output_dir`` gets a new numbered one (issue 26, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import GRPOAgent, GRPOConfig, TASPOAgent
from agents.runs.folders import new_run_folder, run_folder_prefix, with_run_folder
from agents.sft.config import SFTConfig


def test_numbers_follow_the_highest_taken(tmp_path):
    assert new_run_folder("grpo-SearchQA-v0", tmp_path).name == "grpo-SearchQA-v0-1"
    (tmp_path / "grpo-SearchQA-v0-7").mkdir()
    (tmp_path / "grpo-SearchQA-v0-x").mkdir()  # not a number: not counted
    (tmp_path / "taspo-SearchQA-v0-9").mkdir()  # another rule's folders do not count
    assert new_run_folder("grpo-SearchQA-v0", tmp_path).name == "grpo-SearchQA-v0-8"
    assert new_run_folder("grpo-SearchQA-v0", tmp_path).is_dir()
    assert (
        run_folder_prefix("orsd", "tests.support.privileged:LetterHunt-v0")
        == "orsd-tests.support.privileged_LetterHunt-v0"
    )


def test_a_named_output_dir_is_kept_and_none_becomes_a_new_folder(tmp_path):
    named = GRPOConfig(output_dir=str(tmp_path / "mine"))
    assert with_run_folder(named, "grpo", "SearchQA-v0", tmp_path) is named
    assert not (tmp_path / "mine").exists()  # made by the run, as before
    first = with_run_folder(GRPOConfig(), "grpo", "SearchQA-v0", tmp_path)
    second = with_run_folder(SFTConfig(), "sft", "WebShop-v0", tmp_path)
    assert first.output_dir == str(tmp_path / "grpo-SearchQA-v0-1") and first.credit == "grpo"
    assert second.output_dir == str(tmp_path / "sft-WebShop-v0-1")


def test_resume_needs_a_named_folder():
    with pytest.raises(ValueError, match=r"GRPOConfig.output_dir must be the folder of the run to continue"):
        GRPOConfig(resume=True)
    with pytest.raises(ValueError, match=r"SFTConfig.output_dir must be the folder of the run to continue"):
        SFTConfig(resume=True)


def test_runs_with_default_settings_never_share_a_folder(tmp_path, tiny_model_path, monkeypatch, capsys):
    """Regression (issue 26): every rule wrote to runs/grpo, so a TASPO run's config.json sat over
    GRPO's checkpoints (and, once refused, the second default run could not start at all)."""
    monkeypatch.chdir(tmp_path)
    settings = dict(num_groups=1, group_size=2, max_new_tokens=4, env_kwargs={"max_turns": 1}, eval_episodes=1)
    settings |= dict(save_every=0, progress=False, tensorboard=False)
    folders = []
    for agent_class in (GRPOAgent, TASPOAgent, GRPOAgent):
        agent = agent_class(model=str(tiny_model_path), env="SearchQA-v0", config=GRPOConfig(**settings))
        try:
            agent.learn(1, plot=False)
        finally:
            agent.close()
        folders.append(agent.output_dir)
    runs = Path("runs")  # relative to the working directory, as output_dir is
    assert folders == [runs / "grpo-SearchQA-v0-1", runs / "taspo-SearchQA-v0-1", runs / "grpo-SearchQA-v0-2"]
    assert all((folder / "metrics.jsonl").is_file() for folder in folders)
    printed = [line for line in capsys.readouterr().out.splitlines() if "this run writes to" in line]
    assert printed == [f"GRPOConfig: this run writes to {folder}" for folder in folders]


def test_agents_runs_moves_every_new_run_folder(tmp_path, monkeypatch):
    from agents.runs.folders import RUNS_ENV, run_folders_under, runs_root

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(RUNS_ENV, raising=False)
    assert runs_root() == Path("runs")
    elsewhere = tmp_path / "big-disk" / "runs"
    monkeypatch.setenv(RUNS_ENV, str(elsewhere))
    folder = new_run_folder("grpo-SearchQA-v0")
    assert folder == elsewhere / "grpo-SearchQA-v0-1" and not (tmp_path / "runs").exists()
    (folder / "metrics.jsonl").write_text("")
    assert run_folders_under() == [folder]


def test_folder_size_counts_files_in_the_unit_that_reads_best(tmp_path):
    from agents.runs.folders import folder_size

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "weights.bin").write_bytes(bytes(1536))
    (tmp_path / "link").symlink_to(tmp_path / "a" / "weights.bin")  # not counted twice
    assert folder_size(tmp_path) == "1.5 kB"
    assert folder_size(tmp_path / "a" / "missing") == "0 B"
