"""Shared fixtures: the tiny random Qwen3 policy (built once per session into the test cache)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.getbasetemp() / "agentenvs-models"


@pytest.fixture(scope="session")
def tiny_model_path(model_cache):
    from agents.policy.models import resolve_model

    return resolve_model("tiny-random-qwen3", model_cache)
