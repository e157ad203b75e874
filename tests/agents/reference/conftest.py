"""A collected Stairs batch the reference-value tests share (hand-checkable, see ``stairs_batch``)."""

from __future__ import annotations

import pytest

from agents.loop.collector import Collector
from tests.support.stairs import ScriptedPolicy, register_stairs

SCRIPT = [["up", "wait", "hop"], ["up", "up", "up"]]
"""Member A climbs twice and wins; B waits then climbs (truncated, 0); C writes an invalid 'hop'
then climbs (penalised 0.5, truncated)."""


def collect_stairs(*, record_snapshots: bool, env_id: str | None = None):
    """One group of three on ``stairs-2`` (max 2 turns), invalid-action penalty 0.5."""
    env_id = env_id or register_stairs()
    collector = Collector(
        ScriptedPolicy(SCRIPT),
        env_id,
        num_groups=1,
        group_size=3,
        invalid_action_penalty=0.5,
        record_snapshots=record_snapshots,
    )
    try:
        batch, _ = collector.collect(["stairs-2"], seed=7)
    finally:
        collector.close()
    return batch


@pytest.fixture(autouse=True)
def stairs_registered():
    """Stairs-v0 and StairsNoSnapshots-v0 are registered."""
    return register_stairs()


@pytest.fixture()
def stairs_batch():
    """Rows in order: A0, A1, B0, B1, C0, C1 (snapshots recorded)."""
    register_stairs()
    return collect_stairs(record_snapshots=True)
