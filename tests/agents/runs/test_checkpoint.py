"""Checkpoints: atomic, the newest ``keep`` kept, ``latest`` never names a half-written folder."""

import datetime
import json
import os
import random
import re
import shlex
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from agents.runs import checkpoint as ckpt


def test_round_trip_and_pruning(tmp_path):
    for step in (1, 2, 3):
        ckpt.save_checkpoint(tmp_path, step, {"w": torch.full((2,), float(step))}, {"note": step}, keep=2)
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("step_*")) == ["step_2", "step_3"]
    assert ckpt.latest_checkpoint(tmp_path) == tmp_path / "checkpoints" / "step_3"
    step, weights, state = ckpt.load_checkpoint(tmp_path)
    assert (step, weights["w"].tolist(), state["note"]) == (3, [3.0, 3.0], 3)


def test_a_write_that_fails_leaves_the_previous_checkpoint_latest(tmp_path, monkeypatch):
    ckpt.save_checkpoint(tmp_path, 1, {"w": torch.ones(1)}, {})

    def killed(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(ckpt.torch, "save", killed)
    with pytest.raises(OSError, match="disk full"):
        ckpt.save_checkpoint(tmp_path, 2, {"w": torch.zeros(1)}, {})
    assert ckpt.latest_checkpoint(tmp_path).name == "step_1"
    assert [p.name for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith(".step")] == []  # no staging left


def test_no_checkpoint_is_an_error_naming_the_folder(tmp_path):
    assert ckpt.latest_checkpoint(tmp_path) is None
    with pytest.raises(FileNotFoundError, match="no checkpoint in"):
        ckpt.load_checkpoint(tmp_path)


def test_rng_state_puts_every_generator_back():
    numpy_generator, torch_generator = np.random.default_rng(0), torch.Generator().manual_seed(0)
    saved = ckpt.rng_state(numpy_generator, torch_generator)
    first = (random.random(), np.random.rand(), numpy_generator.random(), torch.rand(1).item(),
             torch.rand(1, generator=torch_generator).item())  # fmt: skip
    ckpt.restore_rng_state(saved, numpy_generator, torch_generator)
    again = (random.random(), np.random.rand(), numpy_generator.random(), torch.rand(1).item(),
             torch.rand(1, generator=torch_generator).item())  # fmt: skip
    assert again == first


def test_truncate_jsonl_drops_records_after_the_step(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s}) + "\n" for s in range(5)))
    ckpt.truncate_jsonl(path, 2)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [0, 1, 2]
    ckpt.truncate_jsonl(tmp_path / "missing.jsonl", 2)  # nothing to do


