"""The credit-quality benchmark: its figures by hand-computed cases, its files, a tiny end-to-end run."""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.rollout import RolloutBatch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import credit_quality  # noqa: E402


def test_spearman_hand_computed_with_ties():
    # ranks x = [1, 2.5, 2.5, 4], y = [1, 2, 3, 4]: cov 4.5, var 4.5 and 5 -> 4.5 / sqrt(22.5)
    assert credit_quality.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert credit_quality.spearman([3, 2, 1], [1, 2, 3]) == pytest.approx(-1.0)


def test_spearman_is_undefined_for_a_flat_side_and_float_dust_is_flat():
    assert math.isnan(credit_quality.spearman([1, 1, 1], [1, 2, 3]))
    assert math.isnan(credit_quality.spearman([1, 2], [0.0, -1.5e-9]))
    assert math.isnan(credit_quality.spearman([1], [2]))


def test_within_trajectory_rho_hand_computed():
    credit = np.array([1, 1, 1, 3, 2, 1, 5, 6, 9])
    reference = np.array([0, -1, 0, -1, 0, -0.5, 0, 0, -1])
    trajectories = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3])
    rhos = credit_quality.trajectory_rhos(credit, reference, trajectories)
    # 0: flat credit orders nothing -> 0; 1: ranks (3, 2, 1) vs (1, 3, 2): 1 - 6 * 6 / (3 * 8) = -0.5;
    # 2: flat reference and 3: one turn -> not ranked
    assert rhos == {0: 0.0, 1: pytest.approx(-0.5)}
    figures = credit_quality.quality(credit, reference, trajectories, threshold=0.1)
    assert figures["within"] == pytest.approx(-0.25)


def test_sign_agreement_counts_zero_and_dust_as_disagreeing():
    credit = np.array([0.5, -0.2, 0.0, 1e-9, -3.0])
    reference = np.array([0.3, -0.5, -0.4, -0.2, 0.05])  # the last is under the threshold
    assert credit_quality.sign_agreement(credit, reference, 0.1) == pytest.approx(0.5)
    assert math.isnan(credit_quality.sign_agreement(credit, reference, 10.0))


def test_bootstrap_interval_collapses_when_every_trajectory_agrees_and_brackets_the_estimate():
    trajectories = np.repeat(np.arange(6), 3)
    reference = np.tile([0.0, -0.5, -1.0], 6)
    intervals = credit_quality.bootstrap(reference * 2, reference, trajectories, threshold=0.1, resamples=50)
    assert intervals["within"] == (1.0, 1.0) and intervals["sign"] == (1.0, 1.0)
    rng = np.random.default_rng(0)
    noisy = reference + rng.normal(0, 0.5, len(reference))
    point = credit_quality.quality(noisy, reference, trajectories, threshold=0.1)
    intervals = credit_quality.bootstrap(noisy, reference, trajectories, threshold=0.1, resamples=200)
    for metric in credit_quality.METRICS:
        low, high = intervals[metric]
        assert low <= point[metric] <= high


class _Batch:
    """The fields turn_means reads, and RolloutBatch's own action mask over them."""

    action_mask = RolloutBatch.action_mask

    def __init__(self, response_mask, action_token_spans):
        self.response_mask, self.action_token_spans = response_mask, action_token_spans
        self.response_ids = torch.zeros_like(response_mask)


def test_turn_means_over_the_action_tokens_else_the_response():
    batch = _Batch(torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]), torch.tensor([[1, 3], [-1, -1]]))
    values = torch.tensor([[1.0, 2.0, 3.0, 100.0], [4.0, 5.0, 6.0, 7.0]])
    assert credit_quality.turn_means(values, batch) == [2.5, 5.5]


def batch_file(folder: Path, index: int, credit: dict, reference: list, trajectory: list, shift=None) -> None:
    turns = [{"trajectory": t, "won": False} for t in trajectory]
    record = {
        "env": "WebShop-v0",
        "turns": turns,
        "references": {"expert": {"advantage": reference}, "mc": {"advantage": [-r for r in reference]}},
        "credit": credit,
        "shift": shift or {},
    }
    (folder / f"batch_{index:03d}.json").write_text(json.dumps(record))


