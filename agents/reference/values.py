"""Step values of a batch's turns from a player of returns, and the advantage they give each turn.

For turn ``t`` of a trajectory, with ``s_t`` the state before it, ``r_t`` its reward (the
collector's: env reward minus the invalid-action penalty) and ``s_{t+1}`` the state it led to,

    V(s)   = (1/K) · Σ_k G_k(s)            the mean return of K plays from s (one for a deterministic player)
    A_t    = r_t + V(s_{t+1}) − V(s_t)     with V(s_{t+1}) = 0 after the last turn (the episode is over)

so ``r_t + V(s_{t+1})`` is Q(s_t, a_t) for the player. The player decides what the values mean:
the current policy's continuations (:class:`~agents.reference.continuations.ContinuationRunner`,
VinePPO's Monte Carlo values A^MC) or the env's expert (:class:`~agents.reference.expert.ExpertPlayer`,
QVal-style Q^E, V^E, A^E = Q^E − V^E). ``s_{t+1}`` is the start of the trajectory's next turn,
so every state played is the start of some row; identical states (:attr:`TurnStart.key`) are
played once and share their value.

Example:
    >>> step_advantages(torch.tensor([0.0, 1.0]), torch.tensor([0.5, 0.75]), torch.tensor([0.75, 0.0]))
    tensor([0.2500, 0.2500])
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from agents.reference.starts import TurnStart, turn_starts
from agents.rollout import RolloutBatch


@runtime_checkable
class ReturnPlayer(Protocol):
    """Plays on from turn starts: one return (sum of rewards, penalties included) per start."""

    def returns(self, starts: Sequence[TurnStart]) -> list[float]:
        """The return of one play from each start, in order."""
        ...


def step_advantages(rewards: torch.Tensor, value_before: torch.Tensor, value_after: torch.Tensor) -> torch.Tensor:
    """``[B]`` A_t = r_t + V(s_{t+1}) − V(s_t) (see the module docstring).

    Raises:
        ValueError: for mismatched shapes.
    """
    if not rewards.shape == value_before.shape == value_after.shape or rewards.dim() != 1:
        raise ValueError(
            f"rewards {tuple(rewards.shape)}, value_before {tuple(value_before.shape)} and value_after "
            f"{tuple(value_after.shape)} must be equal 1-D"
        )
    dtype = torch.promote_types(torch.promote_types(rewards.dtype, value_before.dtype), torch.float32)
    return rewards.to(dtype) + value_after.to(dtype) - value_before.to(dtype)


def state_keys(keys: Sequence[Hashable]) -> tuple[list[int], list[int]]:
    """Each item's state number and the first item of every state (states numbered by first appearance).

    >>> state_keys(["a", "b", "a", "c"])
    ([0, 1, 0, 2], [0, 1, 3])
    """
    numbers: dict[Hashable, int] = {}
    index, firsts = [], []
    for item, key in enumerate(keys):
        if key not in numbers:
            numbers[key] = len(numbers)
            firsts.append(item)
        index.append(numbers[key])
    return index, firsts


@dataclass(frozen=True)
class StepValues:
    """The step values of a batch's rows.

    Attributes:
        value_before: ``[B]`` V(s_t) (NaN on rows not estimated).
        value_after: ``[B]`` V(s_{t+1}) (0 after a trajectory's last turn; NaN on rows not estimated).
        advantages: ``[B]`` A_t = r_t + V(s_{t+1}) − V(s_t) (0 on rows not estimated).
        estimated: ``[B]`` which rows were estimated.
        states: Distinct states played.
        plays: Plays in all (``states × samples``).
    """

    value_before: torch.Tensor
    value_after: torch.Tensor
    advantages: torch.Tensor
    estimated: torch.Tensor
    states: int
    plays: int

    @property
    def q_values(self) -> torch.Tensor:
        """``[B]`` Q(s_t, a_t) = A_t + V(s_t) = r_t + V(s_{t+1})."""
        return self.advantages + self.value_before


def next_rows(batch: RolloutBatch) -> list[int | None]:
    """Per row, the row of its trajectory's next turn (None after the last one)."""
    following: list[int | None] = [None] * len(batch)
    for rows in batch.rows_by_trajectory():
        for row, after in zip(rows, rows[1:], strict=False):
            following[row] = after
    return following


def step_values(
    batch: RolloutBatch,
    player: ReturnPlayer,
    *,
    samples: int = 1,
    rows: torch.Tensor | None = None,
    starts: Sequence[TurnStart] | None = None,
) -> StepValues:
    """V(s_t), V(s_{t+1}) and A_t of the chosen rows, each distinct state played ``samples`` times.

    Args:
        batch: A collected batch (trajectories with ``metadata["seed"]``, or recorded snapshots).
        player: Who plays on from the states (the current policy, the expert).
        samples: Plays per state (K).
        rows: ``[B]`` bool, the rows to estimate (None: all).
        starts: The rows' starts (default: :func:`~agents.reference.starts.turn_starts` of ``batch``).

    Raises:
        ValueError: for ``samples < 1``, a ``rows`` mask of the wrong shape, or a player that
            returned the wrong number of returns.
    """
    if samples < 1:
        raise ValueError(f"step_values: samples must be >= 1, got {samples}")
    count = len(batch)
    chosen = torch.ones(count, dtype=torch.bool) if rows is None else rows.bool()
    if chosen.shape != (count,):
        raise ValueError(f"step_values: rows must be a [{count}] mask, got {tuple(chosen.shape)}")
    starts = turn_starts(batch) if starts is None else starts
    following = next_rows(batch)
    needed = [row for row in range(count) if chosen[row]]
    needed += [nxt for row in needed if (nxt := following[row]) is not None]
    index, firsts = state_keys([starts[row].key for row in needed])
    state_of = dict(zip(needed, index, strict=True))
    plays = [starts[needed[first]] for first in firsts for _ in range(samples)]
    returns = player.returns(plays)
    if len(returns) != len(plays):
        raise ValueError(f"step_values: the player returned {len(returns)} returns for {len(plays)} plays")
    values = torch.tensor(returns, dtype=torch.float64).reshape(len(firsts), samples).mean(dim=1)
    nan = torch.full((count,), float("nan"), dtype=torch.float64)
    before, after = nan.clone(), nan.clone()
    for row in range(count):
        if chosen[row]:
            before[row] = values[state_of[row]]
            following_row = following[row]
            after[row] = 0.0 if following_row is None else values[state_of[following_row]]
    advantages = step_advantages(batch.turn_rewards.double(), before, after)
    advantages = torch.where(chosen, advantages, torch.zeros_like(advantages))
    return StepValues(before.float(), after.float(), advantages.float(), chosen, states=len(firsts), plays=len(plays))
