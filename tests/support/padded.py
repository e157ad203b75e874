"""Generations as the padded tensors ``TransformersPolicy.token_logprobs`` scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from agents.policy.padding import left_pad, right_pad


def padded_generations(policy: Any, generations: Sequence[Any]) -> tuple[torch.Tensor, ...]:
    """``(prompt_ids, prompt_mask, response_ids, response_mask)``: prompts left-padded, responses right-padded."""
    prompt_ids, prompt_mask = left_pad([g.prompt_ids for g in generations], policy.pad_token_id, policy.device)
    response_ids, response_mask = right_pad([g.response_ids for g in generations], policy.pad_token_id, policy.device)
    return prompt_ids, prompt_mask, response_ids, response_mask
