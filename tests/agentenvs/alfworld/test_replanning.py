"""ALFWorld plans from any state (``expert_plan=True``): planned from states reached by random
admissible commands, the expert then wins; plans are followed and cached, not made again; where
there is no plan, ``expert_plan_status`` says why."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.alfworld.replanning import PlanResult, Replanner, goal_needs
from agentenvs.alfworld.verifier import Verdict


def _make(**kwargs: Any) -> gym.Env:
    settings = {"num_generated_games": 6, "prefetch": False, "privileged": True, "max_turns": 40, **kwargs}
    return gym.make("ALFWorld-v0", **settings)


def _plans_made(env: gym.Env) -> int:
    """Plans the env made (one per state planned from: its per-state cache; a monkeypatch would miss
    the env's own import of the planner module under pytest's importlib import mode)."""
    return len(env.unwrapped._plans)


def test_the_expert_wins_from_states_reached_by_random_commands() -> None:
    env = _make(expert_plan=True)
    rng = np.random.default_rng(0)
    for episode in range(6):
        _, info = env.reset(seed=episode)
        for _ in range(int(rng.integers(2, 7))):  # random admissible commands: most leave the walkthrough
            admissible = info["admissible_actions"]
            _, _, terminated, _, info = env.step(admissible[int(rng.integers(len(admissible)))])
            assert not terminated
        privileged = info["privileged"]
        assert privileged["expert_plan_status"] in ("walkthrough", "planned", "planned on the whole state")
        plan, before = privileged["expert_plan"], _plans_made(env)
        assert plan and info["expert_action"] == plan[0]
        for number, command in enumerate(plan, start=1):
            assert env.unwrapped.expert_action() == command
            _, _, terminated, _, info = env.step(command)
            assert info["privileged"]["expert_plan"] == plan[number:]  # followed, not planned again
        assert terminated and info["won"] and info["privileged"]["expert_plan_status"] == "won"
        assert _plans_made(env) == before
    env.close()


def test_a_plan_is_cached_per_state() -> None:
    env = _make(expert_plan=True)
    _, info = env.reset(seed=0)
    stray = next(a for a in info["admissible_actions"] if a != info["expert_action"] and a.startswith("go to"))
    _, _, _, _, info = env.step(stray)
    assert info["privileged"]["expert_plan_status"] == "planned" and _plans_made(env) == 1
    _, _, _, _, info = env.step("look")  # a new state (the location is now "checked"): planned
    plan = info["privileged"]["expert_plan"]
    assert _plans_made(env) == 2 and plan[0] != "look"
    _, _, _, _, info = env.step("look")  # leaves the plan, not the state: that state's plan, not planned again
    assert info["privileged"]["expert_plan"] == plan and _plans_made(env) == 2
    env.close()


def test_without_expert_plan_the_status_says_it_was_not_planned() -> None:
    env = _make()
    _, info = env.reset(seed=0)
    assert info["privileged"]["expert_plan_status"] == "walkthrough"
    stray = next(a for a in info["admissible_actions"] if a != info["expert_action"] and a.startswith("go to"))
    _, _, _, _, info = env.step(stray)
    assert info["privileged"]["expert_plan"] is None and info["expert_action"] is None
    assert info["privileged"]["expert_plan_status"] == "not planned: off the walkthrough (expert_plan=False)"
    env.close()


def test_a_planner_limit_is_named() -> None:
    _make().reset(seed=0)  # makes the game with the default limits (cached for the next env)
    env = _make(expert_plan=True, planner_time_limit_s=1e-3)  # less CPU than any plan takes
    _, info = env.reset(seed=0)
    stray = next(a for a in info["admissible_actions"] if a != info["expert_action"] and a.startswith("go to"))
    _, _, _, _, info = env.step(stray)
    assert info["privileged"]["expert_plan"] is None and info["expert_action"] is None
    assert info["privileged"]["expert_plan_status"].startswith("planner limit: exceeded the")
    env.close()


class _ScriptedPlanner:
    """A PlannerProcess stand-in that answers with the given verdicts, in turn."""

    def __init__(self, *verdicts: Verdict) -> None:
        self.verdicts = list(verdicts)
        self.requests: list[tuple[str, str]] = []

    def verify(self, game: str, planning: str) -> Verdict:
        self.requests.append((game, planning))
        return self.verdicts.pop(0)

    def close(self) -> None:
        pass


GAME = {
    "pddl_domain": "(define (domain alfred))",
    "grammar": "{}",
    "pddl_problem": "(define (problem p) (:objects agent1 - agent l1 - location MugType - otype) (:init (x)) (:goal (and (objectType ?o MugType) (isHot ?o))))",
}


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([Verdict(["go to a"], "", False, 0.1, None)], PlanResult(("go to a",), "planned")),
        (
            [Verdict(None, "the planner found no plan", False, 0.1, None), Verdict(["go to b"], "", False, 0.1, None)],
            PlanResult(("go to b",), "planned on the whole state"),
        ),
        (
            [Verdict(None, "the planner found no plan", False, 0.1, None)] * 2,
            PlanResult(None, "unsolvable: the planner found no plan"),
        ),
        (
            [Verdict(None, "exceeded the memory limit (64 MiB)", True, 0.1, None)],
            PlanResult(None, "planner limit: exceeded the memory limit (64 MiB)"),
        ),
    ],
)
def test_the_replanner_says_where_a_plan_comes_from(verdicts: list[Verdict], expected: PlanResult) -> None:
    planner = _ScriptedPlanner(*verdicts)
    replanner = Replanner(planner)  # type: ignore[arg-type]
    assert replanner.plan(GAME, [("atlocation", ("agent1", "l1"))], "(isHot ?o)") == expected
    replanner.close()


def test_goal_needs_names_the_goal_types_and_appliances() -> None:
    assert goal_needs("(and (objectType ?o MugType) (receptacleType ?r CoffeeMachineType) (isCool ?o))") == (
        {"mugtype", "coffeemachinetype"},
        {"fridgetype"},
    )
