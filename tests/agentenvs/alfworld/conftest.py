"""Fixtures for the ALFWorld tests: the real games (skipped when absent) and TextWorld."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textworld", reason="ALFWorld needs the alfworld extra (see scripts/setup.sh)")


@pytest.fixture(scope="session")
def alfworld_data(shared_data: Path) -> Path:
    folder = shared_data / "alfworld"
    if not (folder / "json_2.1.1" / "valid_seen").is_dir():
        pytest.skip(f"ALFWorld games not found in {folder}/json_2.1.1/valid_seen")
    return folder
