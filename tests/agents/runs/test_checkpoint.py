"""Checkpoints: atomic, the newest ``keep`` kept, ``latest`` never names a half-written folder."""

import json
import random

import numpy as np
import pytest
import torch

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
