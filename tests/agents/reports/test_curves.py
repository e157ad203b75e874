import json
import math

import pytest

from agents.reports.curves import episode_outcomes, load_run, mean_interval, smooth, wilson_interval


def test_smooth_is_tensorboards_debiased_ema():
    # w = 0.6: m1 = 0.4·1 = 0.4 -> 0.4 / 0.4 = 1; m2 = 0.24 + 0.4·3 = 1.44 -> 1.44 / 0.64 = 2.25
    assert smooth([1.0, 3.0], 0.6) == pytest.approx([1.0, 2.25])
    assert smooth([2.0, 5.0, -1.0], 0.0) == [2.0, 5.0, -1.0]
    assert smooth([]) == []
    out = smooth([1.0, math.nan, 3.0], 0.6)
    assert math.isnan(out[1]) and out[2] == pytest.approx(2.25)  # the gap does not enter the average
    with pytest.raises(ValueError, match="smoothing weight must be in"):
        smooth([1.0], 1.0)


def test_wilson_interval_hand_computed():
    # 0 of 4: centre = (z²/8) / (1 + z²/4) = 0.480182 / 1.960365 = 0.244945; half the same: [0, 0.489891]
    low, high = wilson_interval(0, 4)
    assert low == 0.0 and high == pytest.approx(0.489891, abs=1e-5)
    low, high = wilson_interval(4, 4)
    assert low == pytest.approx(1 - 0.489891, abs=1e-5) and high == 1.0
    with pytest.raises(ValueError, match="trials >= 1"):
        wilson_interval(1, 0)
    with pytest.raises(ValueError, match="successes <= trials"):
        wilson_interval(5, 4)


def test_mean_interval_hand_computed():
    # [0, 1, 1, 2]: mean 1, sample std sqrt(2/3), se sqrt(2/3)/2 = 0.40825 -> ± 0.80015
    mean, low, high = mean_interval([0.0, 1.0, 1.0, 2.0])
    assert mean == 1.0 and low == pytest.approx(1 - 0.800152, abs=1e-5) and high == pytest.approx(1.800152, abs=1e-5)
    assert mean_interval([0.5]) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match="at least one value"):
        mean_interval([])


def write_run(folder, records, episodes=None, eval_episodes=4):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(
        json.dumps({"model": "m", "env": "E-v0", "config": {"credit": "taspo", "eval_episodes": eval_episodes}})
    )
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    for step, outcomes in (episodes or {}).items():
        groups = [
            {"task_id": str(i), "group_id": i, "trajectories": [{"success": won, "score": score, "turns": []}]}
            for i, (won, score) in enumerate(outcomes)
        ]
        (folder / "trajectories").mkdir(exist_ok=True)
        (folder / "trajectories" / f"eval_step_{step}.jsonl").write_text("".join(json.dumps(g) + "\n" for g in groups))


def test_held_out_points_take_their_intervals_from_the_episodes_or_the_configs_episode_count(tmp_path):
    records = [
        {"step": 0, "eval/success_rate": 0.5, "eval/mean_score": 1.0},
        {
            "step": 1,
            "train/mean_reward": 0.2,
            "advantage_abs_mean": 0.3,
            "taspo/pi_coverage": 0.5,
            "taspo/weight_min": 0.7,
        },
        {"step": 2, "eval/success_rate": 0.0, "eval/mean_score": 0.25},
    ]
    write_run(tmp_path / "run", records, {0: [(True, 2.0), (False, 0.0), (True, 1.0), (False, 1.0)]})
    run = load_run(tmp_path / "run")
    assert run.name == "run" and run.rule == "taspo"
    first, second = run.held_out
    assert first.step == 0 and first.episodes == 4 and first.success_interval == pytest.approx(wilson_interval(2, 4))
    assert first.score_interval == pytest.approx(mean_interval([2.0, 0.0, 1.0, 1.0])[1:])
    # No episodes file for step 2: the rate and config.eval_episodes give the success interval, score none.
    assert second.success_interval == pytest.approx(wilson_interval(0, 4)) and second.score_interval is None
    assert run.series("train/mean_reward") == ([1], [0.2])
    assert run.credit_activity_keys() == ["advantage_abs_mean", "taspo/pi_coverage"]  # weight_min is no share


def test_a_running_runs_half_written_files_and_a_missing_config_still_load(tmp_path):
    folder = tmp_path / "live"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text('{"step": 0, "eval/success_rate": 0.25}\n{"step": 1, "train/mean')
    run = load_run(folder)
    assert [r["step"] for r in run.records] == [0] and run.settings == {} and run.rule == ""
    assert run.held_out[0].success_interval is None  # no episode count known
    (folder / "trajectories").mkdir()
    (folder / "trajectories" / "eval_step_0.jsonl").write_text(
        '{"task_id": "a", "group_id": 0, "trajectories": [{"success": true, "score": 1.0}]}\n{"task_'
    )
    assert episode_outcomes(folder / "trajectories" / "eval_step_0.jsonl") == [(True, 1.0)]
    with pytest.raises(NotADirectoryError, match="does not exist"):
        load_run(tmp_path / "nowhere")
