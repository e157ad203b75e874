"""A clone named ``agentenvs``, run from its parent, is reported with the fix instead of envs that do not exist."""

import subprocess
import sys
from pathlib import Path

import pytest

from agents._shadow import ShadowedPackage, check_not_shadowed


def test_a_bare_folder_in_the_working_directory_is_named_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "agentenvs" / "agentenvs").mkdir(parents=True)  # a clone's layout: no __init__.py at its top
    done = subprocess.run(
        [sys.executable, "-c", "import agents"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert "ShadowedPackage" in done.stderr and f"found the folder {tmp_path / 'agentenvs'}" in done.stderr
    assert "Run from inside the clone (cd agentenvs)" in done.stderr


def test_the_installed_package_passes_and_any_bare_folder_fails(tmp_path: Path, monkeypatch) -> None:
    check_not_shadowed()  # this process imports the installed agentenvs
    (tmp_path / "lonely_bare_folder").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ShadowedPackage, match="lonely_bare_folder"):
        check_not_shadowed("lonely_bare_folder")
