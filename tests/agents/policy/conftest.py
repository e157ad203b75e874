"""Fixtures of the policy tests: the policy's pieces built by hand on the tiny random Qwen3."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def tiny_pieces(tiny_model_path):
    """``(weights, codec, caches)`` of the tiny model (full fine-tuning, no reference)."""
    from transformers import AutoTokenizer

    from agents.policy.caches import RolloutCaches
    from agents.policy.codec import ChatCodec, eos_token_ids
    from agents.policy.weights import PolicyWeights

    weights = PolicyWeights.load(tiny_model_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    codec = ChatCodec(tokenizer, eos_token_ids(tokenizer, weights.model))
    return weights, codec, RolloutCaches(weights.trunk_layer)
