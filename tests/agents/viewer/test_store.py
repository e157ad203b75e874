from pathlib import Path

import pytest

from agents.runs.credit_record import write_step
from agents.viewer.store import NotRecorded, RunStore, UnknownRun, run_names


def test_names_are_url_safe_and_distinct(tmp_path):
    folders = [tmp_path / "a" / "rl", tmp_path / "b" / "rl", tmp_path / "my run!", tmp_path / "a" / "rl"]
    assert run_names(folders) == ["a-rl", "b-rl", "my_run_", "a-rl-2"]


def test_a_missing_folder_or_none_is_an_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match="run folder .*nowhere.* does not exist"):
        RunStore([tmp_path / "nowhere"])
    with pytest.raises(ValueError, match="at least one run folder"):
        RunStore([])


def test_steps_evaluations_and_records_come_from_fixed_names_only(tmp_path):
    run = tmp_path / "run"
    write_step(run, 3, [{"member": 0}, {"member": 1}])
    (run / "trajectories").mkdir()
    (run / "trajectories" / "eval_step_0.jsonl").write_text(
        '{"task_id": "t", "group_id": 0, "trajectories": [{"task_id": "t", "success": true, "turns": []}]}\n'
    )
    (run / "trajectories" / "eval_step_x.jsonl").write_text("ignored\n")
    store = RunStore([run])
    found = store.get("run")
    assert found.recorded_steps() == [3] and found.evaluation_steps() == [0]
    assert found.trajectory_record(3, 1) == {"member": 1, "values": {}, "turns": []}  # checked, defaults filled
    assert found.evaluation(0).records[0]["success"] is True
    with pytest.raises(NotRecorded, match=r"no credit record for step 4 \(recorded: 3\)"):
        found.step_records(4)
    with pytest.raises(NotRecorded, match="trajectories 0 to 1, not 2"):
        found.trajectory_record(3, 2)
    with pytest.raises(NotRecorded, match=r"no held-out trajectories for step 5 \(evaluated: 0\)"):
        found.evaluation(5)
    with pytest.raises(UnknownRun, match=r"Unknown run '\.\./run'"):
        store.get("../run")
    assert found.settings() == {} and found.credit_examples(3).records == []
    assert Path(found.folder).is_absolute()
