"""The official ``alfworld`` TextWorld env (``AlfredTWEnv.init_env``) on given game files.

The shared data has no ``traj_data.json``, which ``AlfredTWEnv.collect_game_files``
requires, so the game list is set directly; everything else is the official path.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any


def official_config(max_steps: int = 50) -> dict[str, Any]:
    return {
        "env": {
            "goal_desc_human_anns_prob": 0,
            "task_types": [1, 2, 3, 4, 5, 6],
            "domain_randomization": False,
            "expert_type": "handcoded",
        },
        "general": {"training_method": "dqn"},
        "rl": {"training": {"max_nb_steps_per_episode": max_steps}},
        "dataset": {
            "data_path": "",
            "eval_id_data_path": "",
            "eval_ood_data_path": "",
            "num_train_games": -1,
            "num_eval_games": -1,
        },
    }


def make_official_env(game_files: list[Path], max_steps: int = 50) -> Any:
    """A batch-size-1 official env cycling through ``game_files`` (seed 1234 order)."""
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    with contextlib.redirect_stdout(io.StringIO()):
        official = AlfredTWEnv(official_config(max_steps), train_eval="eval_in_distribution")
    official.game_files = [str(p) for p in game_files]
    official.num_games = len(game_files)
    return official.init_env(batch_size=1)
