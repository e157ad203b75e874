"""agentenvs envs through SkyRL-Gym (the real skyrl-gym package): made with ``skyrl_gym.make`` from
dataset rows, an expert wins, invalid output gets the env's feedback, outcomes equal ``gym.make``'s,
privileged info only when asked for."""

from __future__ import annotations

import random
import subprocess
import sys
from typing import Any

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)

skyrl_gym = pytest.importorskip("skyrl_gym", reason="needs the skyrl extra")
from omegaconf import DictConfig  # noqa: E402  (skyrl-gym's dependency)

from agentenvs.integrations import skyrl  # noqa: E402

ENVS = {
    "SearchQA-v0": {},
    "WebShop-v0": {"num_products": 200, "split": "all"},
    "Bifurcation-v0": {},
    "KeyDoor-v0": {},
}


def _make(row: dict[str, Any], config: dict[str, Any] | None = None) -> skyrl.SkyRLTextEnv:
    env_class = skyrl.register()
    extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
    return skyrl_gym.make(env_class, env_config=DictConfig(config or {}), extras=extras)


def _row(env_id: str, index: int = 0, **overrides: Any) -> dict[str, Any]:
    rows = skyrl.dataset_rows(env_id, num_tasks=index + 1, shuffle_seed=0, **ENVS[env_id])
    return {**rows[index], **overrides}


@pytest.mark.parametrize("env_id", list(ENVS))
def test_an_expert_episode_wins_through_skyrl(env_id: str) -> None:
    row = _row(env_id)
    env = _make(row)
    chat, metadata = env.init(row["prompt"])
    assert chat == row["prompt"] and metadata["task_id"] == row["task_id"]
    total, done = 0.0, False
    while not done:
        output = env.step(env.env.unwrapped.expert_action())
        total, done = total + output["reward"], output["done"]
    assert env.get_metrics()["won"] == 1.0 and output["metadata"]["won"] and output["observations"] == []
    assert "privileged" not in output["metadata"]
    env.close()


def test_invalid_output_gets_the_envs_feedback_and_the_turn_counts() -> None:
    row = _row("SearchQA-v0")
    env = _make(row)
    env.init(row["prompt"])
    output = env.step("I am not sure what to do")
    assert not output["done"] and not output["metadata"]["action_valid"]
    assert output["observations"][0]["role"] == "user" and output["observations"][0]["content"]
    assert env.get_metrics()["invalid_actions"] == 1 and output["metadata"]["turn"] == 1


@pytest.mark.parametrize("env_id", list(ENVS))
def test_outcomes_equal_gym_makes_for_the_same_task_and_seed(env_id: str) -> None:
    row = _row(env_id, index=1)
    env = _make(row)
    chat, _ = env.init(row["prompt"])
    plain = gym.make(env_id, **ENVS[env_id])
    observation, info = plain.reset(seed=0, options={"task_id": row["task_id"]})
    assert chat[-1]["content"] == observation
    rng = random.Random(0)
    done = False
    while not done:
        admissible = info["admissible_actions"] or ["<search>capital</search>", "<answer>paris</answer>"]
        action = rng.choice([*admissible, "nonsense"])
        observation, reward, terminated, truncated, info = plain.step(action)
        output = env.step(action)
        done = terminated or truncated
        assert output["reward"] == reward and output["done"] == done
        assert output["observations"] == ([] if done else [{"role": "user", "content": observation}])
        assert output["metadata"]["won"] == info["won"] and output["metadata"]["turn"] == info["turn"]


def test_privileged_info_only_when_the_row_or_config_asks() -> None:
    row = _row("SearchQA-v0")
    default = _make(row)
    assert "privileged" not in default.init(row["prompt"])[1]
    asked = _make({**row, "privileged": True})
    assert "gold_answers" in asked.init(row["prompt"])[1]["privileged"]
    configured = _make(row, {"privileged": True})  # the config's default, overridden by no row column
    assert "privileged" not in configured.init(row["prompt"])[1]  # the row says False: the row wins
    row_without = {key: value for key, value in row.items() if key != "privileged"}
    assert "privileged" in _make(row_without, {"privileged": True}).init(row["prompt"])[1]


def test_the_generators_max_turns_is_the_envs_limit_and_bad_rows_are_named() -> None:
    row = _row("SearchQA-v0")
    env = _make({**row, "max_turns": 2})
    env.init(row["prompt"])
    assert env.max_turns == 2
    env.step("nonsense")
    assert env.step("nonsense")["done"]  # truncated at the generator's limit
    chain = _row("Bifurcation-v0")
    assert _make({**chain, "max_turns": 2}).max_turns == 4  # its length is its own
    with pytest.raises(ValueError, match="task_id"):
        _make({**row, "task_id": "no such task"}).init(row["prompt"])
    with pytest.raises(TypeError, match="SkyRLTextEnv.env_id must be"):
        _make({**row, "env_id": None})


def test_a_parquet_dataset_round_trips_into_envs(tmp_path) -> None:
    import pyarrow.parquet as pq

    path = skyrl.write_dataset("WebShop-v0", tmp_path / "train.parquet", num_tasks=3, **ENVS["WebShop-v0"])
    rows = pq.read_table(path).to_pylist()
    assert [row["env_class"] for row in rows] == ["agentenvs"] * 3
    env = _make(rows[2])
    chat, metadata = env.init(rows[2]["prompt"])
    assert chat == rows[2]["prompt"] and metadata["task_id"] == rows[2]["task_id"]


def test_without_skyrl_gym_the_import_names_the_extra() -> None:
    code = "import sys; sys.modules['skyrl_gym'] = None\nimport agentenvs.integrations.skyrl"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0 and 'pip install "agentenvs[skyrl]"' in result.stderr
