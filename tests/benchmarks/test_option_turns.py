"""Option-turn accuracy: hand-built episodes, and the env's expert on the tuning set (every click right)."""

import sys
from pathlib import Path

import gymnasium as gym

from agentenvs.core.trajectory import Trajectory, TrajectoryGroup, Turn, write_jsonl

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import option_turns  # noqa: E402

TUNING = {"results_per_page": 5, "observation_mode": "text_compact", "max_goal_options": 1, "split": "test"}


def episode(task_id: str, steps: list[tuple[str, str, bool]]) -> Trajectory:
    turns = [Turn("", "", action, None, 0.0, valid, {"page": page}) for action, page, valid in steps]
    return Trajectory(task_id, 0, turns, False, 0.0)


def test_only_valid_value_clicks_on_a_product_page_count():
    steps = [
        ("click[blue]", "search", True),  # on the search page: not an option turn
        ("search[shirt]", "results", True),
        ("click[B01]", "item", True),  # the product click leaves the results page
        ("click[Description]", "sub", True),  # a button, not a value
        ("click[< Prev]", "item", True),
        ("click[XL]", "item", False),  # invalid: not counted
        ("click[Blue]", "item", True),  # right (case-insensitive)
        ("click[red]", "item", True),  # wrong
        ("click[Buy Now]", "done", True),
    ]
    assert option_turns.option_values(episode("3", steps)) == ["Blue", "red"]
    counts = option_turns.count_option_clicks([episode("3", steps)], lambda task_id: ["blue"])
    assert counts == option_turns.OptionClicks(clicks=2, right=1)
    assert counts.accuracy == 0.5
    assert option_turns.OptionClicks(0, 0).accuracy is None


def test_the_expert_picks_the_goals_value_on_every_option_turn(tmp_path):
    env = gym.make("WebShop-v0", **TUNING, max_turns=8)
    shop = env.unwrapped
    episodes = []
    for task_id in list(shop.task_ids)[:12]:
        env.reset(options={"task_id": task_id})
        turns, done = [], False
        while not done:
            action = shop.expert_action()
            _, reward, terminated, truncated, info = env.step(action)
            turns.append(Turn("", "", action, None, float(reward), bool(info.get("valid", True)), dict(info)))
            done = terminated or truncated
        episodes.append(Trajectory(task_id, 0, turns, bool(info.get("won")), float(reward)))
    env.close()
    (tmp_path / "trajectories").mkdir()
    groups = [TrajectoryGroup(trajectory.task_id, 0, [trajectory]) for trajectory in episodes]
    write_jsonl(tmp_path / "trajectories" / "eval_step_8.jsonl", groups)
    counts = option_turns.run_option_clicks(tmp_path, option_turns.webshop_goal_options(TUNING))
    assert list(counts) == [8]
    assert counts[8].clicks >= 3  # most one-option goals need a click
    assert counts[8].right == counts[8].clicks
