import difflib
import math

import pytest
import torch

from agentenvs.core.trajectory import Trajectory, TrajectoryGroup
from agents.algorithms import CreditContext, grpo_advantages, make_credit_rule
from agents.algorithms.gigpo import (
    GiGPOCredit,
    GiGPOOptions,
    anchor_groups,
    discounted_returns,
    gigpo_token_advantages,
    step_advantages,
    step_group_stats,
)
from agents.config import GRPOConfig
from tests.support.privileged import batch_from_groups, make_turn


def trajectory(steps, success, group_id=0, task_id="t"):
    """A trajectory from (observation, action, reward) steps; its score is the sum of the rewards."""
    turns = [make_turn(observation, action, reward=reward) for observation, action, reward in steps]
    return Trajectory(task_id, group_id, turns, success, float(sum(r for *_, r in steps)), task="find it")


def revisiting_group():
    """Trajectory 0 comes back to "room" (a repeated state inside one trajectory) and wins at its
    third turn; trajectory 1 starts in "room" too and fails."""
    win = trajectory([("room", "go to desk", 0.0), ("desk", "go back", 0.0), ("room", "open box", 1.0)], True)
    lose = trajectory([("room", "go to drawer", 0.0), ("drawer", "look", 0.0)], False)
    return TrajectoryGroup("t", 0, [win, lose])


def config(scale_rewards="group", **options):
    return GRPOConfig(credit="gigpo", scale_rewards=scale_rewards, advantage_eps=0.0, credit_options=options)


def test_discounted_returns_hand_computed_in_any_row_order():
    # Rows out of order: trajectory 0's turns 2, 0, 1 then trajectory 1's turn 0.
    rewards = torch.tensor([1.0, 0.0, 0.0, 2.0])
    out = discounted_returns(rewards, torch.tensor([0, 0, 0, 1]), torch.tensor([2, 0, 1, 0]), gamma=0.5)
    assert out.tolist() == pytest.approx([1.0, 0.25, 0.5, 2.0])
    # γ = 1: the return from the first turn is the trajectory's outcome R.
    assert discounted_returns(torch.tensor([0.5, -0.1, 1.0]), torch.zeros(3), torch.arange(3), gamma=1.0)[
        0
    ] == pytest.approx(1.4)
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns(rewards, torch.zeros(4), torch.arange(4), gamma=1.5)


def test_anchor_groups_exact_and_by_similarity():
    # Same anchor in another episode group is another step group.
    assert anchor_groups(["a", "b", "a", "a"], [0, 0, 0, 1]).tolist() == [0, 1, 0, 2]
    one, two = "You see a desk 1.", "You see a desk 2."
    ratio = difflib.SequenceMatcher(None, one, two).ratio()  # 2 * 16 / 34
    assert ratio == pytest.approx(32 / 34)
    assert anchor_groups([one, two], [0, 0]).tolist() == [0, 1]
    assert anchor_groups([one, two, "Nothing happens."], [0, 0, 0], similarity_threshold=0.9).tolist() == [0, 0, 1]
    assert anchor_groups([one, two], [0, 0], similarity_threshold=0.95).tolist() == [0, 1]
    # Greedy against the first member: c is close to b but not to a, so it starts its own group.
    a, b, c = "aaaaaaaaab", "aaaaaaaabb", "aaaaaaabbb"
    assert anchor_groups([a, b, c], [0, 0, 0], similarity_threshold=0.85).tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="similarity_threshold"):
        anchor_groups(["a"], [0], similarity_threshold=0.0)


def test_step_advantages_hand_computed():
    returns = torch.tensor([0.25, 0.5, 1.0, 0.0, 0.0])
    groups = torch.tensor([0, 1, 0, 0, 2])  # "room" holds rows 0, 2, 3
    # room: mean 1.25/3; deviations -1/6, 7/12, -5/12; unbiased variance (1/36 + 49/144 + 25/144) / 2.
    centred = [-1 / 6, 0.0, 7 / 12, -5 / 12, 0.0]
    assert step_advantages(returns, groups, scale="none").tolist() == pytest.approx(centred, abs=1e-6)
    std = math.sqrt((1 / 36 + 49 / 144 + 25 / 144) / 2)
    assert step_advantages(returns, groups, scale="group", eps=0.0).tolist() == pytest.approx(
        [value / std for value in centred], abs=1e-6
    )
    with pytest.raises(ValueError, match="step scale"):
        step_advantages(returns, groups, scale="batch")


def test_token_advantages_and_stats():
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    out = gigpo_token_advantages(torch.tensor([1.0, -1.0]), torch.tensor([0.5, 2.0]), mask, weight=0.5)
    assert out.tolist() == [[1.25, 1.25, 0.0], [0.0, 0.0, 0.0]]
    stats = step_group_stats(torch.tensor([0, 1, 0, 0, 2]))
    assert stats == pytest.approx({"nonsingleton_turn_fraction": 0.6, "step_group_size_mean": 5 / 3, "step_groups": 3})


