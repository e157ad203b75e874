"""GRPOConfig(vectorization_mode="ray", env_workers=N): the trainer's training envs in Ray env workers
(held-out evaluation stays in the trainer's process, so its envs never wait for the training workers' CPUs)."""

from __future__ import annotations

import pytest

from agentenvs.core.ray_vector import RayVectorEnv
from agents.agent import build_policy
from agents.config import GRPOConfig
from agents.training.trainer import Trainer

pytestmark = pytest.mark.usefixtures("ray_cluster")


def test_a_training_step_and_an_evaluation_on_ray_env_workers(tmp_path, tiny_model_path):
    config = GRPOConfig(
        num_groups=2, group_size=2, max_new_tokens=4, max_turns=1, vectorization_mode="ray", env_workers=2,
        eval_episodes=1, output_dir=str(tmp_path), progress=False, tensorboard=False,
    )  # fmt: skip
    trainer = Trainer(build_policy(str(tiny_model_path), config), "SearchQA-v0", config)
    try:
        vector = trainer.collector.groups.env
        assert isinstance(vector, RayVectorEnv) and [len(block) for block in vector.blocks] == [2, 2]
        metrics = trainer.train_step()
        assert metrics["train/mean_episode_length"] == 1.0 and metrics["train/failed_episodes"] == 0.0
        assert "eval/success_rate" in trainer.evaluate(prefix="eval/")
    finally:
        trainer.close()
