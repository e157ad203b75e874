"""Our credit rules inside TRL's GRPOTrainer: each rule's training step time ÷ TRL's own GRPO's, on CPU.

One scripted ALFWorld batch (one task, ``--group`` rollouts: every other one follows the expert,
the rest a fixed losing path; the tiny random Qwen3, whose own text calls no tool) is trained for
``--steps`` steps by TRL's ``GRPOTrainer`` and by ``CreditGRPOTrainer`` with each rule; every step
sees the same completions. A step is TRL's whole training step (env rollouts, rewards, credit,
loss, update). The ratio is of the median *CPU time* of the timed steps (the first is warm-up),
with torch on one thread, so that other processes on the machine change it little; wall time is
printed beside it. Goals (issue 29): TASPO ≤ 1.3×, ORSD ≤ 1.6×, GiGPO and RLOO ≤ 1.05×.

Usage::

    nice -n 19 .venv/bin/python benchmarks/trl_credit_overhead.py --steps 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository (tests.support)

import torch  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

import agentenvs  # noqa: E402,F401
from agentenvs.testing.machine import cpu_model  # noqa: E402
from agents.policy.models import resolve_model  # noqa: E402
from tests.support.trl_rollouts import credit_trainer  # noqa: E402

GOALS = {"taspo": 1.3, "orsd": 1.6, "gigpo": 1.05, "rloo": 1.05}


class StepTimer(TrainerCallback):
    """CPU and wall seconds of every training step."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.wall: list[float] = []

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._cpu, self._wall = time.process_time(), time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.cpu.append(time.process_time() - self._cpu)
        self.wall.append(time.perf_counter() - self._wall)


def time_steps(model: Path, variant: str, *, group: int, steps: int) -> tuple[float, float]:
    """Median CPU and wall seconds of the timed steps of one variant (``trl``: TRL's own GRPO)."""
    with tempfile.TemporaryDirectory() as folder:
        trainer = credit_trainer(
            model, Path(folder), env_id="ALFWorld-v0", credit=variant, plain=variant == "trl",
            num_generations=group, batch_size=group, max_steps=steps + 1,
        )  # fmt: skip
        timer = StepTimer()
        trainer.add_callback(timer)
        trainer.train()
    return statistics.median(timer.cpu[1:]), statistics.median(timer.wall[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="timed steps per variant (after one warm-up step)")
    parser.add_argument("--group", type=int, default=4, help="rollouts of the one task (num_generations)")
    parser.add_argument("--rules", default="rloo,gigpo,taspo,orsd", help="comma-separated rules to time")
    arguments = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.set_num_threads(1)
    model = resolve_model("tiny-random-qwen3")
    print(f"CPU: {cpu_model()}; torch threads 1; group {arguments.group}; {arguments.steps} timed steps")
    base_cpu, base_wall = time_steps(model, "trl", group=arguments.group, steps=arguments.steps)
    print(f"{'trl GRPO':10s} cpu {base_cpu:7.2f} s  wall {base_wall:7.2f} s  1.00x")
    for rule in arguments.rules.split(","):
        cpu, wall = time_steps(model, rule, group=arguments.group, steps=arguments.steps)
        ratio, goal = cpu / base_cpu, GOALS.get(rule)
        verdict = "" if goal is None else f"  goal <= {goal:.2f}x: {'met' if ratio <= goal else 'NOT met'}"
        print(f"{rule:10s} cpu {cpu:7.2f} s  wall {wall:7.2f} s  {ratio:.2f}x{verdict}")


if __name__ == "__main__":
    main()
