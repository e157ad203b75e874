"""End to end: ORSD and TASPO train the tiny random model on a toy env with mixed outcomes."""

import json

import pytest
import torch

from agents.agent import ORSDAgent, TASPOAgent
from agents.config import GRPOConfig
from agents.training.trainer import CREDIT_EXAMPLES_FILE
from tests.support.privileged import register_letter_hunt

pytestmark = pytest.mark.slow


def train(agent_class, tmp_path, tiny_model_path, beta=0.0, **options):
    env = register_letter_hunt()
    config = GRPOConfig(
        num_groups=2,
        group_size=4,
        max_new_tokens=4,
        eval_every=1,
        eval_episodes=2,
        save_every=0,
        output_dir=str(tmp_path / "run"),
        progress=False,
        tensorboard=False,
        learning_rate=1e-3,
        temperature=1.5,
        seed=1,
        beta=beta,
        credit_options=options,
    )
    agent = agent_class(model=str(tiny_model_path), env=env, config=config)
    before = [p.detach().clone() for p in agent.policy.trainable_parameters()[:3]]
    try:
        agent.learn(2, plot=False)
    finally:
        agent.close()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    changed = any(not torch.equal(a, b) for a, b in zip(before, agent.policy.trainable_parameters()[:3], strict=True))
    return agent, records, changed


def test_orsd_agent_programmatic_end_to_end(tmp_path, tiny_model_path):
    agent, records, changed = train(ORSDAgent, tmp_path, tiny_model_path, coef=0.5)
    assert agent.config.credit == "orsd" and changed
    trained = [r for r in records if r["step"] > 0]
    for key in ("orsd/bundles_proposed", "orsd/groups_with_rubric", "orsd/shaping_to_advantage", "loss"):
        assert all(key in r for r in trained)
    # The toy env gives mixed groups; the contrastive proposer then finds aligned bundles.
    assert any(r["orsd/groups_with_rubric"] > 0 for r in trained), trained
    examples = [json.loads(line) for line in (tmp_path / "run" / CREDIT_EXAMPLES_FILE).read_text().splitlines()]
    assert examples and "Process rubric" in examples[0]["rubric"]


def test_taspo_agent_programmatic_end_to_end(tmp_path, tiny_model_path):
    agent, records, changed = train(TASPOAgent, tmp_path, tiny_model_path, pi_source="unaligned", epsilon_w=0.5)
    assert agent.config.credit == "taspo" and changed
    trained = [r for r in records if r["step"] > 0]
    for key in ("taspo/pi_coverage", "taspo/aligned_turn_fraction", "taspo/weight_std"):
        assert all(key in r for r in trained)
    assert all(0.5 - 1e-6 <= r["taspo/weight_min"] <= 1.0 <= r["taspo/weight_max"] <= 1.5 + 1e-6 for r in trained)


def test_lm_paths_end_to_end(tmp_path, tiny_model_path):
    """The policy writes rubric bundles and guidance; the frozen initial policy judges free-text items."""
    agent, records, _ = train(
        ORSDAgent,
        tmp_path / "orsd",
        tiny_model_path,
        beta=0.01,
        proposer="policy",
        verifier="reference",
        num_bundles=2,
        lm_max_new_tokens=24,
    )
    trained = [r for r in records if r["step"] > 0]
    # Every mixed group (of 2) asked the policy for two bundles; unparsable ones are counted as dropped.
    for r in trained:
        mixed_groups = round(2 * (1 - r["orsd/groups_uniform_outcome"]))
        assert r["orsd/bundles_proposed"] == 2 * mixed_groups
        assert 0 <= r["orsd/bundles_dropped"] <= r["orsd/bundles_proposed"]
    assert any(r["orsd/groups_uniform_outcome"] < 1 for r in trained)
    agent, records, _ = train(TASPOAgent, tmp_path / "taspo", tiny_model_path, analyzer="policy", lm_max_new_tokens=24)
    assert all("taspo/pi_coverage" in r for r in records if r["step"] > 0)


@pytest.mark.parametrize(
    ("agent_class", "options"), [(TASPOAgent, {"pi_source": "unaligned"}), (ORSDAgent, {"coef": 0.5})]
)
def test_reusing_the_rollout_prompt_kv_leaves_training_unchanged(tmp_path, tiny_model_path, agent_class, options):
    _, plain, _ = train(
        agent_class, tmp_path / "plain", tiny_model_path, placement="prompt_end", reuse_prompt_cache=False, **options
    )
    agent, reused, _ = train(
        agent_class, tmp_path / "reused", tiny_model_path, placement="prompt_end", reuse_prompt_cache=True, **options
    )
    assert agent.trainer.credit_rule.reuses_prompt_caches and len(agent.policy.prompt_caches) == 0
    prefix = agent.config.credit + "/"
    activity = {"taspo": "taspo/pi_coverage", "orsd": "orsd/groups_with_rubric"}[agent.config.credit]
    assert any(record.get(activity, 0) > 0 for record in reused), "the PI pass never ran"
    for want, have in zip(plain, reused, strict=True):
        for key, value in want.items():
            if key == "loss" or key.startswith((prefix, "train/", "eval/")):
                assert have[key] == pytest.approx(value, rel=1e-3, abs=1e-4), key
