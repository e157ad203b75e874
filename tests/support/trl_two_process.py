"""Run under ``accelerate launch`` by the two-process credit test: TASPO and GiGPO in TRL, 2 steps.

``python -m accelerate.commands.launch --multi_gpu --num_processes 2 tests/support/trl_two_process.py MODEL OUT``
trains each rule for two steps on one scripted ALFWorld group of two rollouts (``2 / N`` per process,
so with two processes the group is split across them) and writes, per process, each step's
advantages of its completions to ``OUT/<rule>-rank<r>.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository (tests.support)

from tests.support.trl_rollouts import credit_trainer  # noqa: E402

GROUP = 2
RULES = ("taspo", "gigpo")


def main(model: str, output: str) -> None:
    folder = Path(output)
    per_process = GROUP // int(os.environ.get("WORLD_SIZE", "1"))
    for rule in RULES:
        trainer = credit_trainer(
            Path(model),
            folder / rule,
            env_id="ALFWorld-v0",
            credit=rule,
            num_generations=GROUP,
            batch_size=per_process,
            max_steps=2,
        )
        steps: list[Any] = []
        generate = trainer._generate_and_score_completions

        def recording(inputs, generate=generate, steps=steps, trainer=trainer):
            output = generate(inputs)
            step = trainer.last_credit
            steps.append({"advantages": step.advantages.tolist(), "group_size": len(step.batch.trajectories)})
            return output

        trainer._generate_and_score_completions = recording
        trainer.train()
        rank = trainer.accelerator.process_index
        (folder / f"{rule}-rank{rank}.json").write_text(json.dumps(steps))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
