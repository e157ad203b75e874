"""The snapshot property every env must have, checked on seeded random action sequences.

One sequence: env ``a`` is reset (seeded) and plays a random prefix; its snapshot goes through a
pickle round trip (as between processes); ``a`` plays a random suffix, recording every step.
Env ``b`` (built alike) restores the snapshot and plays the suffix; then ``a`` restores it too and
both play the suffix again, interleaved. Every replay must give the recorded observations, rewards,
flags and infos (``won`` included), so a restore is exact and two envs restored from one snapshot
do not share state; the ``(observation, info)`` a restore returns must be the prefix's last; and a
seedless reset after it must draw the same task on both (the generator is restored too).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

Step = tuple[str, float, bool, bool, dict[str, Any]]
ActionMaker = Callable[[np.random.Generator, gym.Env, dict[str, Any]], str]
"""``(rng, env, last info) -> action`` (the env to ask its expert, so that some episodes are won)."""


@dataclass
class SequenceStats:
    """What the sequences covered (so a test can tell it exercised the ends of episodes too)."""

    sequences: int = 0
    steps: int = 0
    ended_in_prefix: int = 0
    ended_in_suffix: int = 0
    won: int = 0


def _play(env: gym.Env, actions: list[str]) -> list[Step]:
    steps: list[Step] = []
    for action in actions:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return steps


def _random_actions(
    env: gym.Env, make_action: ActionMaker, rng: np.random.Generator, info: dict[str, Any], count: int
) -> tuple[list[str], list[Step], dict[str, Any], str]:
    """Plays up to ``count`` random actions on ``env``; returns them, their steps, the last info and observation."""
    actions: list[str] = []
    steps: list[Step] = []
    observation = ""
    for _ in range(count):
        action = make_action(rng, env, info)
        actions.append(action)
        steps.append(env.step(action))
        observation, info = steps[-1][0], steps[-1][4]
        if steps[-1][2] or steps[-1][3]:
            break
    return actions, steps, info, observation


def check_snapshot_sequences(
    make_env: Callable[[], gym.Env],
    make_action: ActionMaker,
    *,
    sequences: int,
    seed: int,
    max_prefix: int,
    max_suffix: int,
) -> SequenceStats:
    """Checks ``sequences`` random sequences (see the module docstring); returns what they covered."""
    rng = np.random.default_rng(seed)
    a, b = make_env(), make_env()
    b.reset(seed=seed)  # gym.make's OrderEnforcing wants one reset before any step; restore is not one
    stats = SequenceStats()
    try:
        for number in range(sequences):
            observation, info = a.reset(seed=int(rng.integers(1 << 30)))
            _, prefix, last_info, last_observation = _random_actions(
                a, make_action, rng, info, int(rng.integers(0, max_prefix + 1))
            )
            if prefix:
                observation, info = last_observation, last_info
            snapshot = pickle.loads(pickle.dumps(a.unwrapped.snapshot()))
            ended = bool(prefix) and (prefix[-1][2] or prefix[-1][3])
            stats.ended_in_prefix += ended
            suffix_actions: list[str] = []
            recorded: list[Step] = []
            if not ended:
                suffix_actions, recorded, _, _ = _random_actions(
                    a, make_action, rng, info, int(rng.integers(1, max_suffix + 1))
                )
                stats.ended_in_suffix += bool(recorded[-1][2] or recorded[-1][3])
            stats.won += bool((recorded or prefix or [("", 0.0, False, False, {"won": False})])[-1][4]["won"])
            where = f"sequence {number}"
            assert b.unwrapped.restore(snapshot) == (observation, info), where
            assert _play(b, suffix_actions) == recorded, where
            assert a.unwrapped.restore(snapshot) == (observation, info), where
            assert b.unwrapped.restore(snapshot) == (observation, info), where
            interleaved: tuple[list[Step], list[Step]] = ([], [])
            for action in suffix_actions:  # stepping one must not move the other
                for env, steps in zip((a, b), interleaved, strict=True):
                    steps.append(env.step(action))
            assert interleaved[0] == recorded and interleaved[1] == recorded, where
            if ended:
                for env in (a, b):
                    try:
                        env.step("look")
                    except gym.error.ResetNeeded:
                        pass
                    else:
                        raise AssertionError(f"{where}: a restored finished episode accepted a step")
            assert a.reset()[1]["task_id"] == b.reset()[1]["task_id"], where  # the generator came back too
            stats.sequences += 1
            stats.steps += len(prefix) + 3 * len(recorded)
    finally:
        a.close()
        b.close()
    return stats
