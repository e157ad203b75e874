"""Per-token log-probabilities from logits, a chunk of rows at a time.

A full-vocabulary ``log_softmax`` over a ``[B, T, V]`` batch allocates another
``B·T·V`` tensor (gigabytes at V = 151k); :func:`selective_logprobs` only keeps the
``[B, T]`` result, computing ``logit[label] − logsumexp(logits)`` over row chunks.

Example:
    >>> import torch
    >>> logits = torch.tensor([[[0.0, 0.0], [2.0, 0.0]]])
    >>> selective_logprobs(logits, torch.tensor([[1, 0]]), chunk_size=1).round(decimals=4)
    tensor([[-0.6931, -0.1269]])
"""

from __future__ import annotations

from typing import Annotated

import torch

from agentenvs.core.checks import Bounds, check_value

Temperature = Annotated[float, Bounds(0, min_inclusive=False)]
"""A sampling temperature: a finite number > 0 (log-probs are of ``softmax(logits / T)``)."""


def check_temperature(owner: str, temperature: float) -> float:
    """``temperature`` as a float, or the error naming ``owner.temperature``: the one check of it
    (``SamplingSettings`` and ``GRPOConfig`` declare their field as :data:`Temperature`)."""
    return check_value(owner, "temperature", temperature, Temperature)


def selective_logprobs(
    logits: torch.Tensor, labels: torch.Tensor, *, temperature: float = 1.0, chunk_size: int = 1024
) -> torch.Tensor:
    """``log softmax(logits / temperature)[label]`` for every position.

    Args:
        logits: ``[..., V]`` scores.
        labels: ``[...]`` token ids (same leading shape).
        temperature: Divides the logits first (sampling temperature).
        chunk_size: Rows of ``V`` processed at once.

    Returns:
        ``[...]`` float32 log-probabilities.
    """
    if logits.shape[:-1] != labels.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and labels {tuple(labels.shape)} disagree")
    check_temperature("selective_logprobs", temperature)
    flat_logits = logits.reshape(-1, logits.shape[-1])
    flat_labels = labels.reshape(-1, 1)
    pieces = []
    for start in range(0, flat_logits.shape[0], chunk_size):
        chunk = flat_logits[start : start + chunk_size].float()
        if temperature != 1.0:
            chunk = chunk / temperature
        picked = chunk.gather(-1, flat_labels[start : start + chunk_size]).squeeze(-1)
        pieces.append(picked - torch.logsumexp(chunk, dim=-1))
    if not pieces:
        return torch.zeros(labels.shape, dtype=torch.float32, device=logits.device)
    return torch.cat(pieces).reshape(labels.shape)
