"""Fixtures of the agents tests: a tiny random Qwen3 policy (the model comes from tests/conftest.py)."""

from __future__ import annotations

import pytest

from agents.policy import SamplingSettings


@pytest.fixture()
def tiny_policy(tiny_model_path):
    from agents.policy import TransformersPolicy

    return TransformersPolicy(str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=6), seed=0)