def test_report_joins_batches_with_distinct_trajectories_and_writes_its_files(tmp_path):
    folder = tmp_path / "webshop"
    folder.mkdir()
    reference = [0.0, -1.0, -0.5, 0.0]
    batch_file(folder, 0, {"grpo": [1, 1, -1, -1], "gigpo": [2, 0, 1, 3]}, reference, [0, 0, 1, 1])
    batch_file(
        folder, 1, {"grpo": [1, 1, -1, -1], "gigpo": [2, 0, 1, 3]}, reference, [0, 0, 1, 1], shift={"gigpo": [None] * 4}
    )
    turns = credit_quality.load_turns(folder)
    assert turns is not None
    assert turns.trajectories.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert list(turns.credits) == ["grpo", "gigpo"]  # QUALITY_RULES' order
    assert turns.shifts == {}  # only one batch has a shift for it
    results = credit_quality.report(argparse.Namespace(output=str(tmp_path), threshold=0.1, resamples=20))
    table = results["envs"]["WebShop-v0"]["table"]["credit"]
    assert table["grpo"]["expert"]["within"]["value"] == 0.0  # flat within every trajectory
    assert table["gigpo"]["expert"]["within"]["value"] == pytest.approx(1.0)  # (2, 0) vs (0, -1); (1, 3) vs (-0.5, 0)
    assert table["gigpo"]["mc"]["within"]["value"] == pytest.approx(-1.0)
    assert {path.name for path in tmp_path.iterdir()} >= {"results.md", "results.json", "credit_quality.png"}
    assert "| gigpo | 8 |" in (tmp_path / "results.md").read_text()


@pytest.mark.slow
def test_collect_with_the_tiny_model_then_resume_skips_the_batch_on_disk(tmp_path, monkeypatch):
    arguments = [
        "collect",
        "--preset",
        "webshop",
        "--warm-start",
        "tiny-random-qwen3",
        "--batches",
        "1",
        "--groups",
        "1",
        "--group-size",
        "2",
        "--mc-samples",
        "1",
        "--vine-samples",
        "1",
        "--rules",
        "grpo",
        "gigpo",
        "taspo",
        "orsd_env",
        "vine",
        "--output",
        str(tmp_path),
    ]
    credit_quality.main(arguments)
    record = json.loads((tmp_path / "webshop" / "batch_000.json").read_text())
    rows = len(record["turns"])
    assert rows >= 2 and set(record["credit"]) == {"grpo", "gigpo", "taspo", "orsd_env", "vine"}
    assert all(len(values) == rows for values in record["credit"].values())
    for reference in record["references"].values():
        assert len(reference["advantage"]) == rows and reference["states"] >= 1
    # the tiny model's actions are invalid: the expert's turn values are r_t + V(s_{t+1}) - V(s_t)
    expert = record["references"]["expert"]
    for turn, advantage in enumerate(expert["advantage"]):
        expected = record["turns"][turn]["reward"] + expert["value_after"][turn] - expert["value_before"][turn]
        assert advantage == pytest.approx(expected, abs=1e-5)
    assert set(record["shift"]) >= {"taspo", "orsd_env"}

    def refuse(*args, **kwargs):
        raise AssertionError("a finished batch was measured again")

    monkeypatch.setattr(credit_quality, "measure_batch", refuse)
    credit_quality.main(arguments)  # resumed: nothing left to do
    with pytest.raises(AssertionError, match="measured again"):
        credit_quality.main([*arguments[:-1], str(tmp_path), "--mc-samples", "2"])  # other settings: measured anew


def test_values_within_the_tolerance_tie_and_a_flat_credit_with_dust_ranks_nothing():
    assert credit_quality.tied([0.3, 0.1 + 1e-7, 0.1, 4e-7]).tolist() == [0.3, 0.1, 0.1, 0.0]
    credit = np.array([0.84086096, 0.84086102, 0.84086096])  # one A_i, summed in float32 over different spans
    reference = np.array([0.0, -0.25, -0.1])
    assert credit_quality.trajectory_rhos(credit, reference, np.zeros(3, dtype=int)) == {0: 0.0}
