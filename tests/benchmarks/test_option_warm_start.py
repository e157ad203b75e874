"""The option warm-start study: its option turns are the expert's right clicks, its decision the pre-registered one."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import option_warm_start  # noqa: E402
from option_turns import webshop_goal_options  # noqa: E402
from warm_start_turns import turn_kind  # noqa: E402

from agents.sft import SFTConfig  # noqa: E402


def test_further_option_turns_are_the_experts_right_clicks_one_goal_each_from_the_training_splits():
    config = SFTConfig.for_env("WebShop-v0")
    demonstrations, sources = option_warm_start.option_turn_demonstrations(40, config)
    assert len(demonstrations) == 40 and all(turn_kind(d) == "option" for d in demonstrations)
    assert sources == [{"generator_seed": 0, "goals_played": 64}]  # one chunk of the recipe's shop
    wanted = webshop_goal_options(config.env_kwargs_with_limit())
    for demonstration in demonstrations:
        value = demonstration.response.removeprefix("click[").removesuffix("]").lower()
        assert value in {v.lower() for v in wanted(demonstration.task_id)}
    assert len({d.task_id for d in demonstrations}) == 40  # each goal once (one option a goal)
    # More than the recipe's shop holds: the next generated shop's training split follows.
    more, sources = option_warm_start.option_turn_demonstrations(250, config)
    assert len(more) == 250 and [s["generator_seed"] for s in sources] == [0, 1]
    assert more[:40] == demonstrations


def record(count, seconds, best, turns=80, chance=0.4, success=0.1):
    options = {"turns": turns, "expert_best_value_count": best, "chance": chance}
    evaluation = {"eval/success_rate": success}
    return {"count": count, "sft_seconds": seconds, "turns": {"options": options}, "evaluation": evaluation}


@pytest.mark.parametrize(
    ("records", "answer"),
    [
        # 44 of 80 is 0.55, Wilson [0.44, 0.65]: above chance 0.40, and 100 s more than N = 0.
        ([record(0, 100, 32), record(128, 200, 44)], "N = 128 lifts the choice clearly above chance within"),
        # 40 of 80 is 0.50 with the interval [0.39, 0.61]: not clearly above 0.40.
        ([record(0, 100, 32), record(128, 200, 40)], "no count in [0, 128] lifts"),
        # Lifted only at a cost above the stage's 150 s allowance.
        (
            [record(0, 100, 32), record(128, 200, 40), record(512, 400, 60)],
            "N = 512 lifts it, but its SFT stage takes 300 s more",
        ),
        ([record(128, 200, 60)], "not measured yet"),
    ],
)
def test_the_decision_is_the_pre_registered_rule(records, answer):
    assert answer in option_warm_start.decide(records)


@pytest.mark.parametrize(
    ("records", "chosen"),
    [
        ([record(0, 100, 32), record(128, 200, 44), record(512, 240, 60)], 128),  # the smallest that lifts and fits
        # None lifts: the fitting count with the best tuning success, if above N = 0's (the 512 does not fit).
        (
            [record(0, 100, 32, success=0.14), record(128, 200, 36, success=0.22), record(512, 400, 70, success=0.5)],
            128,
        ),
        ([record(0, 100, 32, success=0.14), record(128, 200, 36, success=0.14)], None),  # no better: no report runs
        ([record(128, 200, 60)], None),
    ],
)
def test_the_report_set_compares_the_pre_registered_count(records, chosen):
    assert option_warm_start.chosen_count(records) == chosen


def test_the_report_set_gain_is_paired_by_seed():
    def run(count, seed, success):
        evaluation = {"eval/success_rate": success, "eval/mean_score": 0.6, "eval/invalid_rate": 0.05}
        return {
            "count": count,
            "seed": seed,
            "evaluation": evaluation,
            "option_clicks": {"right": 1, "clicks": 4},
            "sft_seconds": 10.0,
        }

    # Gains 0.10, 0.20, 0.30: mean 0.200, t(2) 4.303 x 0.1 / sqrt(3) = 0.248.
    records = [run(0, s, 0.1) for s in range(3)] + [run(128, s, 0.2 + 0.1 * s) for s in range(3)]
    text = "\n".join(option_warm_start.report_set_lines(records))
    assert "| 128 | 3 | 0.300 ± 0.248 | 0.600 ± 0.000 | 0.050 ± 0.000 | 3 / 12 | 10 |" in text
    assert "N = 128 against N = 0, success paired by seed: **+0.200 ± 0.248** (3 seeds)" in text


def test_episode_outcomes_count_buys_wins_and_turn_patterns(tmp_path):
    from agentenvs.core.trajectory import Trajectory, Turn, write_jsonl

    def episode(steps, success, score):
        turns = [Turn("", "", action, None, 0.0, valid, {}) for action, valid in steps]
        return Trajectory("1", 0, turns, success, score)

    won = episode(
        [("search[red]", True), ("click[B01]", True), ("click[red]", True), ("click[Buy Now]", True)], True, 1.0
    )
    partial = episode([("search[red]", True), ("click[B02]", True), ("click[Buy Now]", True)], False, 0.5)
    looped = episode([("search[red]", True), ("click[B01]", True), ("click[red", False)], False, 0.0)
    (tmp_path / "trajectories").mkdir()
    write_jsonl(tmp_path / "trajectories" / "eval_step_2.jsonl", [looped])  # an earlier evaluation: not read
    write_jsonl(tmp_path / "trajectories" / "eval_step_10.jsonl", [won, partial, looped])
    assert option_warm_start.episode_outcomes(tmp_path) == {
        "episodes": 3,
        "bought": 2,
        "won": 1,
        "bought_mean_score": 0.75,
        "patterns": {"SccB": 1, "ScB": 1, "Scx": 1},
    }
    assert option_warm_start.episode_outcomes(tmp_path / "none") is None
