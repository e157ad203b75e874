"""Rollout workers on a local Ray: 2 workers collect the batch one process collects (greedy, same
seeds, token ids compared) from the weights they are sent, and a 2-step learn() runs end to end."""

from __future__ import annotations

import json

import pytest
import torch

from agents.agent import GRPOAgent
from agents.collection.collector import Collector
from agents.config import GRPOConfig

pytestmark = pytest.mark.usefixtures("ray_cluster")


@pytest.fixture(scope="module")
def agent(ray_cluster, tiny_model_path, tmp_path_factory):
    config = GRPOConfig(
        num_groups=3,
        group_size=2,
        max_new_tokens=6,
        max_turns=2,
        rollout_workers=2,
        lora=True,
        lora_rank=2,
        lora_alpha=4,
        lora_top_layers=1,  # the frozen trunk's states come back from the workers too
        learning_rate=1e-2,
        eval_every=0,
        eval_episodes=2,
        save_every=0,
        output_dir=str(tmp_path_factory.mktemp("workers") / "run"),
        progress=False,
        tensorboard=False,
    )
    agent = GRPOAgent(model=str(tiny_model_path), env="SearchQA-v0", config=config)
    yield agent
    agent.close()


def worker_state(worker) -> dict[str, torch.Tensor]:
    import ray

    return ray.get(worker.__ray_call__.remote(lambda w: w.policy.trainable_state_dict()))


def test_two_workers_collect_what_one_process_collects(agent):
    trainer, policy = agent.trainer, agent.policy
    local = Collector(
        policy, "SearchQA-v0", num_groups=3, group_size=2, prompt_builder=trainer.prompt_builder,
        invalid_action_penalty=agent.config.invalid_action_penalty, env_kwargs=trainer.env_kwargs,
    )  # fmt: skip
    tasks = list(local.task_ids[3:6])
    try:
        untrained, _ = local.collect(tasks, seed=11, greedy=True)
        with torch.no_grad():  # weights the workers do not have yet: only the broadcast gives them
            for name, parameter in policy.model.named_parameters():
                if "lora_B" in name:
                    parameter.normal_(0.0, 0.5, generator=torch.Generator().manual_seed(len(name)))
        with policy.keeping_trunk_hiddens():
            expected, expected_stats = local.collect(tasks, seed=11, greedy=True)
    finally:
        local.close()
    batch, stats = trainer.collector.collect(
        tasks, seed=11, greedy=True, weights=policy.trainable_state_dict(), keep_trunk_hiddens=True
    )
    assert not torch.equal(untrained.response_ids, expected.response_ids)  # the weights matter
    for name in ("prompt_ids", "prompt_mask", "response_ids", "response_mask", "action_token_spans",
                 "trajectory_index", "turn_index", "group_ids", "turn_valid", "trajectory_group_ids"):  # fmt: skip
        assert torch.equal(getattr(batch, name), getattr(expected, name)), name
    assert torch.allclose(batch.old_logprobs, expected.old_logprobs, atol=1e-5)
    assert torch.equal(batch.turn_rewards, expected.turn_rewards)
    assert torch.equal(batch.trajectory_rewards, expected.trajectory_rewards)
    assert [t.to_dict() for t in batch.trajectories] == [t.to_dict() for t in expected.trajectories]
    assert {**vars(stats), "seconds": 0} == {**vars(expected_stats), "seconds": 0}
    assert batch.trunk_hiddens is not None and expected.trunk_hiddens is not None
    assert all(
        torch.allclose(a, b, atol=1e-5) for a, b in zip(batch.trunk_hiddens, expected.trunk_hiddens, strict=True)
    )


def test_learn_runs_with_rollout_workers_and_they_follow_the_weights(agent):
    record = agent.learn(2, plot=False)
    lines = (agent.output_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [0, 1, 2]
    assert record["train/generated_tokens"] > 0 and "loss" in record and "eval/success_rate" in record
    workers = agent.trainer.collector
    workers.collect(weights=agent.policy.trainable_state_dict())  # what the next step starts with
    state = agent.policy.trainable_state_dict()
    for worker in workers.workers:
        sent = worker_state(worker)
        assert sent.keys() == state.keys() and all(torch.equal(sent[k], state[k]) for k in state)


def test_bad_worker_settings_are_named():
    with pytest.raises(ValueError, match=r"GRPOConfig.rollout_workers must be an integer in \[0, num_groups=2\]"):
        GRPOConfig(num_groups=2, rollout_workers=3)
    with pytest.raises(ValueError, match="GRPOConfig.rollout_workers must be 0 with vectorization_mode='ray'"):
        GRPOConfig(rollout_workers=1, vectorization_mode="ray")
    with pytest.raises(ValueError, match="GRPOConfig.env_workers must be None unless vectorization_mode='ray'"):
        GRPOConfig(env_workers=2)
