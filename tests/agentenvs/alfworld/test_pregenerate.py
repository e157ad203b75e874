"""``python -m agentenvs pregenerate ALFWorld-v0``: fills the cache the env then reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.__main__ import main

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_pregenerate_cli_fills_the_cache_the_env_reads(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "agentenvs", "pregenerate", "ALFWorld-v0", "--count", "3", "--seed", "2"]
    command += ["--workers", "2", "--cache-dir", str(tmp_path), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, env=dict(os.environ), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "3 games in" in done.stdout and "3 generated now, 0 already there" in done.stdout
    assert "rejected draws: 0" in done.stdout
    assert len(list(tmp_path.rglob("game.tw-pddl"))) == 3

    env = gym.make("ALFWorld-v0", num_generated_games=3, generator_seed=2, cache_dir=tmp_path, privileged=True)
    for task_id in env.unwrapped.task_ids:
        _, info = env.reset(options={"task_id": task_id})
        assert info["expert_action"] in info["admissible_actions"]
    assert env.unwrapped._generated._planner is None  # every game was there: no planner process
    env.close()


def test_pregenerate_again_generates_nothing_and_bad_arguments_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pregenerate", "ALFWorld-v0", "--count", "1", "--cache-dir", str(tmp_path), "--quiet"]) == 0
    assert "1 generated now" in capsys.readouterr().out
    assert main(["pregenerate", "ALFWorld-v0", "--count", "1", "--cache-dir", str(tmp_path), "--quiet"]) == 0
    assert "0 generated now, 1 already there" in capsys.readouterr().out
    for bad, message in (
        (["--seed", "-1"], "seed must be an integer >= 0"),
        (["--workers", "0"], "--workers must be >= 1"),
        (["--time-limit", "0"], "time_limit_s must be a finite number > 0"),
        (["--count", "x"], "Error parsing --count"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["pregenerate", "ALFWorld-v0", "--cache-dir", str(tmp_path), *bad])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["pregenerate", "WebShop-v0"])
    assert "invalid choice" in capsys.readouterr().err
