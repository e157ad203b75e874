"""Privileged infos: off by default, StripPrivileged, and recorded through RecordTrajectory and JSON lines."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import agentenvs  # noqa: F401
from agentenvs.core.trajectory import read_jsonl, write_jsonl
from agentenvs.webshop.expert import expert_action
from wrappers.privileged import StripPrivileged
from wrappers.recording import RecordTrajectory

Script = Callable[[gym.Env, dict[str, Any]], str | None]
"""The next action for an env given its last info (None: stop)."""


def _searchqa_script(env: gym.Env, info: dict[str, Any]) -> str | None:
    # no search: its passages state the answer, which is then no longer hidden
    return {0: "no tags", 1: "<answer>nobody in particular</answer>"}.get(info["turn"])


def _webshop_script(env: gym.Env, info: dict[str, Any]) -> str | None:
    # a click the search page refuses: the page (and what it hides) stays as it was
    return "click[nothing here]" if info["turn"] < 2 else None


def _alfworld_script(env: gym.Env, info: dict[str, Any]) -> str | None:
    plan = info["privileged"]["expert_plan"]  # the walkthrough, to the win
    return plan[0] if plan else None


def _secrets(env_id: str, privileged: dict[str, Any]) -> list[str]:
    """Privileged values the env's observations never show along the scripts above."""
    if env_id == "SearchQA-v0":
        return privileged["gold_answers"]
    if env_id == "WebShop-v0":
        return [privileged["target_asin"]]
    return [*(privileged["expert_plan"] or []), privileged["goal"], *privileged["goal_facts"]]


def _alfworld_kwargs(shared_data: Path) -> dict[str, Any]:
    pytest.importorskip("textworld", reason="ALFWorld needs the alfworld extra (see scripts/setup.sh)")
    folder = shared_data / "alfworld"
    if not (folder / "json_2.1.1" / "valid_seen").is_dir():
        pytest.skip(f"ALFWorld games not found in {folder}/json_2.1.1/valid_seen")
    return {"data_path": folder, "split": "eval_in_distribution", "prefetch": False}


CASES = [
    ("SearchQA-v0", _searchqa_script, {}),
    ("WebShop-v0", _webshop_script, {"num_products": 100, "split": "all"}),
    ("ALFWorld-v0", _alfworld_script, None),
]


@pytest.mark.parametrize(("env_id", "script", "kwargs"), CASES, ids=[case[0] for case in CASES])
def test_stripped_and_default_infos_hold_no_privileged_key_and_no_observation_shows_a_secret(
    request: pytest.FixtureRequest, env_id: str, script: Script, kwargs: dict[str, Any] | None
) -> None:
    """Regression (issue 26): ``gym.make`` gave every info the gold answers (privileged was on by default)."""
    if kwargs is None:
        kwargs = _alfworld_kwargs(request.getfixturevalue("shared_data"))
    full = gym.make(env_id, privileged=True, **kwargs)
    stripped = StripPrivileged(gym.make(env_id, privileged=True, **kwargs))
    default = gym.make(env_id, **kwargs)
    assert "privileged" in stripped.stripped_keys
    observation, info = full.reset(seed=2)
    stripped_observation, stripped_info = stripped.reset(seed=2)
    assert default.reset(seed=2) == (stripped_observation, stripped_info)
    infos, steps = [stripped_info], 0
    while True:
        assert stripped_observation == observation  # only the infos change
        for secret in _secrets(env_id, info["privileged"]):
            assert secret.lower() not in observation.lower(), f"{secret!r} shown at turn {info['turn']}"
        action = script(full, info)
        if action is None:
            break
        observation, _, terminated, truncated, info = full.step(action)
        stripped_step = stripped.step(action)
        assert default.step(action) == stripped_step  # a default env's infos are the stripped ones
        stripped_observation, *_, stripped_info = stripped_step
        infos.append(stripped_info)
        steps += 1
        if terminated or truncated:
            break
    assert steps >= 2
    for info in infos:
        assert not stripped.stripped_keys & set(info) and {"task_id", "task", "won"} <= set(info)
    full.close()
    stripped.close()
    default.close()


def test_an_env_s_other_privileged_keys_are_named_and_stripped() -> None:
    from agentenvs.alfworld.env import ALFWorldEnv

    # Regression (issue 26): the game file (its path names the walkthrough's file) survived StripPrivileged.
    assert {"expert_action", "game_file"} <= set(ALFWorldEnv.privileged_info_keys)
    env = StripPrivileged(gym.make("SearchQA-v0", privileged=True))
    assert env.stripped_keys == {"privileged", "gold_answers"}
    env.reset(seed=0)
    *_, info = env.step("<answer>nobody</answer>")
    assert "em" in info and "gold_answers" not in info and "privileged" not in info
    assert StripPrivileged(gym.make("WebShop-v0", num_products=100, split="all")).stripped_keys == {"privileged"}


def test_stripped_under_a_vector_env() -> None:
    envs = SyncVectorEnv(
        [lambda: StripPrivileged(gym.make("SearchQA-v0", privileged=True)) for _ in range(2)],
        autoreset_mode=AutoresetMode.DISABLED,
    )
    _, info = envs.reset(seed=0)
    assert "privileged" not in info and "task_id" in info
    _, _, _, _, info = envs.step(["<answer>x</answer>"] * 2)
    assert "privileged" not in info and "gold_answers" not in info and "em" in info
    envs.close()


def test_recorded_turns_carry_it_through_jsonl(tmp_path: Path) -> None:
    env = RecordTrajectory(gym.make("WebShop-v0", num_products=100, split="all", privileged=True))
    _, info = env.reset(seed=5)
    expected = info["privileged"]
    terminated = False
    while not terminated:
        *_, terminated, _, _ = env.step(expert_action(env.unwrapped.goal, env.unwrapped.page))
    (trajectory,) = env.pop_trajectories()
    assert trajectory.success and all(turn.privileged == expected for turn in trajectory.turns)
    write_jsonl(tmp_path / "t.jsonl", [trajectory])
    (loaded,) = read_jsonl(tmp_path / "t.jsonl")
    assert loaded == trajectory and loaded.turns[-1].privileged == expected

    stripped = RecordTrajectory(StripPrivileged(gym.make("SearchQA-v0", privileged=True)))
    stripped.reset(seed=0)
    stripped.step("<answer>x</answer>")
    assert stripped.pop_trajectories()[0].turns[0].privileged is None
