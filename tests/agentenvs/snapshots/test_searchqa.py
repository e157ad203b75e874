"""SearchQA-v0 snapshots: exact on random action sequences, independent, picklable."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import agentenvs  # noqa: F401  (registers the envs)
from tests.support.snapshots import check_snapshot_sequences


def _make(**kwargs: Any) -> gym.Env:
    return gym.make("SearchQA-v0", privileged=True, cache_index=False, **kwargs)


def _action(rng: np.random.Generator, env: gym.Env, info: dict[str, Any]) -> str:
    """The expert's action, a search of some of the question's words, a wrong answer, or no action."""
    draw = rng.random()
    if draw < 0.4:
        return env.unwrapped.expert_action() or "<answer>none</answer>"
    if draw < 0.5:
        return "<answer>" + str(rng.integers(100)) + "</answer>"
    if draw < 0.55:
        return "no tags at all"
    words = info["task"].split()
    start = int(rng.integers(len(words)))
    return "<search>" + " ".join(words[start : start + int(rng.integers(1, 5))]) + "</search>"


def test_restore_replays_1000_random_sequences_exactly_and_independently() -> None:
    stats = check_snapshot_sequences(_make, _action, sequences=1000, seed=0, max_prefix=4, max_suffix=4)
    assert stats.sequences == 1000
    assert stats.ended_in_prefix > 20 and stats.ended_in_suffix > 20 and stats.won > 20


def test_the_initial_search_setting_restores_too() -> None:
    stats = check_snapshot_sequences(
        lambda: _make(initial_search=True, reward="f1"), _action, sequences=100, seed=1, max_prefix=3, max_suffix=3
    )
    assert stats.sequences == 100
