"""Shared fixtures: where the real datasets live (skipped with a reason when absent), and the tiny
random Qwen3 model (built once per session into the test cache, for every test folder that needs it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_root() -> Path:
    """``$AGENTENVS_SHARED_DATA``, else ``../shared/data`` beside the repo."""
    configured = os.environ.get("AGENTENVS_SHARED_DATA")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    root = shared_data_root()
    if not root.is_dir():
        pytest.skip(f"real datasets not found at {root} (set AGENTENVS_SHARED_DATA)")
    return root


@pytest.fixture(scope="session")
def searchqa_data(shared_data: Path) -> Path:
    folder = shared_data / "searchqa"
    if not (folder / "hotpotqa_dev_distractor_100.jsonl").is_file():
        pytest.skip(f"SearchQA data not found in {folder}")
    return folder


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Index caches go to a per-session temp folder, never the user's home."""
    monkeypatch.setenv("AGENTENVS_CACHE", str(tmp_path_factory.getbasetemp() / "agentenvs-cache"))


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "agentenvs-models"


@pytest.fixture(scope="session")
def tiny_model_path(model_cache: Path) -> Path:
    from agents.policy.models import resolve_model

    return resolve_model("tiny-random-qwen3", model_cache)


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory):
    """One local Ray instance (2 CPUs, no dashboard) for the whole session, shut down after it.

    Its workers get the session's env cache (the autouse fixture's ``AGENTENVS_CACHE``)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (the scale extra)")
    if not ray.is_initialized():
        cache = str(tmp_path_factory.getbasetemp() / "agentenvs-cache")
        ray.init(
            address="local",  # a fresh instance of our own, even where another session's Ray runs
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"AGENTENVS_CACHE": cache, "OMP_NUM_THREADS": "1"}},
        )
    yield ray
    ray.shutdown()


EXHAUSTIVE_VARIABLE = "AGENTENVS_EXHAUSTIVE"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``exhaustive`` (tens of minutes: ALFWorld's 1,000 snapshot replays) run only with
    ``AGENTENVS_EXHAUSTIVE=1``; CI runs their short versions."""
    if os.environ.get(EXHAUSTIVE_VARIABLE) == "1":
        return
    skip = pytest.mark.skip(reason=f"exhaustive: tens of minutes; run with {EXHAUSTIVE_VARIABLE}=1")
    for item in items:
        if "exhaustive" in item.keywords:
            item.add_marker(skip)
