"""The bounded planner process: limits stop a planner that hangs, and it works where multiprocessing cannot."""

from __future__ import annotations

import json
import sys
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
        # Planning on the whole problem is the search that hung reset (minutes of CPU, gigabytes):
        # it spends its 3 CPU seconds however loaded the machine is.
        verdict = planner.verify(game, game)
        assert verdict.walkthrough is None and verdict.exceeded_limit and not verdict.wall_clock
        assert "time limit (3 s of CPU)" in verdict.reason
        assert verdict.seconds >= 3.0  # it waited for the limit (no upper bound: shared CPUs are slow)
        # The killed child is replaced; the reduced problem needs a fraction of a CPU second,
        # verified here under the default limits so that no clock can decide the verdict.
        planner.limits = PlannerLimits(memory_limit_mb=4096)
        verdict = planner.verify(game, planning)
    assert verdict.walkthrough and not verdict.exceeded_limit and verdict.reason == ""
    assert sum(c.startswith("take ladle") for c in verdict.walkthrough) == 2


def _fake_child(tmp_path: Path, answer_after: str) -> list[str]:
    """A child speaking the planner's protocol that sleeps (uses no CPU) before it answers."""
    script = tmp_path / "fake_planner.py"
    script.write_text(
        "import json, sys, time\n"
        'print(json.dumps({"ready": True}), flush=True)\n'
        "for line in sys.stdin:\n"
        f"    {answer_after}\n"
        '    print(json.dumps({"walkthrough": ["look"], "reason": "", "peak_rss_mb": None}), flush=True)\n'
    )
    return [sys.executable, str(script)]


def test_a_child_starved_of_cpu_is_not_rejected_by_the_wall_clock(tmp_path: Path) -> None:
    # As on a loaded machine: the child gets no CPU for longer than its time limit, then answers.
    # A wall-clock limit rejected this game; the CPU-time limit waits, as the child did no work.
    command = _fake_child(tmp_path, "time.sleep(1.5)")
    with PlannerProcess(PlannerLimits(time_limit_s=0.5), command=command) as planner:
        verdict = planner.verify("game.tw-pddl", "planning.tw-pddl")
    assert verdict.walkthrough == ["look"] and not verdict.exceeded_limit and verdict.seconds >= 1.5


def test_the_wall_clock_safety_net_stops_a_child_that_makes_no_progress(tmp_path: Path) -> None:
    command = _fake_child(tmp_path, "time.sleep(3600)")
    limits = PlannerLimits(time_limit_s=0.2, wall_time_limit_s=1.0)
    with PlannerProcess(limits, command=command) as planner:
        verdict = planner.verify("game.tw-pddl", "planning.tw-pddl")
        assert verdict.walkthrough is None and verdict.exceeded_limit and verdict.wall_clock
    assert verdict.reason == "exceeded the wall-clock safety net (1 s)"


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
    with pytest.raises(ValueError, match="PlannerLimits.wall_time_limit_s must be a finite number >= 20, got 10.0"):
        PlannerLimits(time_limit_s=20.0, wall_time_limit_s=10.0)
    assert PlannerLimits(time_limit_s=2.0).wall_deadline_s == 60.0
    for value in (32, 512.0, "1024", True):
        with pytest.raises((TypeError, ValueError), match="PlannerLimits.memory_limit_mb"):
            PlannerLimits(memory_limit_mb=value)
    assert PlannerLimits(time_limit_s=np.float32(2), memory_limit_mb=np.int64(100)) == PlannerLimits(2.0, 100)


def test_games_generate_inside_async_vector_env_workers(tmp_path: Path) -> None:
    # AsyncVectorEnv workers are daemonic: no multiprocessing children, but subprocesses.
    envs = agentenvs.make_group_vec(
        "ALFWorld-v0",
        1,
        2,
        seed=0,
        vectorization_mode="async",
        num_generated_games=4,
        cache_dir=tmp_path,
        privileged=True,
    )
    try:
        observations, info = envs.reset()
        assert info["task_id"][0] == info["task_id"][1] and "Your task is to:" in observations[0]
        _, _, _, _, info = envs.step([str(a) for a in info["expert_action"]])
        assert all(info["action_valid"])
    finally:
        envs.close()
    assert list(tmp_path.rglob("game.tw-pddl"))