def test_rule_hand_computed_with_a_state_revisited_inside_one_trajectory():
    batch = batch_from_groups([revisiting_group()])
    rule = make_credit_rule("gigpo", config(scale_rewards="none", gamma=0.5, step_scale="none"))
    assert isinstance(rule, GiGPOCredit)
    result = rule.compute(batch, CreditContext(config()))
    # Episode level: R = [1, 0] -> ±0.5. Returns (γ = 0.5): win [0.25, 0.5, 1], lose [0, 0];
    # step groups room = {win t0, win t2, lose t0}, desk = {win t1}, drawer = {lose t1}.
    expected_rows = [0.5 - 1 / 6, 0.5, 0.5 + 7 / 12, -0.5 - 5 / 12, -0.5]
    mask = batch.response_mask.bool()
    for row, value in enumerate(expected_rows):
        assert result.advantages[row][mask[row]].tolist() == pytest.approx([value] * int(mask[row].sum()), abs=1e-6)
    assert (result.advantages[~mask] == 0).all()
    assert result.stats["gigpo/nonsingleton_turn_fraction"] == pytest.approx(0.6)
    assert result.stats["gigpo/step_groups"] == 3
    assert result.stats["gigpo/step_to_episode"] > 0
    # What the viewer records: each row's step group, return and A^S; each trajectory's A^E.
    assert result.row_info["anchor"] == [0, 1, 0, 0, 2]
    assert result.row_info["step_return"] == pytest.approx([0.25, 0.5, 1.0, 0.0, 0.0])
    assert result.row_info["step_advantage"] == pytest.approx([-1 / 6, 0.0, 7 / 12, -5 / 12, 0.0], abs=1e-6)
    assert result.trajectory_values["advantage"].tolist() == pytest.approx([0.5, -0.5])


def test_step_weight_zero_is_grpo_and_gamma_one_matches_the_episode_level():
    batch = batch_from_groups([revisiting_group()])
    grpo = make_credit_rule("grpo", config()).compute(batch, CreditContext(config())).advantages
    plain = make_credit_rule("gigpo", config(step_weight=0.0)).compute(batch, CreditContext(config())).advantages
    assert torch.equal(plain, grpo)
    # γ = 1, no scaling: at the shared first state the step return is R, so A^S there is R_i − mean R.
    rule = make_credit_rule("gigpo", config(scale_rewards="none", gamma=1.0, step_scale="none"))
    out = rule.compute(batch, CreditContext(config())).advantages
    first = (batch.turn_index == 0).nonzero().flatten()
    step_room = grpo_advantages(batch.trajectory_rewards, batch.trajectory_group_ids, scale_rewards="none")
    # room also holds the win's third turn (return 1): mean over {1, 1, 0} = 2/3.
    assert out[first, 0].tolist() == pytest.approx((step_room + torch.tensor([1 - 2 / 3, 0 - 2 / 3])).tolist())


def test_prompt_anchor_and_similarity_change_the_step_groups():
    batch = batch_from_groups([revisiting_group()])
    # Rows: win t0 room, win t1 desk, win t2 room (revisited), lose t0 room, lose t1 drawer.
    batch.prompts = ["start: room", "went to desk: desk 1", "went back: room", "start: room", "went to desk: desk 2"]
    by_prompt = make_credit_rule("gigpo", config(anchor="prompt")).compute(batch, CreditContext(config()))
    assert by_prompt.stats["gigpo/step_groups"] == 4  # the revisit's prompt differs: {t0 of both}, three singletons
    loose = make_credit_rule("gigpo", config(anchor="prompt", similarity_threshold=0.9))
    assert loose.compute(batch, CreditContext(config())).stats["gigpo/step_groups"] == 3  # desk 1 ~ desk 2 (ratio 0.95)


def test_options_validate_and_name_the_field():
    with pytest.raises(ValueError, match="unknown gigpo credit option"):
        GiGPOCredit(config(step_advantage_w=1.0))
    with pytest.raises(ValueError, match="GiGPOOptions.gamma"):
        GiGPOOptions(gamma=1.5)
    with pytest.raises(ValueError, match="GiGPOOptions.step_scale"):
        GiGPOOptions(step_scale="batch")
    with pytest.raises(ValueError, match="GiGPOOptions.anchor"):
        GiGPOOptions(anchor="state")
    with pytest.raises(ValueError, match="GiGPOOptions.similarity_threshold"):
        GiGPOOptions(similarity_threshold=0)
    with pytest.raises(ValueError, match="GiGPOOptions.step_weight"):
        GiGPOOptions(step_weight=-1.0)
    with pytest.raises(ValueError, match="GiGPOOptions.step_weight must be a finite number >= 0, got 'high'"):
        GiGPOOptions(step_weight="high")
    with pytest.raises(ValueError, match="GiGPOOptions.log_examples must be an integer >= 0"):
        GiGPOOptions(log_examples=-1)
    assert GiGPOOptions(gamma=1, similarity_threshold=1).gamma == 1  # the command line passes ints


def test_examples_show_step_groups_whose_returns_differ():
    batch = batch_from_groups([revisiting_group()])
    result = make_credit_rule("gigpo", config(scale_rewards="none", gamma=0.5, step_scale="none")).compute(
        batch, CreditContext(config())
    )
    # Only "room" has members with different returns (desk and drawer are singletons).
    (example,) = result.examples
    assert example["anchor"] == "room"
    assert example["members"].splitlines() == [
        "trajectory 0 turn 0: 'go to desk' -> G 0.250, A^S -0.167",
        "trajectory 0 turn 2: 'open box' -> G 1.000, A^S +0.583",
        "trajectory 1 turn 0: 'go to drawer' -> G 0.000, A^S -0.417",
    ]
    silent = make_credit_rule("gigpo", config(log_examples=0)).compute(batch, CreditContext(config()))
    assert silent.examples == []
