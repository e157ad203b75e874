"""Generated games: valid game.tw-pddl files, deterministic, all solvable and won by their walkthrough."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.alfworld.data import TASK_TYPES
from agentenvs.alfworld.generator import GeneratedGames, generate_game


def test_generation_is_deterministic_and_in_the_official_format() -> None:
    game = generate_game(3, "pick_heat_then_place_in_recep")
    assert game == generate_game(3, "pick_heat_then_place_in_recep")
    assert game != generate_game(4, "pick_heat_then_place_in_recep")
    assert set(game) == {"pddl_domain", "grammar", "pddl_problem"}
    assert "(define (domain alfred)" in game["pddl_domain"]
    assert "UNKNOWN GOAL" not in game["grammar"] and "Your task is to: " in game["grammar"]
    assert "(:goal" in game["pddl_problem"] and "MicrowaveType" in game["pddl_problem"]


@pytest.mark.slow
def test_generated_games_are_won_by_their_walkthrough(tmp_path: Path) -> None:
    env = gym.make("ALFWorld-v0", num_generated_games=12, generator_seed=5, cache_dir=tmp_path)
    task_ids = env.unwrapped.task_ids
    assert {env.unwrapped._games[t].task_type for t in task_ids} == set(TASK_TYPES)
    for task_id in task_ids:
        observation, info = env.reset(options={"task_id": task_id})
        assert f"Your task is to: {info['task']}" in observation
        game = json.loads(Path(info["game_file"]).read_text())
        assert game["solvable"] and game["walkthrough"]
        for command in game["walkthrough"]:
            assert command in info["admissible_actions"], (task_id, command)
            _, reward, terminated, _, info = env.step(command)
        assert info["won"] and terminated and reward == 1.0, task_id
    env.close()
    again = GeneratedGames(seed=5, count=12, cache_dir=tmp_path)
    assert all(again.is_ready(t) for t in task_ids)  # cached, keyed by seed and version


def test_default_env_runs_without_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    env = gym.make("ALFWorld-v0", num_generated_games=2, cache_dir=tmp_path)
    assert env.unwrapped.source == "generated"
    observation, info = env.reset(seed=0)
    assert info["task_id"].startswith("generated/") and "Your task is to:" in observation
    env.close()
