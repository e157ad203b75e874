"""End to end: GiGPO, RLOO, vine and the env-PI option of ORSD and TASPO train the tiny model with ``learn()``.

The env-PI runs also watch the policy: the env's privileged text must reach the rules' scoring
pass and never a prompt the policy generates from (rollouts and evaluation).
"""

import json

import gymnasium as gym
import pytest
import torch

from agents.agent import GRPOAgent
from agents.algorithms.privileged.environment import ENV_PI_HEADER
from agents.config import GRPOConfig
from tests.support.privileged import LetterHuntEnv

ENV_ID = "PrivilegedLetterHunt-v0"


class PrivilegedLetterHunt(LetterHuntEnv):
    """LetterHunt whose env knows the letter (``info["privileged"]["goal_attributes"]``)."""

    def _privileged(self):
        return {"goal_attributes": [f"secret letter {getattr(self, '_letter', '?')}"]}


class SnapshotLetterHunt(PrivilegedLetterHunt):
    """PrivilegedLetterHunt with TextEnv's snapshots (a replay of the episode); counts restores."""

    restores = 0

    def _snapshot_scope(self):
        return self.LETTERS  # the tasks: nothing else builds the world

    def restore(self, snapshot):
        restored = super().restore(snapshot)
        type(self).restores += 1
        return restored


def register(env_id=ENV_ID, entry_point=PrivilegedLetterHunt):
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry_point, disable_env_checker=False)
    return env_id


def train(tmp_path, tiny_model_path, credit, *, watch=False, env_id=None, **fields):
    config = GRPOConfig(
        credit=credit,
        num_groups=2,
        group_size=4,
        max_new_tokens=4,
        eval_every=0,
        eval_episodes=2,
        save_every=0,
        output_dir=str(tmp_path / "run"),
        progress=False,
        tensorboard=False,
        learning_rate=1e-3,
        temperature=1.5,
        seed=1,
        **fields,
    )
    agent = GRPOAgent(model=str(tiny_model_path), env=env_id or register(), config=config)
    generated, scored = [], []
    if watch:
        generate, score = agent.policy.generate, agent.policy.score

        def watched_generate(prompts, *args, **kwargs):
            generated.extend(prompts)
            return generate(prompts, *args, **kwargs)

        def watched_score(prompts, *args, **kwargs):
            scored.extend(prompts)
            return score(prompts, *args, **kwargs)

        agent.policy.generate, agent.policy.score = watched_generate, watched_score
    before = [p.detach().clone() for p in agent.policy.trainable_parameters()[:3]]
    try:
        agent.learn(2, plot=False)
    finally:
        agent.close()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    changed = any(not torch.equal(a, b) for a, b in zip(before, agent.policy.trainable_parameters()[:3], strict=True))
    return [r for r in records if r["step"] > 0], changed, generated, scored


@pytest.mark.parametrize(
    ("credit", "fields", "keys"),
    [
        ("gigpo", {"credit_options": {"gamma": 0.9}}, ("gigpo/nonsingleton_turn_fraction", "gigpo/step_to_episode")),
        ("rloo", {"scale_rewards": "none"}, ("rloo/advantage_abs_mean",)),
    ],
)
def test_new_rules_learn(tmp_path, tiny_model_path, credit, fields, keys):
    trained, changed, _, _ = train(tmp_path, tiny_model_path, credit, **fields)
    assert changed and len(trained) == 2
    for key in (*keys, "loss"):
        assert all(key in record for record in trained), key
    if credit == "gigpo":  # every trajectory starts from the same observation: step groups are never all singletons
        assert all(record["gigpo/nonsingleton_turn_fraction"] > 0 for record in trained)


@pytest.mark.parametrize("credit", ["orsd", "taspo"])
@pytest.mark.parametrize("mode", ["replace", "add"])
def test_env_pi_reaches_the_scoring_pass_and_never_a_generation_prompt(tmp_path, tiny_model_path, credit, mode):
    trained, changed, generated, scored = train(
        tmp_path, tiny_model_path, credit, watch=True, credit_options={"env_pi": mode}
    )
    assert changed and generated
    assert not any(ENV_PI_HEADER in prompt or "secret letter" in prompt for prompt in generated)
    with_pi = [prompt for prompt in scored if ENV_PI_HEADER in prompt]
    assert with_pi and all("Goal attributes: secret letter" in prompt for prompt in with_pi)
    # First turns too (their PI is the reset info's, which the collector keeps): they alone lack
    # the second turn's "Nothing happens." observation.
    assert any("Nothing happens" not in prompt for prompt in with_pi)
    assert all(record[f"{credit}/env_pi_rows"] > 0 for record in trained)


@pytest.mark.parametrize("states", ["replay", "snapshot"])
def test_vine_learns_from_continuations_of_the_policy(tmp_path, tiny_model_path, states):
    env_id = register("SnapshotLetterHunt-v0", SnapshotLetterHunt) if states == "snapshot" else register()
    SnapshotLetterHunt.restores = 0
    options = {"continuations": 2, "states": states}
    trained, changed, generated, _ = train(tmp_path, tiny_model_path, "vine", watch=True, env_id=env_id,
                                           credit_options=options)  # fmt: skip
    assert changed and len(trained) == 2
    for record in trained:
        # 2 groups: their 2 first states and up to 8 second ones, 2 continuations each
        assert 2 <= record["vine/states"] <= 10 and record["vine/plays"] == 2 * record["vine/states"]
        assert record["vine/estimated_turn_fraction"] == 1.0
    assert any(record["vine/step_advantage_abs_mean"] > 0 for record in trained)
    assert (SnapshotLetterHunt.restores > 0) == (states == "snapshot")
    assert not any("secret letter" in prompt for prompt in generated)  # continuations see no PI either
