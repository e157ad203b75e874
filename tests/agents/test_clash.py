"""The OpenAI Agents SDK's top-level ``agents`` is detected at import (issue 26, item 13), simulated:
nothing is installed, a fake distribution answers the metadata lookup."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import agents
from agents._clash import AgentsPackageClash, AgentsPackageClashWarning, check_agents_package

OURS = Path(agents.__file__).parent
REPO = OURS.parent


class FakeDistribution:
    """What ``importlib.metadata.distribution("openai-agents")`` returns, installed under ``root``."""

    version = "0.6.1"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = [Path("agents/__init__.py"), Path("agents/run.py"), Path("openai_agents-0.6.1.dist-info/RECORD")]

    def locate_file(self, file: Path) -> Path:
        return self.root / file


def lookup(found: dict[str, FakeDistribution]):
    def distribution(name: str) -> FakeDistribution:
        if name not in found:
            raise importlib.metadata.PackageNotFoundError(name)
        return found[name]

    return distribution


def test_nothing_is_said_without_the_sdk():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_agents_package(OURS, distribution=lookup({}))


def test_the_sdk_in_the_same_folder_is_an_error_that_says_what_to_do(tmp_path):
    (tmp_path / "agents").mkdir()
    with pytest.raises(AgentsPackageClash, match=r"openai-agents 0.6.1 .* same folder") as raised:
        check_agents_package(tmp_path / "agents", distribution=lookup({"openai-agents": FakeDistribution(tmp_path)}))
    assert isinstance(raised.value, ImportError) and "separate virtual environments" in str(raised.value)


def test_the_sdk_elsewhere_is_a_warning_naming_both_folders(tmp_path):
    with pytest.warns(AgentsPackageClashWarning, match=r"separate virtual environments") as caught:
        check_agents_package(OURS, distribution=lookup({"openai-agents": FakeDistribution(tmp_path)}))
    message = str(caught[0].message)
    assert str(tmp_path / "agents") in message and str(OURS.resolve()) in message


def test_import_agents_runs_the_check():
    """A fresh interpreter whose metadata lookup finds a fake SDK: ``import agents`` warns."""
    script = (
        "import importlib.metadata as m, pathlib, warnings\n"
        "real = m.distribution\n"
        "class Fake:\n"
        "    version = '0.6.1'\n"
        "    files = [pathlib.Path('agents/__init__.py')]\n"
        "    def locate_file(self, f): return pathlib.Path('/elsewhere/site-packages') / f\n"
        "m.distribution = lambda name: Fake() if name == 'openai-agents' else real(name)\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import agents\n"
        "print([type(w.message).__name__ for w in caught if 'OpenAI Agents SDK' in str(w.message)])\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "['AgentsPackageClashWarning']"


def test_without_torch_the_import_says_which_extra_to_install():
    # A core-only install: the envs work, `import agents` names what it needs instead of a bare traceback.
    code = "import sys; sys.modules['torch'] = None; import agents"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert 'ImportError: agents needs torch and transformers: pip install "agentenvs[train,models]"' in result.stderr
