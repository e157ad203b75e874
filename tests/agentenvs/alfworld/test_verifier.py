"""The bounded planner process: limits stop a planner that hangs, and it works where multiprocessing cannot."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

import agentenvs
from agentenvs.alfworld.data import TASK_TYPES
from agentenvs.alfworld.generator import generate_scene
from agentenvs.alfworld.verifier import PlannerLimits, PlannerProcess

HANGING_TASK = "generated/00221-pick_two_obj_and_place"
"""The default pool's game on whose whole problem TextWorld's planner searches for minutes."""


@pytest.fixture(scope="module")
def hanging_game(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Draw 0 of ``HANGING_TASK``: (the whole game, its reduced planning problem)."""
    task_type = HANGING_TASK.split("-", 1)[1]
    seed = np.random.SeedSequence([0, 221, TASK_TYPES.index(task_type), 0]).generate_state(1)[0]
    scene = generate_scene(int(seed), task_type)
    folder = tmp_path_factory.mktemp("hanging")
    game, planning = folder / "game.tw-pddl", folder / "planning.tw-pddl"
    game.write_text(json.dumps(scene.game()))
    planning.write_text(json.dumps(scene.planning_game()))
    return game, planning


def test_time_limit_rejects_a_planner_that_hangs_and_the_next_game_is_verified(hanging_game) -> None:
    game, planning = hanging_game
    with PlannerProcess(PlannerLimits(time_limit_s=3.0, memory_limit_mb=4096)) as planner:
        # Planning on the whole problem is the search that hung reset (minutes, gigabytes).
        verdict = planner.verify(game, game)
        assert verdict.walkthrough is None and verdict.exceeded_limit
        assert "time limit (3 s)" in verdict.reason
        assert verdict.seconds >= 3.0  # it waited for the limit (no upper bound: shared CPUs are slow)
        # The killed child is replaced; the reduced problem is planned in about a second.
        verdict = planner.verify(game, planning)
    assert verdict.walkthrough and not verdict.exceeded_limit and verdict.reason == ""
    assert sum(c.startswith("take ladle") for c in verdict.walkthrough) == 2


def test_memory_limit_rejects_a_planner_that_grows(hanging_game) -> None:
    game, _ = hanging_game
    start = time.monotonic()
    with PlannerProcess(PlannerLimits(time_limit_s=120.0, memory_limit_mb=64)) as planner:
        verdict = planner.verify(game, game)
    # The search grows by ~10 MB/s: 64 MiB take seconds, far below the time limit.
    assert verdict.walkthrough is None and verdict.exceeded_limit
    assert "memory limit (64 MiB)" in verdict.reason
    assert time.monotonic() - start < 60


def test_a_broken_game_is_rejected_without_killing_the_process(tmp_path: Path, hanging_game) -> None:
    game, planning = hanging_game
    broken = tmp_path / "broken.tw-pddl"
    broken.write_text(json.dumps({"pddl_domain": "(define", "grammar": "{}", "pddl_problem": "("}))
    with PlannerProcess() as planner:
        verdict = planner.verify(broken, broken)
        assert verdict.walkthrough is None and not verdict.exceeded_limit and verdict.reason
        assert planner.verify(game, planning).walkthrough


def test_limits_are_checked() -> None:
    for value in (0, -1.0, float("nan"), "20", None):
        with pytest.raises((TypeError, ValueError), match="PlannerLimits.time_limit_s"):
            PlannerLimits(time_limit_s=value)
    for value in (32, 512.0, "1024", True):
        with pytest.raises((TypeError, ValueError), match="PlannerLimits.memory_limit_mb"):
            PlannerLimits(memory_limit_mb=value)
    assert PlannerLimits(time_limit_s=np.float32(2), memory_limit_mb=np.int64(100)) == PlannerLimits(2.0, 100)


def test_games_generate_inside_async_vector_env_workers(tmp_path: Path) -> None:
    # AsyncVectorEnv workers are daemonic: no multiprocessing children, but subprocesses.
    envs = agentenvs.make_group_vec(
        "ALFWorld-v0", 1, 2, seed=0, vectorization_mode="async", num_generated_games=4, cache_dir=tmp_path
    )
    try:
        observations, info = envs.reset()
        assert info["task_id"][0] == info["task_id"][1] and "Your task is to:" in observations[0]
        _, _, _, _, info = envs.step([str(a) for a in info["expert_action"]])
        assert all(info["action_valid"])
    finally:
        envs.close()
    assert list(tmp_path.rglob("game.tw-pddl"))
