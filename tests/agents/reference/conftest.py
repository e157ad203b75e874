"""A collected Stairs batch the reference-value tests share (hand-checkable, see ``stairs_batch``)."""

from __future__ import annotations

import pytest

from tests.support.stairs import collect_stairs, register_stairs


@pytest.fixture(autouse=True)
def stairs_registered():
    """Stairs-v0 and StairsNoSnapshots-v0 are registered."""
    return register_stairs()


@pytest.fixture()
def stairs_batch():
    """Rows in order: A0, A1, B0, B1, C0, C1 (snapshots recorded)."""
    register_stairs()
    return collect_stairs(record_snapshots=True)
