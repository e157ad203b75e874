"""ALFWorld-v0's arguments: each one checked when the env is made, the error naming it."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the envs)

BAD_ARGUMENTS = [
    ("generator_seed", -1, ValueError, "generator_seed must be an integer >= 0, got -1"),
    ("generator_seed", "0", TypeError, "generator_seed must be an integer"),
    ("num_generated_games", "8", TypeError, "num_generated_games must be an integer >= 1, got '8'"),
    ("num_generated_games", 0, ValueError, "num_generated_games must be an integer >= 1"),
    ("max_turns", 2.7, TypeError, "max_turns must be an integer >= 1, got 2.7"),
    ("max_turns", "50", TypeError, "max_turns must be an integer"),
    ("translation_cache_size", -1, ValueError, "translation_cache_size must be an integer >= 0"),
    ("translation_cache_size", "32", TypeError, "translation_cache_size must be an integer"),
    ("planner_time_limit_s", 0, ValueError, "planner_time_limit_s must be a finite number > 0"),
    ("planner_time_limit_s", "20", TypeError, "planner_time_limit_s must be a finite number"),
    ("planner_memory_limit_mb", 16, ValueError, "planner_memory_limit_mb must be an integer >= 64"),
    ("planner_memory_limit_mb", 1024.0, TypeError, "planner_memory_limit_mb must be an integer"),
    ("reward_on_win", "10", TypeError, "reward_on_win must be a finite number"),
    ("reward_on_win", float("inf"), ValueError, "reward_on_win must be a finite number"),
    ("expert_plan", "yes", TypeError, "expert_plan must be True or False"),
    ("prefetch", 1, TypeError, "prefetch must be True or False"),
    ("split", "test", ValueError, "split must be one of"),
    ("source", "web", ValueError, "source must be one of"),
    ("task_types", 1.5, TypeError, "task_types: expected task type names or ids 1-6"),
    ("task_types", [7], ValueError, "task_types: unknown task type 7"),
    ("cache_dir", 3, TypeError, "cache_dir must be a path"),
    ("data_path", 3, TypeError, "data_path must be a path"),
    ("action_format", "json", ValueError, "action_format must be one of"),
    ("render_mode", "rgb_array", ValueError, "render_mode must be one of"),
]


@pytest.mark.filterwarnings("ignore:.*render_mode")  # gym.make warns before the env checks
@pytest.mark.parametrize(
    ("name", "value", "error", "message"), BAD_ARGUMENTS, ids=[f"{a[0]}={a[1]!r}" for a in BAD_ARGUMENTS]
)
def test_a_bad_argument_fails_at_construction_naming_it(
    tmp_path: Path, name: str, value: object, error: type[Exception], message: str
) -> None:
    kwargs = {"cache_dir": tmp_path / "cache", name: value}
    subject = f"ALFWorldEnv.{message}" if " must be " in message else f"ALFWorldEnv: {message}"  # checks' shape
    with pytest.raises(error, match=re.escape(subject)):
        gym.make("ALFWorld-v0", **kwargs)
    assert not (tmp_path / "cache").exists()  # no cache folder for an env that was never made


def test_good_arguments_are_normalised(tmp_path: Path) -> None:
    env = gym.make(
        "ALFWorld-v0",
        cache_dir=str(tmp_path),
        generator_seed=np.int64(4),
        num_generated_games=np.int32(3),
        max_turns=np.int64(7),
        planner_time_limit_s=np.float32(12),
        planner_memory_limit_mb=np.int64(512),
        reward_on_win=10,
        task_types=[np.int64(1), "look_at_obj_in_light"],
        split="valid_seen",
    )
    unwrapped = env.unwrapped
    assert unwrapped.max_turns == 7 and type(unwrapped.max_turns) is int
    assert unwrapped.reward_on_win == 10.0 and type(unwrapped.reward_on_win) is float
    assert unwrapped.task_types == ("pick_and_place_simple", "look_at_obj_in_light")
    assert len(unwrapped.task_ids) == 3 and unwrapped._generated.seed == 4 + 1_000_003  # valid_seen draws its own pool
    assert unwrapped._generated.planner_limits.time_limit_s == 12.0
    assert not any(tmp_path.iterdir())  # games are written on first use only
    env.close()


def test_source_and_data_path_must_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="ALFWorldEnv: data_path needs source='data'"):
        gym.make("ALFWorld-v0", source="generated", data_path=tmp_path)
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    with pytest.raises(ValueError, match=r"ALFWorldEnv: source='data' needs data_path or \$ALFWORLD_DATA"):
        gym.make("ALFWorld-v0", source="data")
    monkeypatch.setenv("ALFWORLD_DATA", "")  # empty means not given
    assert gym.make("ALFWorld-v0", cache_dir=tmp_path).unwrapped.source == "generated"
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))  # no json_2.1.1: not data, unless asked for
    assert gym.make("ALFWorld-v0", cache_dir=tmp_path).unwrapped.source == "generated"
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        gym.make("ALFWorld-v0", source="data")


def test_a_pool_is_verified_with_a_margin_over_its_work(tmp_path: Path) -> None:
    """A limit near a verification's real cost would let timing noise pick the games: the pool's
    verifications never run under less than MIN_VERIFICATION_TIME_S (a tighter env limit is the
    replanner's alone), and a pool asked for less names the bound."""
    from agentenvs.alfworld.generator import MIN_VERIFICATION_TIME_S, GeneratedGames
    from agentenvs.alfworld.verifier import PlannerLimits

    env = gym.make("ALFWorld-v0", cache_dir=str(tmp_path), num_generated_games=2, planner_time_limit_s=0.05)
    assert env.unwrapped._generated.planner_limits.time_limit_s == MIN_VERIFICATION_TIME_S
    assert env.unwrapped._planner_limits[0] == 0.05
    with pytest.raises(ValueError, match=r"planner_limits.time_limit_s must be >= 10 CPU seconds .* got 0.5"):
        GeneratedGames(count=2, cache_dir=str(tmp_path), planner_limits=PlannerLimits(time_limit_s=0.5))
