"""WebShop-v0 snapshots: exact on random action sequences, independent, picklable; bad ones refused."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import agentenvs  # noqa: F401  (registers the envs)
from tests.support.snapshots import check_snapshot_sequences


def _make() -> gym.Env:
    return gym.make("WebShop-v0", num_products=100, split="all", privileged=True, max_turns=10, cache_index=False)


def _action(rng: np.random.Generator, env: gym.Env, info: dict[str, Any]) -> str:
    """Half the time the expert's (so that some episodes are won), else a random clickable, search or mistake."""
    draw = rng.random()
    if draw < 0.5:
        return env.unwrapped.expert_action() or "click[Buy Now]"
    if draw < 0.55:
        return "click[nothing here]"
    if draw < 0.58:
        return "not an action"
    actions = info["admissible_actions"] or ["search[<query>]"]
    action = actions[int(rng.integers(len(actions)))]
    if action == "search[<query>]" or draw > 0.95:
        words = info["task"].split()
        start = int(rng.integers(len(words)))
        return "search[" + " ".join(words[start : start + int(rng.integers(1, 6))]) + "]"
    return action


def test_restore_replays_1000_random_sequences_exactly_and_independently() -> None:
    stats = check_snapshot_sequences(_make, _action, sequences=1000, seed=0, max_prefix=8, max_suffix=6)
    assert stats.sequences == 1000
    assert stats.ended_in_prefix > 20 and stats.ended_in_suffix > 20 and stats.won > 20  # the ends are covered