class _RunsShell:
    """Pickles as a call to ``os.system``: what a crafted ``state.pt`` runs when unpickled freely."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def _plant_malicious_checkpoint(run, marker):
    folder = run / "checkpoints" / "step_1"
    folder.mkdir(parents=True)
    save_file({"w": torch.ones(1)}, str(folder / "weights.safetensors"))
    torch.save({"step": 1, "payload": _RunsShell(f"touch {shlex.quote(str(marker))}")}, folder / "state.pt")
    (run / "checkpoints" / "latest").write_text("step_1\n")


def test_a_crafted_state_pt_is_refused_without_running_its_payload(tmp_path):
    marker = tmp_path / "pwned"
    _plant_malicious_checkpoint(tmp_path / "run", marker)
    with pytest.raises(ckpt.CheckpointError, match=r"state\.pt cannot be loaded safely.*\(GLOBAL (posix|nt)\.system\)"):
        ckpt.load_checkpoint(tmp_path / "run")
    assert not marker.exists()


def test_eval_of_a_run_with_a_crafted_checkpoint_fails_without_running_it(tmp_path, capsys):
    from agents.cli.app import main

    marker = tmp_path / "pwned"
    _plant_malicious_checkpoint(tmp_path / "run", marker)
    assert main(["eval", "--run", str(tmp_path / "run"), "--episodes", "1"]) == 1
    assert "cannot be loaded safely" in capsys.readouterr().err
    assert not marker.exists()


def test_an_old_format_state_with_numpy_rng_arrays_is_read_safely_and_restores_exactly(tmp_path):
    numpy_generator = np.random.default_rng(0)
    old_rng = {  # as checkpoints held it before: numpy's legacy state as a tuple with an array
        "python": random.getstate(),
        "numpy_global": np.random.get_state(),
        "numpy_generator": numpy_generator.bit_generator.state,
        "torch": torch.get_rng_state(),
        "torch_generator": None,
    }
    folder = tmp_path / "checkpoints" / "step_1"
    folder.mkdir(parents=True)
    save_file({"w": torch.ones(1)}, str(folder / "weights.safetensors"))
    torch.save({"step": 1, "rng": old_rng}, folder / "state.pt")
    first = (random.random(), np.random.randn(), numpy_generator.random(), torch.rand(1).item())
    _, _, state = ckpt.load_checkpoint(tmp_path)
    ckpt.restore_rng_state(state["rng"], numpy_generator, None)
    assert (random.random(), np.random.randn(), numpy_generator.random(), torch.rand(1).item()) == first


def test_a_state_with_other_objects_is_refused_naming_the_global(tmp_path):
    folder = tmp_path / "checkpoints" / "step_1"
    folder.mkdir(parents=True)
    save_file({"w": torch.ones(1)}, str(folder / "weights.safetensors"))
    torch.save({"step": 1, "when": datetime.date(2026, 1, 1)}, folder / "state.pt")
    with pytest.raises(ckpt.CheckpointError, match=r"cannot be loaded safely.*\(GLOBAL datetime.date\)"):
        ckpt.load_checkpoint(tmp_path)


def test_rng_states_survive_a_safe_save_and_load(tmp_path):
    numpy_generator, torch_generator = np.random.default_rng(0), torch.Generator().manual_seed(0)
    ckpt.save_checkpoint(tmp_path, 1, {}, {"rng": ckpt.rng_state(numpy_generator, torch_generator)})
    first = (random.random(), np.random.rand(), np.random.randn(), numpy_generator.random(), torch.rand(1).item(),
             torch.rand(1, generator=torch_generator).item())  # fmt: skip
    _, _, state = ckpt.load_checkpoint(tmp_path)
    ckpt.restore_rng_state(state["rng"], numpy_generator, torch_generator)
    again = (random.random(), np.random.rand(), np.random.randn(), numpy_generator.random(), torch.rand(1).item(),
             torch.rand(1, generator=torch_generator).item())  # fmt: skip
    assert again == first


@pytest.mark.parametrize("pointer", ["step_9", "../../../../etc", "step_1/../../../x", ""])
def test_a_bad_latest_pointer_falls_back_to_the_newest_step_folder(tmp_path, pointer, capsys):
    for step in (1, 2):
        ckpt.save_checkpoint(tmp_path, step, {"w": torch.full((1,), float(step))}, {})
    (tmp_path / "checkpoints" / "latest").write_text(pointer + "\n")
    checkpoint = ckpt.read_checkpoint(tmp_path)
    assert (checkpoint.folder.name, checkpoint.step, checkpoint.weights["w"].tolist()) == ("step_2", 2, [2.0])
    assert len(checkpoint.skipped) == 1 and "latest names" in checkpoint.skipped[0]
    assert ckpt.latest_checkpoint(tmp_path) == tmp_path / "checkpoints" / "step_2"
    assert ckpt.load_checkpoint(tmp_path)[0] == 2
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and "step_2 (step 2); skipped:" in printed


@pytest.mark.parametrize("name", ["state.pt", "weights.safetensors"])
def test_a_truncated_file_is_named_and_the_previous_checkpoint_is_used(tmp_path, name):
    for step in (1, 2):
        ckpt.save_checkpoint(tmp_path, step, {"w": torch.full((4,), float(step))}, {"note": step})
    torn = tmp_path / "checkpoints" / "step_2" / name
    torn.write_bytes(torn.read_bytes()[: torn.stat().st_size // 2])
    checkpoint = ckpt.read_checkpoint(tmp_path)
    assert (checkpoint.step, checkpoint.state["note"], checkpoint.weights["w"].tolist()) == (1, 1, [1.0] * 4)
    assert len(checkpoint.skipped) == 1 and str(torn) in checkpoint.skipped[0] and "truncated" in checkpoint.skipped[0]
    shutil.rmtree(tmp_path / "checkpoints" / "step_1")  # nothing to fall back to: the error names the file
    with pytest.raises(ckpt.CheckpointError, match=re.escape(str(torn))):
        ckpt.load_checkpoint(tmp_path)


def test_folders_not_named_step_n_are_ignored_when_saving_and_loading(tmp_path):
    for step in (1, 2):
        ckpt.save_checkpoint(tmp_path, step, {"w": torch.ones(1)}, {})
    backup = tmp_path / "checkpoints" / "step_2.bak"
    shutil.copytree(tmp_path / "checkpoints" / "step_2", backup)
    (tmp_path / "checkpoints" / "step_x").mkdir()
    ckpt.save_checkpoint(tmp_path, 3, {"w": torch.ones(1)}, {})
    assert ckpt.latest_checkpoint(tmp_path).name == "step_3" and backup.is_dir()
    assert [step for step, _ in ckpt.step_folders(tmp_path / "checkpoints")] == [2, 3]


def test_truncate_jsonl_drops_a_half_written_last_line_and_keeps_the_rest(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\n{"step": 1}\n{"step": 2}\n{"step": 3, "lo')
    ckpt.truncate_jsonl(path, 2)
    assert path.read_text() == '{"step": 0}\n{"step": 1}\n{"step": 2}\n'
    path.write_text('{"step": 0}\nnot json\n{"step": 1}\n{"step"')  # a torn line mid-file is not ours to delete
    ckpt.truncate_jsonl(path, 0)
    assert path.read_text() == '{"step": 0}\nnot json\n'


def test_a_checkpoint_that_loads_but_does_not_fit_is_passed_over_for_the_previous(tmp_path):
    like = {"w": torch.zeros(2)}
    keys = ("optimizer",)
    ckpt.save_checkpoint(tmp_path, 1, {"w": torch.ones(2)}, {"optimizer": {"lr": 1}}, keep=5)
    ckpt.save_checkpoint(tmp_path, 2, {"w": torch.ones(2)}, {}, keep=5)  # no optimizer state
    found = ckpt.read_checkpoint(tmp_path, weights_like=like, state_keys=keys)
    assert found.step == 1 and "lacks ['optimizer']" in found.describe()
    ckpt.save_checkpoint(tmp_path, 3, {"w": torch.ones(3)}, {"optimizer": {}}, keep=5)  # wrong shape
    ckpt.save_checkpoint(tmp_path, 4, {"v": torch.ones(2)}, {"optimizer": {}}, keep=5)  # another model's names
    found = ckpt.read_checkpoint(tmp_path, weights_like=like, state_keys=keys)
    assert found.step == 1
    assert "w has shape (3,), this model's (2,)" in found.describe() and "unexpected: ['v']" in found.describe()
    assert ckpt.read_checkpoint(tmp_path).step == 4  # without expectations: the newest that loads
    shutil.rmtree(tmp_path / "checkpoints" / "step_1")
    with pytest.raises(ckpt.CheckpointError, match="can be loaded"):
        ckpt.read_checkpoint(tmp_path, weights_like=like, state_keys=keys)


def test_records_nested_too_deep_are_lines_that_are_not_records(tmp_path):
    from agents.runs.resume import saved_run

    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "metrics.jsonl"
    path.write_text(f'{{"step": 1}}\n{deep}\n{{"step": 2}}\n')
    ckpt.truncate_jsonl(path, 1)  # no RecursionError: the deep line is kept as a line that is no record
    assert path.read_text().splitlines() == ['{"step": 1}', deep]
    (tmp_path / "config.json").write_text(deep)
    assert saved_run(tmp_path) is None
