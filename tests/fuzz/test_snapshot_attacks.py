"""Every registered env, restoring forged, corrupted and foreign snapshots: refused cleanly or true, never leaking.

Seeded (reproducible) runs of :func:`agentenvs.testing.snapshot_attacks.attack_snapshots`: a
privileged env's snapshots forged in every family and restored into a default env. A CI-sized
run; the nightly size is ``benchmarks/fuzz_envs.py --parts snapshots``.
"""

from __future__ import annotations

import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.registration import agentenvs_ids
from agentenvs.testing.snapshot_attacks import FAMILIES, attack_snapshots

SETTINGS = {
    "ALFWorld-v0": {"prefetch": False, "num_generated_games": 2},
    "WebShop-v0": {"num_products": 200, "split": "all"},
}
"""Small worlds: the attack is on the snapshots, not on building the world."""

FORGERIES = {"ALFWorld-v0": 60}
DEFAULT_FORGERIES = 240


@pytest.mark.parametrize("env_id", agentenvs_ids())
def test_forged_snapshots_are_refused_cleanly_or_restored_truthfully(env_id: str) -> None:
    if env_id == "ALFWorld-v0":
        pytest.importorskip("textworld", reason="ALFWorld needs the alfworld extra (see scripts/setup.sh)")
    forgeries = FORGERIES.get(env_id, DEFAULT_FORGERIES)
    report = attack_snapshots(env_id, forgeries=forgeries, seed=0, **SETTINGS.get(env_id, {}))
    assert report.errors == []
    assert report.forgeries == forgeries == report.refused + report.accepted
    assert report.refused > forgeries // 4 and report.accepted > forgeries // 8  # both ends exercised
    assert len(FAMILIES) <= forgeries
