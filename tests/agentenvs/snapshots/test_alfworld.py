"""ALFWorld-v0 snapshots (a replay of the commands): exact, independent, picklable; forged ones get the truth."""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from tests.support.snapshots import check_snapshot_sequences

pytest.importorskip("textworld", reason="ALFWorld needs the alfworld extra (see scripts/setup.sh)")


def _make(**kwargs: Any) -> gym.Env:
    return gym.make("ALFWorld-v0", num_generated_games=3, prefetch=False, privileged=True, max_turns=12, **kwargs)


def _action(rng: np.random.Generator, env: gym.Env, info: dict[str, Any]) -> str:
    """The walkthrough's command while there is one (so that some episodes are won), else random."""
    draw = rng.random()
    if draw < 0.5:
        return env.unwrapped.expert_action() or "look"
    if draw < 0.55:
        return "fly to the moon"  # inadmissible: changes nothing in the game
    actions = info["admissible_actions"]
    return actions[int(rng.integers(len(actions)))]


def test_restore_replays_random_sequences_exactly_and_independently() -> None:
    stats = check_snapshot_sequences(_make, _action, sequences=15, seed=0, max_prefix=4, max_suffix=3)
    assert stats.sequences == 15


def test_plans_made_from_states_are_made_again_by_the_replay() -> None:
    # With expert_plan=True a privileged env plans off the walkthrough at every info: the replay
    # makes the same plans at the same states, so the infos after a restore are the episode's.
    stats = check_snapshot_sequences(
        lambda: _make(expert_plan=True), _action, sequences=4, seed=2, max_prefix=4, max_suffix=3
    )
    assert stats.sequences == 4


@pytest.mark.exhaustive  # ~40 min on 2 cores: AGENTENVS_EXHAUSTIVE=1 pytest tests/agentenvs/snapshots
def test_restore_replays_1000_random_sequences_exactly_and_independently() -> None:
    stats = check_snapshot_sequences(_make, _action, sequences=1000, seed=1, max_prefix=5, max_suffix=3)
    assert stats.sequences == 1000
    assert stats.ended_in_prefix > 5 and stats.ended_in_suffix > 5 and stats.won > 10


def test_a_forged_snapshot_gets_the_truth_and_a_default_one_holds_no_walkthrough() -> None:
    env = _make()
    _, info = env.reset(seed=0)
    walkthrough = info["privileged"]["expert_plan"]
    default = gym.make("ALFWorld-v0", num_generated_games=3, prefetch=False, max_turns=50)
    default.reset(seed=0)
    text = default.unwrapped.snapshot().to_json()
    assert walkthrough and not any(command in text for command in walkthrough)
    # The winning plan but one command, then a forged teleport: the replay reports what the game does.
    forged = pickle.loads(pickle.dumps(env.unwrapped.snapshot()))
    object.__setattr__(forged, "actions", (*walkthrough[:-1], "teleport to the moon"))
    observation, restored = default.unwrapped.restore(forged)
    assert not restored["won"] and not restored["action_valid"] and "privileged" not in restored
    assert "expert_action" not in restored and "expert_plan" not in str(restored)
    _, reward, terminated, _, won = default.step(walkthrough[-1])
    assert reward == 1.0 and terminated and won["won"]  # the real last command wins, as in the game
    env.close()
    default.close()


def test_a_snapshot_after_leaving_the_walkthrough_restores() -> None:
    # Leaving the plan used to keep the old plan position with no plan: a snapshot its own env refused.
    env = _make()
    _, info = env.reset(seed=0)
    env.step(info["expert_action"])
    _, _, _, _, info = env.step("look")  # off the walkthrough
    assert info["privileged"]["expert_plan"] is None
    snapshot = env.unwrapped.snapshot()
    assert env.unwrapped.restore(snapshot)[1] == info
    env.close()
