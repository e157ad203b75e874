"""The tensors of one collection step: every turn of every trajectory as one row.

A :class:`RolloutBatch` is what the collector hands to credit rules and the loss.
Row ``i`` is one turn: the prompt the policy saw (text and left-padded ids), the
response it sampled (right-padded ids and mask), the sampled tokens' log-probs,
where the action lies in the response (token span), and which trajectory, turn
and group the row belongs to. Trajectory-level outcomes are indexed by
``trajectory_index``. Text stays in Python lists.

Rows are per turn whichever rollout mode made them. In conversation mode a turn's prompt is
the whole conversation before it, so a trajectory's rows form a *prefix chain* (each row's
prompt and response begin the next row's prompt): :meth:`RolloutBatch.prefix_chains` finds
them, and one forward over a chain's last row scores all of its turns. Rows may carry the
frozen trunk's hidden states (``trunk_hiddens``), so a later pass runs only the adapted layers.

Example:
    >>> batch = RolloutBatch.from_rows(
    ...     [RolloutRow("p0", [5, 6], [7, 8, 9], [-0.1, -0.2, -0.3], (1, 2), 0, 0, 0, 0.0, True),
    ...      RolloutRow("p1", [5], [7], [-0.5], None, 1, 0, 0, 1.0, True)],
    ...     trajectory_rewards=[0.0, 1.0], trajectory_success=[False, True], trajectory_group_ids=[0, 0],
    ...     pad_token_id=0)
    >>> batch.response_mask.tolist()
    [[1, 1, 1], [1, 0, 0]]
    >>> batch.action_token_spans.tolist()
    [[1, 2], [-1, -1]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from agentenvs.core.trajectory import Trajectory, TrajectoryGroup


def turn_reward(
    env_reward: float, info: Mapping[str, Any], *, invalid_action_penalty: float = 0.0, success_bonus: float = 0.0
) -> float:
    """A turn's training reward: the env's, minus ``invalid_action_penalty`` when the action was
    invalid (``info["action_valid"]`` false), plus ``success_bonus`` when the episode is won
    (``info["won"]``). What the collector records as :attr:`RolloutRow.reward` and what plays
    from turn states (:mod:`agents.reference`) sum.

    >>> turn_reward(1.0, {"action_valid": True, "won": True}, invalid_action_penalty=0.5, success_bonus=0.25)
    1.25
    >>> turn_reward(0.0, {"action_valid": False, "won": False}, invalid_action_penalty=0.5)
    -0.5
    """
    penalty = 0.0 if info.get("action_valid", False) else float(invalid_action_penalty)
    return float(env_reward) - penalty + (float(success_bonus) if info.get("won", False) else 0.0)


@dataclass
class RolloutRow:
    """One turn as the collector records it (before padding).

    Attributes:
        prompt: The prompt text (user message before the chat template).
        prompt_ids: Chat-templated prompt token ids.
        response_ids: Sampled response token ids.
        logprobs: Sampling log-prob of each response token.
        action_token_span: ``(start, end)`` response-token indices of the action, or None.
        trajectory_index: Index of the trajectory in the batch's flat trajectory list.
        turn_index: Turn number within the trajectory (0-based).
        group_id: The trajectory's group.
        reward: The env's reward for this turn (penalties included).
        valid: Whether the env accepted the action.
        trunk_hiddens: ``[P + R - 1, D]`` kept trunk states of the prompt and response tokens
            (the last response token's excepted), or None.
        snapshot: The env's state before this turn (``env.unwrapped.snapshot()``, opaque), or None
            (the collector records it when asked: rules that play on from turn states use it).
    """

    prompt: str
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    action_token_span: tuple[int, int] | None
    trajectory_index: int
    turn_index: int
    group_id: int
    reward: float
    valid: bool
    trunk_hiddens: torch.Tensor | None = None
    snapshot: Any = None


@dataclass
class RolloutBatch:
    """Padded per-turn tensors plus the trajectory groups they came from.

    Row tensors have ``B`` rows (turns); ``T`` is the longest response and ``P``
    the longest prompt; trajectory tensors have ``N`` entries.

    Attributes:
        prompts: ``B`` prompt texts (what :meth:`TransformersPolicy.score` takes).
        prompt_ids: ``[B, P]`` left-padded prompt ids.
        prompt_mask: ``[B, P]`` 1 on real prompt tokens.
        response_ids: ``[B, T]`` right-padded response ids.
        response_mask: ``[B, T]`` 1 on real response tokens.
        old_logprobs: ``[B, T]`` sampling log-probs (0 at padding).
        action_token_spans: ``[B, 2]`` ``(start, end)`` of the action tokens; ``(-1, -1)`` if none.
        trajectory_index: ``[B]`` trajectory of each row.
        turn_index: ``[B]`` turn number of each row.
        group_ids: ``[B]`` group of each row.
        turn_rewards: ``[B]`` env reward of each turn (penalty included).
        turn_valid: ``[B]`` whether each turn's action was valid.
        trajectory_rewards: ``[N]`` outcome reward R of each trajectory (what GRPO normalises).
        trajectory_success: ``[N]`` whether each trajectory won.
        trajectory_group_ids: ``[N]`` group of each trajectory.
        groups: The :class:`TrajectoryGroup` objects (text, infos, env metadata).
        ref_logprobs: ``[B, T]`` reference-model log-probs (filled when the KL term is on).
        trunk_hiddens: Per row, its :attr:`RolloutRow.trunk_hiddens` (None unless every row has them).
        snapshots: Per row, the env state before its turn (:attr:`RolloutRow.snapshot`; None unless
            every row has one).
    """

    prompts: list[str]
    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    response_ids: torch.Tensor
    response_mask: torch.Tensor
    old_logprobs: torch.Tensor
    action_token_spans: torch.Tensor
    trajectory_index: torch.Tensor
    turn_index: torch.Tensor
    group_ids: torch.Tensor
    turn_rewards: torch.Tensor
    turn_valid: torch.Tensor
    trajectory_rewards: torch.Tensor
    trajectory_success: torch.Tensor
    trajectory_group_ids: torch.Tensor
    groups: list[TrajectoryGroup] = field(default_factory=list)
    ref_logprobs: torch.Tensor | None = None
    trunk_hiddens: list[torch.Tensor] | None = None
    snapshots: list[Any] | None = None

    def __len__(self) -> int:
        return len(self.prompts)

    @property
    def trajectories(self) -> list[Trajectory]:
        """The flat trajectory list ``trajectory_index`` points into (group by group)."""
        return [trajectory for group in self.groups for trajectory in group]

    @property
    def num_tokens(self) -> int:
        """Real response tokens in the batch."""
        return int(self.response_mask.sum())

    def action_mask(self) -> torch.Tensor:
        """``[B, T]`` 1 on the tokens of each row's action span."""
        positions = torch.arange(self.response_ids.shape[1])[None, :]
        start, end = self.action_token_spans[:, :1], self.action_token_spans[:, 1:]
        return ((positions >= start) & (positions < end)).long() * self.response_mask

    def select(self, rows: torch.Tensor | Sequence[int] | slice) -> RolloutBatch:
        """The batch restricted to some rows (trajectory-level fields are kept whole)."""
        if isinstance(rows, slice):
            index = torch.arange(len(self))[rows]
        else:
            index = torch.as_tensor(rows, dtype=torch.long)
        take = index.tolist()
        return replace(
            self,
            prompts=[self.prompts[i] for i in take],
            prompt_ids=self.prompt_ids[index],
            prompt_mask=self.prompt_mask[index],
            response_ids=self.response_ids[index],
            response_mask=self.response_mask[index],
            old_logprobs=self.old_logprobs[index],
            action_token_spans=self.action_token_spans[index],
            trajectory_index=self.trajectory_index[index],
            turn_index=self.turn_index[index],
            group_ids=self.group_ids[index],
            turn_rewards=self.turn_rewards[index],
            turn_valid=self.turn_valid[index],
            ref_logprobs=None if self.ref_logprobs is None else self.ref_logprobs[index],
            trunk_hiddens=None if self.trunk_hiddens is None else [self.trunk_hiddens[i] for i in take],
            snapshots=None if self.snapshots is None else [self.snapshots[i] for i in take],
        )

    def row_tokens(self, row: int) -> tuple[list[int], list[int]]:
        """Row ``row``'s real prompt ids and response ids."""
        prompt = self.prompt_ids[row][self.prompt_mask[row].bool()].tolist()
        return prompt, self.response_ids[row][self.response_mask[row].bool()].tolist()

    @property
    def num_trajectories(self) -> int:
        """Trajectories in the batch (``trajectory_index`` runs over ``0 .. num_trajectories - 1``)."""
        return len(self.trajectory_rewards)

    def rows_by_trajectory(self) -> list[list[int]]:
        """Each trajectory's rows in turn order, one list per trajectory (empty for one without turns).

        The one way from trajectories to rows; a row's trajectory is ``trajectory_index[row]``.

        >>> batch = RolloutBatch.from_rows(
        ...     [RolloutRow("b", [1], [2], [0.0], None, 0, 1, 0, 0.0, True),
        ...      RolloutRow("c", [1], [2], [0.0], None, 1, 0, 0, 0.0, True),
        ...      RolloutRow("a", [1], [2], [0.0], None, 0, 0, 0, 0.0, True)],
        ...     trajectory_rewards=[0.0, 1.0], trajectory_success=[False, True], trajectory_group_ids=[0, 0],
        ...     pad_token_id=0)
        >>> batch.rows_by_trajectory()
        [[2, 0], [1]]
        """
        turns: list[list[tuple[int, int]]] = [[] for _ in range(self.num_trajectories)]
        indices = zip(self.trajectory_index.tolist(), self.turn_index.tolist(), strict=True)
        for row, (trajectory, turn) in enumerate(indices):
            turns[trajectory].append((turn, row))
        return [[row for _, row in sorted(pairs)] for pairs in turns]

    def rows_of_trajectory(self, trajectory: int) -> list[int]:
        """The rows of one trajectory, in turn order (see :meth:`rows_by_trajectory`)."""
        if not 0 <= trajectory < self.num_trajectories:
            raise IndexError(f"trajectory {trajectory} is not in a batch of {self.num_trajectories}")
        return self.rows_by_trajectory()[trajectory]

    def prefix_chains(self) -> list[list[int]]:
        """The rows grouped into prefix chains, in order of their first row; each chain in turn order.

        Consecutive turns of one trajectory share a chain when the earlier one's prompt and
        response are the start of the later one's prompt (conversation mode); otherwise (per-turn
        prompts) every row is a chain of its own.

        >>> rows = [RolloutRow("a", [1, 2], [3], [0.0], None, 0, 0, 0, 0.0, True),
        ...         RolloutRow("b", [1, 2, 3, 4], [5], [0.0], None, 0, 1, 0, 0.0, True),
        ...         RolloutRow("c", [9], [5], [0.0], None, 0, 2, 0, 0.0, True)]
        >>> batch = RolloutBatch.from_rows(rows, trajectory_rewards=[0.0], trajectory_success=[False],
        ...                                trajectory_group_ids=[0], pad_token_id=0)
        >>> batch.prefix_chains()
        [[0, 1], [2]]
        """
        chains: list[list[int]] = []
        for rows in self.rows_by_trajectory():
            previous: list[int] | None = None
            for row in rows:
                prompt, response = self.row_tokens(row)
                if previous is not None and chains and prompt[: len(previous)] == previous:
                    chains[-1].append(row)
                else:
                    chains.append([row])
                previous = prompt + response
        return sorted(chains, key=lambda chain: chain[0])

    def prompt_units(self, chains: Sequence[Sequence[int]]) -> list[list[int]]:
        """The chains (:meth:`prefix_chains`) grouped by their first row's prompt, in order of first appearance.

        A group's members sampled their first responses from one prompt (at a temperature, a
        group's rollouts often see the same page), so a scoring pass can feed that prompt once
        for all of them (``packs`` of :func:`agents.policy.spans.span_logprobs`).

        >>> rows = [RolloutRow("a", [1, 2], [3], [0.0], None, 0, 0, 0, 0.0, True),
        ...         RolloutRow("b", [9], [5], [0.0], None, 0, 1, 0, 0.0, True),
        ...         RolloutRow("a", [1, 2], [4], [0.0], None, 0, 2, 0, 0.0, True)]
        >>> batch = RolloutBatch.from_rows(rows, trajectory_rewards=[0.0] * 3, trajectory_success=[False] * 3,
        ...                                trajectory_group_ids=[0] * 3, pad_token_id=0)
        >>> batch.prompt_units(batch.prefix_chains())
        [[0, 2], [1]]
        """
        units: dict[tuple[int, ...], list[int]] = {}
        for index, chain in enumerate(chains):
            units.setdefault(tuple(self.row_tokens(chain[0])[0]), []).append(index)
        return list(units.values())

    @classmethod
    def from_groups(
        cls, rows: Sequence[RolloutRow], groups: Sequence[TrajectoryGroup], *, pad_token_id: int
    ) -> RolloutBatch:
        """Pads the rows of ``groups``' trajectories into a batch; the trajectory-level tensors
        (``reward``, ``success``, group) come from the trajectories themselves.

        Row ``trajectory_index`` values index the groups' trajectories in order.
        """
        trajectories = [trajectory for group in groups for trajectory in group]
        return cls.from_rows(
            rows,
            trajectory_rewards=[t.reward for t in trajectories],
            trajectory_success=[t.success for t in trajectories],
            trajectory_group_ids=[t.group_id for t in trajectories],
            pad_token_id=pad_token_id,
            groups=list(groups),
        )

    @classmethod
    def concatenate(cls, parts: Sequence[RolloutBatch], *, pad_token_id: int) -> RolloutBatch:
        """The batches one after the other, as one: trajectories and groups renumbered after the
        earlier parts', prompts left-padded and responses right-padded to the widest part.

        >>> row = RolloutRow("p", [5], [7, 8], [-0.1, -0.2], (0, 1), 0, 0, 0, 1.0, True)
        >>> part = RolloutBatch.from_rows([row], trajectory_rewards=[1.0], trajectory_success=[True],
        ...                               trajectory_group_ids=[0], pad_token_id=0)
        >>> both = RolloutBatch.concatenate([part, part], pad_token_id=0)
        >>> both.trajectory_index.tolist(), both.group_ids.tolist(), both.trajectory_group_ids.tolist()
        ([0, 1], [0, 1], [0, 1])
        """
        if not parts:
            raise ValueError("RolloutBatch.concatenate needs at least one batch")
        prompt_width = max(part.prompt_ids.shape[1] for part in parts)
        response_width = max(part.response_ids.shape[1] for part in parts)

        def left(tensor: torch.Tensor, value: int) -> torch.Tensor:
            return torch.nn.functional.pad(tensor, (prompt_width - tensor.shape[1], 0), value=value)

        def right(tensor: torch.Tensor, value: float) -> torch.Tensor:
            return torch.nn.functional.pad(tensor, (0, response_width - tensor.shape[1]), value=value)

        trajectory_offsets, group_offsets, trajectories, groups = [], [], 0, 0
        for part in parts:
            trajectory_offsets.append(trajectories)
            group_offsets.append(groups)
            trajectories += part.num_trajectories
            groups += max(len(part.groups), int(part.trajectory_group_ids.max()) + 1 if part.num_trajectories else 0)
        with_reference = all(part.ref_logprobs is not None for part in parts)
        with_trunk = all(part.trunk_hiddens is not None for part in parts)
        with_snapshots = all(part.snapshots is not None for part in parts)
        return cls(
            prompts=[prompt for part in parts for prompt in part.prompts],
            prompt_ids=torch.cat([left(part.prompt_ids, pad_token_id) for part in parts]),
            prompt_mask=torch.cat([left(part.prompt_mask, 0) for part in parts]),
            response_ids=torch.cat([right(part.response_ids, pad_token_id) for part in parts]),
            response_mask=torch.cat([right(part.response_mask, 0) for part in parts]),
            old_logprobs=torch.cat([right(part.old_logprobs, 0.0) for part in parts]),
            action_token_spans=torch.cat([part.action_token_spans for part in parts]),
            trajectory_index=torch.cat(
                [p.trajectory_index + o for p, o in zip(parts, trajectory_offsets, strict=True)]
            ),
            turn_index=torch.cat([part.turn_index for part in parts]),
            group_ids=torch.cat([p.group_ids + o for p, o in zip(parts, group_offsets, strict=True)]),
            turn_rewards=torch.cat([part.turn_rewards for part in parts]),
            turn_valid=torch.cat([part.turn_valid for part in parts]),
            trajectory_rewards=torch.cat([part.trajectory_rewards for part in parts]),
            trajectory_success=torch.cat([part.trajectory_success for part in parts]),
            trajectory_group_ids=torch.cat(
                [p.trajectory_group_ids + o for p, o in zip(parts, group_offsets, strict=True)]
            ),
            groups=[shift_group(g, o) for p, o in zip(parts, group_offsets, strict=True) for g in p.groups],
            ref_logprobs=(
                torch.cat([right(p.ref_logprobs, 0.0) for p in parts if p.ref_logprobs is not None])
                if with_reference
                else None
            ),
            trunk_hiddens=[h for p in parts for h in (p.trunk_hiddens or [])] if with_trunk else None,
            snapshots=[s for p in parts for s in (p.snapshots or [])] if with_snapshots else None,
        )

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[RolloutRow],
        *,
        trajectory_rewards: Sequence[float],
        trajectory_success: Sequence[bool],
        trajectory_group_ids: Sequence[int],
        pad_token_id: int,
        groups: list[TrajectoryGroup] | None = None,
    ) -> RolloutBatch:
        """Pads recorded rows into a batch, with the trajectory-level values given as lists
        (:meth:`from_groups` takes them from the groups' trajectories)."""
        batch = len(rows)
        prompt_width = max((len(r.prompt_ids) for r in rows), default=0)
        response_width = max((len(r.response_ids) for r in rows), default=0)
        prompt_ids = torch.full((batch, prompt_width), pad_token_id, dtype=torch.long)
        prompt_mask = torch.zeros((batch, prompt_width), dtype=torch.long)
        response_ids = torch.full((batch, response_width), pad_token_id, dtype=torch.long)
        response_mask = torch.zeros((batch, response_width), dtype=torch.long)
        old_logprobs = torch.zeros((batch, response_width), dtype=torch.float32)
        spans = torch.full((batch, 2), -1, dtype=torch.long)
        for i, row in enumerate(rows):
            if len(row.logprobs) != len(row.response_ids):
                raise ValueError(f"row {i}: {len(row.logprobs)} log-probs for {len(row.response_ids)} tokens")
            if row.prompt_ids:
                prompt_ids[i, prompt_width - len(row.prompt_ids) :] = torch.tensor(row.prompt_ids)
                prompt_mask[i, prompt_width - len(row.prompt_ids) :] = 1
            length = len(row.response_ids)
            response_ids[i, :length] = torch.tensor(row.response_ids, dtype=torch.long)
            response_mask[i, :length] = 1
            old_logprobs[i, :length] = torch.tensor(row.logprobs, dtype=torch.float32)
            if row.action_token_span is not None:
                spans[i] = torch.tensor(row.action_token_span)
        return cls(
            prompts=[r.prompt for r in rows],
            prompt_ids=prompt_ids,
            prompt_mask=prompt_mask,
            response_ids=response_ids,
            response_mask=response_mask,
            old_logprobs=old_logprobs,
            action_token_spans=spans,
            trajectory_index=torch.tensor([r.trajectory_index for r in rows], dtype=torch.long),
            turn_index=torch.tensor([r.turn_index for r in rows], dtype=torch.long),
            group_ids=torch.tensor([r.group_id for r in rows], dtype=torch.long),
            turn_rewards=torch.tensor([r.reward for r in rows], dtype=torch.float32),
            turn_valid=torch.tensor([r.valid for r in rows], dtype=torch.bool),
            trajectory_rewards=torch.tensor(list(trajectory_rewards), dtype=torch.float32),
            trajectory_success=torch.tensor(list(trajectory_success), dtype=torch.bool),
            trajectory_group_ids=torch.tensor(list(trajectory_group_ids), dtype=torch.long),
            groups=list(groups or []),
            trunk_hiddens=(
                [r.trunk_hiddens for r in rows if r.trunk_hiddens is not None]
                if rows and all(r.trunk_hiddens is not None for r in rows)
                else None
            ),
            snapshots=[r.snapshot for r in rows] if rows and all(r.snapshot is not None for r in rows) else None,
        )


def shift_group(group: TrajectoryGroup, offset: int) -> TrajectoryGroup:
    """The group renumbered ``group_id + offset`` (its trajectories too)."""
    trajectories = [replace(trajectory, group_id=trajectory.group_id + offset) for trajectory in group]
    return TrajectoryGroup(group.task_id, group.group_id + offset, trajectories)
