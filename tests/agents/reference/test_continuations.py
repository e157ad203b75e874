"""Playing on from turn starts: restore or replay, the policy's prompts, returns known by hand."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest

from agents.reference.continuations import ContinuationRunner
from agents.reference.expert import ExpertPlayer
from agents.reference.starts import env_has_snapshots, put_at, turn_starts
from agents.reference.values import step_values
from tests.support.privileged import register_letter_hunt
from tests.support.stairs import ENV_ID, RulePolicy, StairsEnv, alternate_at_start, collect_stairs


def runner(policy, *, width=16, env_id=ENV_ID, success_bonus=0.0):
    return ContinuationRunner(policy, env_id, invalid_action_penalty=0.5, success_bonus=success_bonus, width=width)


def test_env_has_snapshots_reads_the_class():
    assert env_has_snapshots(ENV_ID) and not env_has_snapshots("StairsNoSnapshots-v0")
    assert env_has_snapshots("WebShop-v0") and env_has_snapshots("SearchQA-v0")
    # a TextEnv without the snapshot hooks: snapshot() exists (the base's) but would raise
    assert not env_has_snapshots(register_letter_hunt())


def test_put_at_restores_or_replays_to_the_recorded_state(stairs_batch):
    starts = turn_starts(stairs_batch)
    env = gym.make(ENV_ID)
    env.reset(options={"task_id": "stairs-3"})
    StairsEnv.restores = 0
    observation, info = put_at(env, starts[3])  # B's second turn: after 'wait'
    assert StairsEnv.restores == 1
    assert observation == "Turn 1: you are on step 0 of 2." and info["turn"] == 1 and info["task_id"] == "stairs-2"
    replayed = dataclasses.replace(starts[5], snapshot=None)  # C's second turn, from reset
    observation, info = put_at(env, replayed)
    assert StairsEnv.restores == 1 and observation.startswith("Unknown action.") and info["turn"] == 1
    with pytest.raises(ValueError, match="neither a snapshot nor a seed"):
        put_at(env, dataclasses.replace(replayed, seed=None))
    with pytest.raises(RuntimeError, match="replay of task 'stairs-2' after 1 turns gave"):
        put_at(env, dataclasses.replace(replayed, outputs=("up",)))
    with pytest.raises(RuntimeError, match="restore of task 'stairs-2'"):
        put_at(env, dataclasses.replace(starts[3], observation="elsewhere"))
    env.close()


def test_continuations_see_the_collectors_prompt_and_return_by_hand(stairs_batch):
    policy = RulePolicy(alternate_at_start)
    play = runner(policy)
    starts = turn_starts(stairs_batch)
    # From A's second state 'up' wins (1); from B's and C's one turn is left on step 0 (0).
    assert play.returns([starts[1], starts[3], starts[5]]) == [1.0, 0.0, 0.0]
    assert policy.prompts[:3] == [stairs_batch.prompts[1], stairs_batch.prompts[3], stairs_batch.prompts[5]]
    # From the first state: 'up' then 'up' wins; 'wait' then 'up' runs out of turns.
    assert play.returns([starts[0], starts[2]]) == [1.0, 0.0]
    play.close()


def test_invalid_turns_of_a_continuation_are_penalised(stairs_batch):
    play = runner(RulePolicy(lambda turn, step, n: "hop"))
    assert play.returns(turn_starts(stairs_batch)[:1]) == [-1.0]  # two invalid turns, 0.5 each
    play.close()


def hand_values(batch, *, width=16, env_id=ENV_ID):
    play = runner(RulePolicy(alternate_at_start), width=width, env_id=env_id)
    try:
        return step_values(batch, play, samples=2)
    finally:
        play.close()


def test_monte_carlo_values_by_hand_with_snapshots_replay_and_small_batches(stairs_batch):
    # V(s0) = (1 + 0) / 2; V(A1) = 1; V(B1) = V(C1) = 0.   A = r + V(next) - V(s).
    values = hand_values(stairs_batch)
    assert values.value_before.tolist() == [0.5, 1.0, 0.5, 0.0, 0.5, 0.0]
    assert values.advantages.tolist() == [0.5, 0.0, -0.5, 0.0, -1.0, 0.0]
    assert values.states == 4 and values.plays == 8
    StairsEnv.restores = 0
    replayed = hand_values(collect_stairs(record_snapshots=False, env_id="StairsNoSnapshots-v0"), width=3)
    assert StairsEnv.restores == 0 and replayed.advantages.tolist() == values.advantages.tolist()
    # Snapshots alone are enough (no seed to replay from).
    for trajectory in stairs_batch.trajectories:
        trajectory.metadata["seed"] = None
    assert hand_values(stairs_batch).advantages.tolist() == values.advantages.tolist()


def test_a_success_bonus_counts_in_continuations_as_in_the_batch():
    # A's win is worth 1.25 in the batch and in every play: V(s0) = (1.25 + 0) / 2, V(A1) = 1.25.
    batch = collect_stairs(record_snapshots=True, success_bonus=0.25)
    assert batch.turn_rewards.tolist()[:2] == [0.0, 1.25]
    play = runner(RulePolicy(alternate_at_start), success_bonus=0.25)
    values = step_values(batch, play, samples=2)
    play.close()
    assert values.value_before.tolist()[:2] == [0.625, 1.25]
    assert values.advantages.tolist() == [0.625, 0.0, -0.625, 0.0, -1.125, 0.0]
    expert = ExpertPlayer(ENV_ID, invalid_action_penalty=0.5, success_bonus=0.25)
    assert step_values(batch, expert).advantages.tolist() == [0.0, 0.0, -1.25, 0.0, -1.75, 0.0]
    expert.close()


def test_expert_values_by_hand(stairs_batch):
    # The expert climbs: V^E(s0) = 1, V^E(A1) = 1, V^E(B1) = V^E(C1) = 0 (one turn, two steps to go).
    expert = ExpertPlayer(ENV_ID, invalid_action_penalty=0.5)
    values = step_values(stairs_batch, expert)
    expert.close()
    assert values.value_before.tolist() == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    assert values.q_values.tolist() == [1.0, 1.0, 0.0, 0.0, -0.5, 0.0]
    assert values.advantages.tolist() == [0.0, 0.0, -1.0, 0.0, -1.5, 0.0]  # 0 for the expert's own 'up'


def test_expert_values_on_searchqa_replayed_from_reset():
    # SearchQA has no snapshots here: every state is replayed from the recorded seed. A search
    # leaves the expert's win in reach (A^E = 0); a wrong answer ends the episode (A^E = -1).
    from agents.collection.collector import Collector
    from tests.support.stairs import ScriptedPolicy

    policy = ScriptedPolicy([["<search>capital</search>"] * 4, ["<answer>nobody</answer>"] * 4])
    collector = Collector(policy, "SearchQA-v0", num_groups=2, group_size=2, env_kwargs={"max_turns": 3})
    batch, _ = collector.collect(seed=0)
    collector.close()
    expert = ExpertPlayer("SearchQA-v0", env_kwargs={"max_turns": 3})
    values = step_values(batch, expert)
    expert.close()
    assert values.states == 4  # per group: the first state, and the one after the same search
    assert values.value_before.tolist() == [1.0] * 8
    assert values.advantages.tolist() == [0.0, -1.0] * 4
