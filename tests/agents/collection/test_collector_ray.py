"""The collector on Ray env workers: a worker that dies mid-collection fails its episodes, not the collection."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agentenvs.core.ray_vector import WORKER_ERROR_KEY
from agents.collection.collector import Collector
from agents.policy.openai_policy import ServedGeneration
from tests.support.crashing_env import CRASH

pytestmark = pytest.mark.usefixtures("ray_cluster")


@dataclass
class CrashingPolicy:
    """Searches every turn; member 0 writes CRASH (its worker's process exits) on the first turn of the first collection."""

    collections: int = 0
    pad_token_id: int = 0

    def generate(self, prompts, *, greedy=False, stop=()):
        crash = self.collections == 0 and len(prompts) == 4
        texts = [CRASH if crash and i == 0 else "<search>Fethstoul</search>" for i in range(len(prompts))]
        return [ServedGeneration(prompt, text) for prompt, text in zip(prompts, texts, strict=True)]


def test_a_dead_env_worker_fails_only_its_episodes():
    policy = CrashingPolicy()
    collector = Collector(
        policy, "tests.support.crashing_env:CrashOnCue-v0", num_groups=2, group_size=2,
        vectorization_mode="ray", num_workers=2, env_kwargs={"max_turns": 2},
    )  # fmt: skip
    try:
        batch, stats = collector.collect(seed=0)
        trajectories = batch.trajectories
        assert stats.failed_episodes == 2 and [len(t) for t in trajectories] == [1, 1, 2, 2]
        assert all(t.metadata[WORKER_ERROR_KEY].startswith("the env worker died: Actor") for t in trajectories[:2])
        assert not any(WORKER_ERROR_KEY in t.metadata for t in trajectories[2:])
        assert [g.task_id for g in batch.groups] == [trajectories[0].task_id, trajectories[2].task_id]
        policy.collections = 1
        _, stats = collector.collect(seed=1)  # the restarted worker plays again
        assert stats.failed_episodes == 0 and stats.mean_episode_length == 2.0
    finally:
        collector.close()
