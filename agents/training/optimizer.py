"""The optimiser both trainers build from :class:`~agents.settings.OptimSettings`: AdamW over the
trainable parameters, and its learning-rate schedule over the run's optimizer steps.

The RL trainer (:mod:`agents.training.trainer`) and the SFT trainer (:mod:`agents.sft.trainer`)
call :func:`adamw` and :func:`lr_schedule`; neither writes AdamW or a schedule itself, so a new
optimiser setting is added to ``OptimSettings`` and read here.

Example:
    >>> [round(lr_lambda("linear", 2, 6)(n), 2) for n in range(6)]
    [0.5, 1.0, 1.0, 0.75, 0.5, 0.25]
    >>> lr_lambda("cosine", 0, 4)(2)
    0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch

from agents.settings import OptimSettings

__all__ = ["adamw", "lr_lambda", "lr_schedule"]


def lr_lambda(kind: str, warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """The multiplier of the learning rate after ``n`` optimizer steps: linear warm-up over
    ``warmup_steps``, then constant, linear down to 0 or a half cosine down to 0 at ``total_steps``."""

    def multiplier(n: int) -> float:
        if warmup_steps and n < warmup_steps:
            return (n + 1) / warmup_steps
        if kind == "constant" or total_steps <= warmup_steps:
            return 1.0
        progress = min(1.0, (n - warmup_steps) / max(1, total_steps - warmup_steps))
        return 1.0 - progress if kind == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))

    return multiplier


def adamw(parameters: Iterable[torch.nn.Parameter], settings: OptimSettings) -> torch.optim.AdamW:
    """AdamW at ``settings.learning_rate`` with ``settings.weight_decay``."""
    return torch.optim.AdamW(parameters, lr=settings.learning_rate, weight_decay=settings.weight_decay)


def lr_schedule(
    optimizer: torch.optim.Optimizer, settings: OptimSettings, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """``settings.lr_scheduler_type`` with ``settings.warmup_steps`` over ``total_steps`` optimizer steps."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_lambda(settings.lr_scheduler_type, settings.warmup_steps, total_steps)
    )
