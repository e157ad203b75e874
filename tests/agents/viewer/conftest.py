"""Two real runs for the viewer tests, made once per module by tiny-model ``learn()``.

``probe`` trains with a test credit rule whose per-token advantage, Δ and weight are distinct
known functions of (row, token), so a page can be checked against the exact values logged;
``plain`` is a one-step GRPO run to overlay it with.
"""

from __future__ import annotations

import pytest
import torch

from agents import GRPOAgent, GRPOConfig
from agents.algorithms.base import CreditResult, CreditRule
from tests.support.rules import registered_rule

PROBE = "viewer_probe"


def probe_values(rows: int, width: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Advantage, Δ and weight of token t of row r (before masking): signed, all different."""
    row = torch.arange(rows, dtype=torch.float32)[:, None]
    token = torch.arange(width, dtype=torch.float32)[None, :]
    return 0.5 - 0.25 * row + 0.125 * token, 0.01 * token - 0.03 * row, 1.0 + 0.05 * token - 0.1 * (row % 2)


class ViewerProbe(CreditRule):
    def compute(self, batch, context):
        mask = batch.response_mask.float()
        advantage, delta, weight = (values * mask for values in probe_values(*mask.shape))
        return CreditResult(
            advantage,
            token_values={"delta": delta, "weight": weight},
            row_info={"privileged": [f"PI of row {row}" if row % 2 == 0 else None for row in range(len(batch))]},
            trajectory_values={"advantage": torch.arange(len(batch.trajectories), dtype=torch.float32) - 0.5},
        )


def _learn(tiny_model_path, output_dir, *, credit, steps, seed):
    config = GRPOConfig(
        credit=credit,
        num_groups=2,
        group_size=2,
        max_new_tokens=6,
        env_kwargs={"max_turns": 2},
        eval_every=1,
        eval_episodes=2,
        save_every=0,
        record_groups=2,
        output_dir=str(output_dir),
        progress=False,
        tensorboard=False,
        seed=seed,
    )
    agent = GRPOAgent(model=str(tiny_model_path), env="SearchQA-v0", config=config)
    try:
        agent.learn(steps, plot=False)
    finally:
        agent.close()
    return output_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("viewer-runs")
    with registered_rule(PROBE, ViewerProbe):
        probe = _learn(tiny_model_path, root / "probe", credit=PROBE, steps=1, seed=0)
    plain = _learn(tiny_model_path, root / "plain", credit="grpo", steps=1, seed=1)
    return probe, plain
