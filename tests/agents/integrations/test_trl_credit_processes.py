"""Groups split across processes: two CPU processes (gloo) give the advantages of one, for TASPO and
GiGPO over two training steps.

``accelerate launch --cpu`` always starts one process (its simple launcher), whatever
``--num_processes`` says; ``--multi_gpu --num_processes 2`` starts two through torchrun, and on a
machine without GPUs (``GRPOConfig(use_cpu=True)``) accelerate runs them as ``MULTI_CPU`` over gloo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("trl")

SCRIPT = Path(__file__).resolve().parents[2] / "support" / "trl_two_process.py"
REPO = SCRIPT.parents[2]


def launch(processes: int, model: Path, output: Path) -> None:
    several = ["--multi_gpu"] if processes > 1 else []
    command = [
        sys.executable, "-m", "accelerate.commands.launch", *several, "--num_processes", str(processes),
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", str(SCRIPT), str(model), str(output),
    ]  # fmt: skip
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]


def advantages(folder: Path, rule: str, rank: int) -> list[torch.Tensor]:
    return [torch.tensor(step["advantages"]) for step in json.loads((folder / f"{rule}-rank{rank}.json").read_text())]


@pytest.mark.slow
def test_two_processes_give_the_advantages_of_one(tiny_model_path, tmp_path):
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch has no gloo backend here, so accelerate cannot start two CPU processes")
    launch(1, tiny_model_path, tmp_path / "one")
    launch(2, tiny_model_path, tmp_path / "two")
    for rule in ("taspo", "gigpo"):
        one = advantages(tmp_path / "one", rule, 0)
        first, second = advantages(tmp_path / "two", rule, 0), advantages(tmp_path / "two", rule, 1)
        assert len(one) == len(first) == len(second) == 2  # two training steps
        for whole, left, right in zip(one, first, second, strict=True):
            assert whole.shape[0] == 2 and left.shape[0] == right.shape[0] == 1  # the group split in two
            split = [left[0], right[0]]
            for completion in range(2):
                width = min(len(whole[completion]), len(split[completion]))
                torch.testing.assert_close(split[completion][:width], whole[completion][:width], atol=1e-5, rtol=0)
                assert not whole[completion][width:].any() and not split[completion][width:].any()
            assert bool(whole.abs().sum() > 0)
