"""VinePPO credit: the token formula, turn choice, options, and the rule by hand on the Stairs env."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from agents.algorithms.base import CreditContext
from agents.algorithms.vine import VineCredit, chosen_turns, vine_token_advantages
from agents.config import GRPOConfig
from agents.reference.continuations import ContinuationRunner
from tests.support.stairs import ENV_ID, RulePolicy, alternate_at_start, collect_stairs, register_stairs


def config(**options):
    return GRPOConfig(credit="vine", scale_rewards="none", advantage_eps=0.0, credit_options=options)


@pytest.fixture()
def batch():
    register_stairs()
    return collect_stairs(record_snapshots=True)


def credit(batch, **options):
    runner = ContinuationRunner(RulePolicy(alternate_at_start), ENV_ID, invalid_action_penalty=0.5)
    try:
        rule = VineCredit(config(continuations=2, **options))
        return rule.compute(batch, CreditContext(config=rule.config, continuations=runner))
    finally:
        runner.close()


def per_row(result, batch):
    """Each row's advantage (every response token of a row carries the same one)."""
    mask = batch.response_mask.bool()
    values = [result.advantages[row][mask[row]] for row in range(len(batch))]
    assert all(torch.equal(v, v[:1].expand_as(v)) for v in values)
    assert result.advantages[~mask].eq(0).all()
    return [round(float(v[0]), 6) for v in values]


def test_token_advantages_mix_and_fall_back_to_the_episode_advantage():
    step, episode = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.0, 1.0, -1.0])
    estimated, mask = torch.tensor([True, True, False]), torch.tensor([[1, 1], [1, 0], [1, 1]])
    assert vine_token_advantages(step, episode, estimated, mask, episode_mix=0.0).tolist() == [
        [0.5, 0.5],
        [-1.0, 0.0],
        [-1.0, -1.0],
    ]
    assert vine_token_advantages(step, episode, estimated, mask, episode_mix=0.25).tolist() == [
        [0.625, 0.625],
        [-0.5, 0.0],
        [-1.0, -1.0],
    ]
    with pytest.raises(ValueError, match=r"episode_mix must be in \[0, 1\]"):
        vine_token_advantages(step, episode, estimated, mask, episode_mix=1.5)


def test_chosen_turns(batch):
    assert chosen_turns(batch, "all").all()
    assert chosen_turns(batch, "first").tolist() == [True, False, True, False, True, False]
    assert chosen_turns(batch, "valid").tolist() == [True, True, True, True, False, True]
    with pytest.raises(ValueError, match="turns must be one of"):
        chosen_turns(batch, "some")


def test_rule_by_hand(batch):
    # K = 2 continuations: V(s0) = (1 + 0) / 2, V(A1) = 1, V(B1) = V(C1) = 0 (tests/agents/reference);
    # A^MC = r + V(next) - V(s): A0 0 + 1 - .5, A1 1 + 0 - 1, B0 0 + 0 - .5, B1 0, C0 -.5 + 0 - .5, C1 0.
    result = credit(batch)
    assert per_row(result, batch) == [0.5, 0.0, -0.5, 0.0, -1.0, 0.0]
    assert result.stats["vine/states"] == 4 and result.stats["vine/plays"] == 8
    assert result.stats["vine/first_value_mean"] == 0.5 and result.stats["vine/estimated_turn_fraction"] == 1.0
    assert result.row_info["value_before"] == [0.5, 1.0, 0.5, 0.0, 0.5, 0.0]
    # Outcomes R = 1, 0, -0.5 (C's penalty): Dr. GRPO advantages R - 1/6.
    assert result.trajectory_values["advantage"].tolist() == pytest.approx([5 / 6, -1 / 6, -4 / 6])


def test_episode_mix_and_first_turns_only(batch):
    # (A^MC + A^GRPO) / 2 with A^GRPO = 5/6, -1/6, -4/6 per trajectory.
    mixed = per_row(credit(batch, episode_mix=0.5), batch)
    assert mixed == pytest.approx([2 / 3, 5 / 12, -1 / 3, -1 / 12, -5 / 6, -1 / 3], abs=1e-6)
    first = credit(batch, turns="first")
    assert per_row(first, batch) == pytest.approx([0.5, 5 / 6, -0.5, -1 / 6, -1.0, -4 / 6], abs=1e-6)
    assert first.row_info["value_before"] == [0.5, None, 0.5, None, 0.5, None]


def test_needs_continuations_and_says_so(batch):
    rule = VineCredit(config())
    assert rule.needs_continuations
    with pytest.raises(RuntimeError, match="has no continuations"):
        rule.compute(batch, CreditContext(config=rule.config))


def test_snapshots_where_asked_or_available():
    assert VineCredit(config()).wants_snapshots(True) and not VineCredit(config()).wants_snapshots(False)
    assert not VineCredit(config(states="replay")).wants_snapshots(True)
    with pytest.raises(ValueError, match="states='snapshot', but the env has no snapshot"):
        VineCredit(config(states="snapshot")).wants_snapshots(False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"continuations": 0}, "continuations"),
        ({"episode_mix": 2.0}, "episode_mix"),
        ({"turns": "most"}, "turns"),
        ({"states": "copy"}, "states"),
        ({"samples": 3}, "unknown vine credit option"),
    ],
)
def test_options_are_checked_when_the_config_is_built(options, message):
    with pytest.raises(ValueError, match=message):
        config(**options)


class StubPolicy:
    """What the Trainer's constructor touches of a policy (no model)."""

    pad_token_id = 0

    def __init__(self):
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def trainable_parameters(self):
        return [self.weight]


@pytest.mark.parametrize(("env_id", "recorded"), [(ENV_ID, True), ("StairsNoSnapshots-v0", False)])
def test_the_trainer_records_snapshots_where_the_env_has_them_and_gives_continuations(tmp_path, env_id, recorded):
    from agents.training.trainer import Trainer

    register_stairs()
    trainer = Trainer(StubPolicy(), env_id, dataclasses.replace(config(continuations=2), output_dir=str(tmp_path)))
    try:
        assert trainer.collector.record_snapshots is recorded
        assert isinstance(trainer.continuations, ContinuationRunner) and trainer.continuations.width == 16
    finally:
        trainer.close()


def test_the_trainer_refuses_vine_in_conversation_mode(tmp_path):
    from agents.training.trainer import Trainer

    register_stairs()
    settings = dataclasses.replace(config(), output_dir=str(tmp_path), rollout_mode="conversation", decode="dynamic")
    with pytest.raises(ValueError, match="rollout_mode must be 'per_turn'"):
        Trainer(StubPolicy(), ENV_ID, settings)
