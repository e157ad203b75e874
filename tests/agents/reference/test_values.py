"""Step values from a player of returns: the formula, state sharing and the mean over samples."""

from __future__ import annotations

import pytest
import torch

from agents.reference.starts import turn_starts
from agents.reference.values import state_keys, step_advantages, step_values


class TablePlayer:
    """Returns by state: ``table[(turn, step, last history action)]`` lists the returns of successive plays."""

    def __init__(self, table):
        self.table = {key: list(values) for key, values in table.items()}
        self.played = []

    def returns(self, starts):
        out = []
        for start in starts:
            key = (len(start.history), start.observation, start.history[-1][1] if start.history else None)
            self.played.append(key)
            out.append(self.table[key].pop(0))
        return out


def test_step_advantages_is_reward_plus_next_value_minus_value():
    rewards, before, after = (
        torch.tensor([0.0, 1.0, -0.5]),
        torch.tensor([0.5, 1.0, 0.5]),
        torch.tensor([1.0, 0.0, 0.0]),
    )
    assert step_advantages(rewards, before, after).tolist() == [0.5, 0.0, -1.0]
    with pytest.raises(ValueError, match="must be equal 1-D"):
        step_advantages(rewards, before[:2], after)


def test_state_keys_number_states_by_first_appearance():
    assert state_keys([("x", 1), ("y",), ("x", 1)]) == ([0, 1, 0], [0, 1])


START = "Turn 0: you are on step 0 of 2."
A1, B1, C1 = (
    "Turn 1: you are on step 1 of 2.",
    "Turn 1: you are on step 0 of 2.",
    "Unknown action. Turn 1: you are on step 0 of 2.",
)


def test_values_mean_over_samples_and_shared_first_state(stairs_batch):
    # K = 2 plays per distinct state; the group's three first turns are one state, played twice.
    player = TablePlayer(
        {
            (0, START, None): [1.0, 0.0],  # V(s0) = 0.5
            (1, A1, "up"): [1.0, 1.0],  # V = 1
            (1, B1, "wait"): [0.0, 0.5],  # V = 0.25
            (1, C1, "hop"): [0.0, 0.0],  # V = 0
        }
    )
    values = step_values(stairs_batch, player, samples=2)
    assert values.states == 4 and values.plays == 8 and len(player.played) == 8
    assert values.value_before.tolist() == [0.5, 1.0, 0.5, 0.25, 0.5, 0.0]
    assert values.value_after.tolist() == [1.0, 0.0, 0.25, 0.0, 0.0, 0.0]
    # rewards: A 0, 1; B 0, 0; C -0.5 (penalty), 0
    assert values.advantages.tolist() == [0.5, 0.0, -0.25, -0.25, -1.0, 0.0]
    assert values.q_values.tolist() == [1.0, 1.0, 0.25, 0.0, -0.5, 0.0]


def test_only_chosen_rows_and_their_next_states_are_played(stairs_batch):
    player = TablePlayer({(0, START, None): [1.0], (1, A1, "up"): [1.0], (1, B1, "wait"): [0.0], (1, C1, "hop"): [0.0]})
    first = stairs_batch.turn_index == 0
    values = step_values(stairs_batch, player, rows=first)
    assert values.states == 4  # s0 and the three second states
    assert values.estimated.tolist() == first.tolist()
    assert values.advantages.tolist() == [0.0, 0.0, -1.0, 0.0, -1.5, 0.0]
    assert torch.isnan(values.value_before[~first]).all()
    second = TablePlayer({(1, A1, "up"): [1.0]})
    only = torch.tensor([False, True, False, False, False, False])
    values = step_values(stairs_batch, second, rows=only)
    assert values.states == 1 and values.advantages.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # 1 + 0 - 1


def test_bad_arguments_are_named(stairs_batch):
    with pytest.raises(ValueError, match="samples must be >= 1"):
        step_values(stairs_batch, TablePlayer({}), samples=0)
    with pytest.raises(ValueError, match=r"rows must be a \[6\] mask"):
        step_values(stairs_batch, TablePlayer({}), rows=torch.ones(5, dtype=torch.bool))

    class Short:
        def returns(self, starts):
            return []

    with pytest.raises(ValueError, match="returned 0 returns for 4 plays"):
        step_values(stairs_batch, Short())


def test_turn_starts_carry_history_seed_and_snapshot(stairs_batch):
    starts = turn_starts(stairs_batch)
    assert [len(s.history) for s in starts] == [0, 1, 0, 1, 0, 1]
    assert starts[3].history == ((START, "wait"),) and starts[3].outputs == ("wait",)
    assert starts[5].history == ((START, "hop"),)
    assert {s.seed for s in starts} == {stairs_batch.trajectories[0].metadata["seed"]}
    assert all(s.snapshot is not None for s in starts)
    assert len({s.key for s in starts}) == 4
