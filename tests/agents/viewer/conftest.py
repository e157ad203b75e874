"""Two real runs for the viewer tests, made once per module by tiny-model ``learn()``.

``probe`` trains with a test credit rule whose per-token advantage, Δ and weight are distinct
known functions of (row, token), so a page can be checked against the exact values logged;
``plain`` is a one-step GRPO run to overlay it with. ``run_folder`` is a small hand-made run
(a TASPO step's records, metrics with a half-written last line, a torn held-out file).
"""

from __future__ import annotations

import json

import pytest
import torch

from agents import GRPOAgent, GRPOConfig
from agents.algorithms.base import CreditResult, CreditRule
from agents.runs.credit_record import credit_records, write_step
from tests.agents.runs.test_credit_record import chars, taspo_step
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


@pytest.fixture()
def run_folder(tmp_path):
    batch, credit = taspo_step()
    folder = tmp_path / "taspo-run"
    write_step(folder, 1, credit_records(batch, credit, step=1, rule="taspo", groups=2, decode=chars))
    (folder / "config.json").write_text(json.dumps({"model": "m", "env": "E-v0", "config": {"credit": "taspo"}}))
    (folder / "metrics.jsonl").write_text(
        json.dumps({"step": 0, "eval/success_rate": 0.5})
        + "\n"
        + json.dumps({"step": 1, "train/mean_reward": 0.2, "taspo/pi_coverage": 0.5, "advantage_abs_mean": 0.3})
        + "\n"
        + '{"step": 2, "train/mea'  # a running trainer's half-written line
    )
    (folder / "trajectories").mkdir()
    episodes = [
        {
            "task_id": f"t{i}",
            "group_id": i,
            "trajectories": [
                {
                    "task_id": f"t{i}",
                    "group_id": i,
                    "success": i == 1,
                    "score": float(i == 1),
                    "task": "find",
                    "turns": [
                        {
                            "observation": "o",
                            "raw_output": "<action>look</action>",
                            "action": "look",
                            "action_span": {"start": 8, "end": 12, "token_start": None, "token_end": None},
                            "reward": 0.0,
                            "valid": True,
                            "info": {},
                        }
                    ],
                }
            ],
        }
        for i in range(3)
    ]
    lines = "".join(json.dumps(e) + "\n" for e in episodes)
    (folder / "trajectories" / "eval_step_1.jsonl").write_text(lines + lines[:40])  # torn last episode
    return folder
