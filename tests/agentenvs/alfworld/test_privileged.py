"""ALFWorld-v0's ``info["privileged"]``: the rest of the walkthrough, the PDDL goal, the task type."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
from gymnasium.wrappers.vector import DictInfoToList

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.alfworld.env import ALFWorldPrivileged, pddl_goal
from agentenvs.core.groups import make_group_vec
from agentenvs.core.privileged import is_json_stable


def _make(alfworld_data: Path, **kwargs):
    return gym.make(
        "ALFWorld-v0", data_path=alfworld_data, split="eval_in_distribution", prefetch=False, privileged=True, **kwargs
    )


def test_the_plan_shrinks_along_the_walkthrough_and_is_empty_on_the_win(alfworld_data: Path) -> None:
    env = _make(alfworld_data, task_types=["pick_two_obj_and_place"])
    observation, info = env.reset(seed=0)
    privileged = info["privileged"]
    with open(info["game_file"], encoding="utf-8") as handle:
        game = json.load(handle)
    assert set(privileged) == set(ALFWorldPrivileged.__annotations__) and is_json_stable(privileged)
    assert privileged["expert_plan"] == game["walkthrough"] and privileged["task_type"] == info["task_type"]
    target = Path(info["game_file"]).parent.parent.name.split("-")[1]  # pick_two_obj_and_place-<Object>-...
    assert (
        f"(objectType ?o1 {target}Type)" in privileged["goal_facts"] and "(not (= ?o1 ?o2))" in privileged["goal_facts"]
    )
    assert (privileged["goal"], privileged["goal_facts"]) == pddl_goal(game["pddl_problem"])
    for number, command in enumerate(game["walkthrough"], start=1):
        assert info["privileged"]["expert_plan"][0] == info["expert_action"] == command
        # the agent never reads its plan or its goal: no observation shows a command still to come
        assert not any(c in observation for c in info["privileged"]["expert_plan"]) and "(" not in observation
        observation, _, terminated, _, info = env.step(command)
        assert info["privileged"]["expert_plan"] == game["walkthrough"][number:]
        assert info["privileged"]["goal_facts"] == privileged["goal_facts"]
    assert terminated and info["won"] and info["privileged"]["expert_plan"] == [] and info["expert_action"] is None
    env.close()


def test_unparsed_output_keeps_the_walkthrough_and_a_stray_command_leaves_it(alfworld_data: Path) -> None:
    env = _make(alfworld_data, action_format="think_action")
    _, info = env.reset(seed=1)
    plan = info["privileged"]["expert_plan"]
    _, _, _, _, info = env.step("no tags here")  # changes nothing in the game: still on the walkthrough
    assert not info["action_valid"] and info["privileged"]["expert_plan"] == plan
    _, _, _, _, info = env.step(f"<think>follow it</think><action>{plan[0]}</action>")
    assert info["privileged"]["expert_plan"] == plan[1:] and info["expert_action"] == plan[1]
    _, _, _, _, info = env.step("<think>look around</think><action>inventory</action>")
    assert info["privileged"]["expert_plan"] is None and info["expert_action"] is None  # not planned here
    assert info["privileged"]["goal_facts"] and info["privileged"]["task_type"] == info["task_type"]
    env.close()


def test_group_members_that_follow_and_stray_merge(alfworld_data: Path) -> None:
    envs = DictInfoToList(
        make_group_vec(
            "ALFWorld-v0",
            num_groups=1,
            group_size=2,
            seed=0,
            data_path=alfworld_data,
            split="eval_in_distribution",
            prefetch=False,
            privileged=True,
        )
    )
    _, infos = envs.reset()
    plan = list(infos[0]["privileged"]["expert_plan"])
    _, _, _, _, infos = envs.step([plan[0], "inventory"])
    assert list(infos[0]["privileged"]["expert_plan"]) == plan[1:] and infos[1]["privileged"]["expert_plan"] is None
    assert infos[0]["privileged"]["goal"] == infos[1]["privileged"]["goal"]
    envs.close()


def test_pddl_goal_reads_literals_under_quantifiers() -> None:
    problem = """(define (problem p) (:domain alfred) (:init (x))
        (:goal (and (exists (?r - receptacle) (exists (?o - object)
            (and (objectType ?o MugType) (isHot ?o) (inReceptacle ?o ?r) (or (not (isCool ?o)) (isClean ?o))))))))"""
    goal, facts = pddl_goal(problem)
    assert goal.startswith("(and (exists (?r - receptacle) (exists (?o - object) (and (objectType ?o MugType)")
    assert facts == [
        "(objectType ?o MugType)",
        "(isHot ?o)",
        "(inReceptacle ?o ?r)",
        "(not (isCool ?o))",
        "(isClean ?o)",
    ]
    assert pddl_goal("(define (problem p) (:init (x)))") == ("", [])
    assert pddl_goal("(define (problem p) (:goal (and (x)") == ("", [])  # unbalanced: nothing
