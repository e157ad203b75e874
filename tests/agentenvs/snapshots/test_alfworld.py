"""ALFWorld-v0 snapshots (a replay of the admissible commands): exact, independent, picklable; bad ones refused."""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.alfworld.env import ALFWorldWorld
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
        return "fly to the moon"  # inadmissible: changes nothing, not replayed
    actions = info["admissible_actions"]
    return actions[int(rng.integers(len(actions)))]


def test_restore_replays_random_sequences_exactly_and_independently() -> None:
    stats = check_snapshot_sequences(_make, _action, sequences=15, seed=0, max_prefix=4, max_suffix=3)
    assert stats.sequences == 15


def test_a_plan_made_from_a_state_comes_back_with_the_snapshot() -> None:
    # With expert_plan=True the plans made off the walkthrough are part of the state: a replay
    # would make its plans at other states, so the snapshot keeps the plan as it was.
    stats = check_snapshot_sequences(
        lambda: _make(expert_plan=True), _action, sequences=4, seed=2, max_prefix=4, max_suffix=3
    )
    assert stats.sequences == 4


@pytest.mark.exhaustive  # ~40 min on 2 cores: AGENTENVS_EXHAUSTIVE=1 pytest tests/agentenvs/snapshots
def test_restore_replays_1000_random_sequences_exactly_and_independently() -> None:
    stats = check_snapshot_sequences(_make, _action, sequences=1000, seed=1, max_prefix=5, max_suffix=3)
    assert stats.sequences == 1000
    assert stats.ended_in_prefix > 5 and stats.ended_in_suffix > 5 and stats.won > 10


def test_a_forged_command_is_refused_and_the_episode_is_replayed_back() -> None:
    env = _make()
    observation, info = env.reset(seed=0)
    command = info["admissible_actions"][0]
    observation, _, _, _, info = env.step(command)
    snapshot = env.unwrapped.snapshot()
    assert isinstance(snapshot.world, ALFWorldWorld) and snapshot.world.commands == (command,)
    forged = pickle.loads(pickle.dumps(snapshot))
    object.__setattr__(forged, "world", ALFWorldWorld((command, "teleport to the moon")))
    with pytest.raises(ValueError, match=r"ALFWorldWorld.commands\[1\] must be admissible"):
        env.unwrapped.restore(forged)
    assert env.unwrapped.snapshot() == snapshot  # the env's own episode is back
    assert env.step(command)[4]["turn"] == 2
    object.__setattr__(forged, "world", ALFWorldWorld((command,), plan=None, plan_position=3))
    with pytest.raises(ValueError, match="ALFWorldWorld.plan_position must be an index into plan, got 3"):
        env.unwrapped.restore(forged)
    env.close()


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
