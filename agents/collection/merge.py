"""Shards' collections made one: rows, trajectories and groups renumbered in shard order.

A shard's :class:`~agents.collection.collector.Collection` numbers its groups and trajectories from 0.
:func:`merge_collections` puts the shards one after the other
(:meth:`~agents.rollout.RolloutBatch.concatenate`: numbers shifted, tensors padded once to the
widest shard) and recomputes the summary from the merged batch, so the result is what one
collector playing all the groups in order returns.

Example:
    >>> from agentenvs.core.trajectory import Trajectory, TrajectoryGroup
    >>> from agents.rollout import RolloutRow
    >>> def shard(task):
    ...     trajectory = Trajectory(task_id=task, group_id=0, turns=[], success=True, score=1.0)
    ...     row = RolloutRow("p", [1], [2], [-0.5], None, 0, 0, 0, 1.0, True)
    ...     batch = RolloutBatch.from_groups([row], [TrajectoryGroup(task, 0, [trajectory])], pad_token_id=0)
    ...     return Collection(batch, CollectStats(1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1, 1, 0.1))
    >>> merged = merge_collections([shard("a"), shard("b")], pad_token_id=0, seconds=0.2)
    >>> merged.batch.group_ids.tolist(), merged.batch.trajectory_index.tolist(), [g.task_id for g in merged.batch.groups]
    ([0, 1], [0, 1], ['a', 'b'])
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.collection.collector import Collection, CollectStats
from agents.rollout import RolloutBatch


def merge_collections(parts: Sequence[Collection], *, pad_token_id: int, seconds: float) -> Collection:
    """The shards' collections as one, in shard order (see the module docstring).

    Args:
        parts: Each shard's collection, in the order of its groups.
        pad_token_id: Pads the merged batch.
        seconds: The wall time of the whole collection (the shards ran in parallel).
    """
    if not parts:
        raise ValueError("merge_collections needs at least one collection")
    batch = RolloutBatch.concatenate([part.batch for part in parts], pad_token_id=pad_token_id)
    stats = CollectStats.of(
        batch,
        generated_tokens=sum(part.stats.generated_tokens for part in parts),
        prompt_tokens=sum(part.stats.prompt_tokens for part in parts),
        seconds=seconds,
    )
    return Collection(batch, stats)
