"""The one optimiser builder: AdamW and its schedule from OptimSettings, for both trainers."""

from __future__ import annotations

import pytest
import torch

from agents.settings import OptimSettings
from agents.training.optimizer import adamw, lr_lambda, lr_schedule


def test_the_schedules_multipliers_by_hand():
    # warm-up 2 of 6 steps: 1/2, 2/2, then linear from 1 at step 2 down to 0 at step 6
    assert [lr_lambda("linear", 2, 6)(n) for n in range(6)] == pytest.approx([0.5, 1.0, 1.0, 0.75, 0.5, 0.25])
    assert lr_lambda("cosine", 0, 4)(2) == pytest.approx(0.5)  # half-way down a half cosine
    assert lr_lambda("cosine", 0, 4)(4) == pytest.approx(0.0)
    assert lr_lambda("constant", 0, 4)(3) == 1.0
    assert lr_lambda("linear", 4, 4)(9) == 1.0  # no steps after the warm-up: constant


def test_adamw_and_its_schedule_read_the_settings():
    weight = torch.nn.Parameter(torch.ones(2))
    settings = OptimSettings(learning_rate=0.1, weight_decay=0.01, lr_scheduler_type="linear", warmup_steps=0)
    optimizer = adamw([weight], settings)
    assert optimizer.defaults["lr"] == 0.1 and optimizer.defaults["weight_decay"] == 0.01
    schedule = lr_schedule(optimizer, settings, total_steps=4)
    rates = []
    for _ in range(4):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert rates == pytest.approx([0.1, 0.075, 0.05, 0.025])
