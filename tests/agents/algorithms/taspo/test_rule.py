import pytest
import torch

from agentenvs.core.trajectory import TrajectoryGroup
from agents.algorithms import make_credit_rule
from agents.algorithms.base import CreditContext
from agents.algorithms.grpo import GRPOCredit
from agents.algorithms.taspo import TASPOCredit, TASPOOptions
from agents.config import GRPOConfig
from tests.support.privileged import (
    TOY_TASK,
    CharScorer,
    RecordingScorer,
    batch_from_groups,
    make_trajectory,
    partial_scores,
    toy_group,
    with_expert_plans,
)


def pen_rule(prompt, token, position):
    """With PI in the prompt, the characters of 'pen' gain 0.3 nats and every other one loses 0.1."""
    privileged = "Guidance from successful" in prompt or "A successful attempt" in prompt
    return -1.0 + (0.0 if not privileged else (0.3 if chr(token) in "pen" else -0.1))


def config(**options):
    return GRPOConfig(credit="taspo", credit_options=options)


def run(scorer=None, groups=None, **options):
    scorer = scorer or CharScorer(pen_rule)
    batch = batch_from_groups(groups or [toy_group()], scorer)
    rule = make_credit_rule("taspo", config(**options))
    result = rule.compute(batch, CreditContext(config(), policy=scorer))
    base = GRPOCredit(config()).compute(batch, CreditContext(config())).advantages
    return rule, batch, result, base


def turn_weights(batch, out, base, trajectory):
    rows = batch.rows_of_trajectory(trajectory)
    return [float(out[row, 0] / base[row, 0]) for row in rows]


def test_taspo_hand_checked_trajectory():
    rule, batch, result, base = run(epsilon_w=0.5)
    out = result.advantages
    assert isinstance(rule, TASPOCredit)
    # lose_b (trajectory 3): look / go to drawer 1 / look, all aligned (desk 1, drawer 1 in view).
    # Action support: look -> 4 chars at -0.1 -> -0.1; "go to drawer 1" -> (0.3 - 13 * 0.1) / 14.
    # s - mean ∝ [-1, 2, -1]; A < 0 flips it: w = [1 + ε/2, 1 − ε, 1 + ε/2].
    assert turn_weights(batch, out, base, 3) == pytest.approx([1.25, 0.5, 1.25], abs=1e-5)
    mask = batch.response_mask.bool()
    for trajectory in range(4):
        weights = turn_weights(batch, out, base, trajectory)
        assert sum(weights) / len(weights) == pytest.approx(1.0, abs=1e-5)
        assert all(0.5 - 1e-6 <= w <= 1.5 + 1e-6 for w in weights)
        rows = batch.rows_of_trajectory(trajectory)
        # One weight per turn, on every response token of the turn; signs kept.
        for row in rows:
            ratio = out[row][mask[row]] / base[row][mask[row]]
            assert torch.allclose(ratio, ratio[0].expand_as(ratio))
            assert (out[row][mask[row]] * base[row][mask[row]] > 0).all()
    assert (out[~mask] == 0).all()
    assert result.stats["taspo/pi_coverage"] == 1.0 and result.stats["taspo/weight_min"] == pytest.approx(0.5)
    assert result.examples and "Guidance from successful attempts" in result.examples[0]["privileged"]


def test_taspo_falls_back_to_grpo():
    # epsilon 0: weights all 1.
    _, _, result, base = run(epsilon_w=0.0)
    out = result.advantages
    assert torch.allclose(out, base)

    # Uniform outcome: A = 0, nothing scored.
    class Counting(CharScorer):
        def __call__(self, prompts, *args, **kwargs):
            assert all("Guidance" not in p for p in prompts), "no PI scoring expected"
            return super().__call__(prompts, *args, **kwargs)

    failed = TrajectoryGroup("toy", 0, [t for t in toy_group() if not t.success])
    rule, _, result, base = run(Counting(pen_rule), [failed])
    out = result.advantages
    assert torch.equal(out, base) and result.stats["taspo/pi_coverage"] == 0.0
    # A failed target with a single (hence < 2 aligned) turn: all ones, while the others are reweighted.
    short = make_trajectory(TOY_TASK, [("You see a desk 1 and a drawer 1.", "go to drawer 1")], False)
    group = toy_group()
    mixed = TrajectoryGroup("toy", 0, group.trajectories + [short])
    rule, batch, result, base = run(None, [mixed])
    out = result.advantages
    assert turn_weights(batch, out, base, 4) == [1.0]
    assert turn_weights(batch, out, base, 3) != pytest.approx([1.0] * 3)


def test_taspo_successful_target_uses_other_siblings_only():
    scorer = CharScorer(pen_rule)
    group = toy_group()
    single_win = TrajectoryGroup("toy", 0, [group.trajectories[0], group.trajectories[1], group.trajectories[3]])
    rule, batch, result, base = run(scorer, [single_win])
    out = result.advantages
    # The only success has no other successful sibling -> its weights are all 1.
    assert turn_weights(batch, out, base, 0) == pytest.approx([1.0] * 4)
    rule, batch, result, base = run(CharScorer(pen_rule), [single_win], include_self=True)
    out = result.advantages
    assert turn_weights(batch, out, base, 0) != pytest.approx([1.0] * 4)


@pytest.mark.parametrize(
    "options",
    [
        {"support_level": "token"},
        {"pi_source": "unaligned"},
        {"pi_source": "raw_trajectory"},
        {"anchor_match": "any", "show_evidence": True},
    ],
)
def test_taspo_ablations_keep_mean_one_and_bounds(options):
    rule, batch, result, base = run(epsilon_w=0.4, **options)
    out = result.advantages
    mask = batch.response_mask.bool()
    ratio = torch.where(mask, out / base.where(base != 0, torch.ones_like(base)), torch.zeros_like(out))
    assert (ratio[mask] >= 0.6 - 1e-5).all() and (ratio[mask] <= 1.4 + 1e-5).all()
    assert result.stats["taspo/weight_max"] > 1.0
    if options.get("support_level") == "token":
        # Token-level weights average to one over each trajectory's tokens.
        for trajectory in range(4):
            rows = batch.trajectory_index == trajectory
            assert ratio[rows][mask[rows]].mean().item() == pytest.approx(1.0, abs=1e-5)


def test_taspo_options_validate_and_name_the_field():
    with pytest.raises(ValueError, match="unknown taspo credit option"):
        TASPOCredit(config(eps=0.1))
    with pytest.raises(ValueError, match="TASPOOptions.epsilon_w"):
        TASPOOptions(epsilon_w=-0.1)
    with pytest.raises(ValueError, match="TASPOOptions.support_level"):
        TASPOOptions(support_level="turn")
    with pytest.raises(ValueError, match="TASPOOptions.endpoint_url"):
        TASPOOptions(analyzer="endpoint")
    with pytest.raises(ValueError, match="TASPOOptions.reuse_prompt_cache must be True or False"):
        TASPOOptions(reuse_prompt_cache="yes")


def test_taspo_pi_pass_scores_actions_only_up_to_their_end():
    batch = batch_from_groups([toy_group()], CharScorer(pen_rule))
    batch.action_token_spans[1] = torch.tensor([-1, -1])  # an aligned turn without an action span
    privileged = ["pi"] * len(batch)
    privileged[0] = None
    action_rule = make_credit_rule("taspo", config())
    to_score, mask = action_rule.scoring_plan(batch, privileged)
    assert to_score[0] is None and to_score[1] is None and all(to_score[2:])
    for row in range(2, len(batch)):
        end = int(batch.action_token_spans[row, 1])
        assert int(mask[row].sum()) == end < int(batch.response_mask[row].sum())
    assert torch.equal(mask[:2], batch.response_mask[:2])
    token_rule = make_credit_rule("taspo", config(support_level="token"))
    assert token_rule.scoring_plan(batch, privileged) == (privileged, batch.response_mask)


def test_taspo_exposes_the_delta_weights_and_pi_its_advantages_came_from():
    _, batch, result, _ = run(epsilon_w=0.5)
    mask = batch.response_mask.bool()
    outcome = result.trajectory_values["advantage"]
    weights, delta = result.token_values["weight"], result.token_values["delta"]
    assert weights.shape == delta.shape == result.advantages.shape and outcome.shape == (4,)
    # A_{i,t,k} = w_t · A_i, exactly the recorded weights and outcome advantages.
    rebuilt = weights * outcome[batch.trajectory_index][:, None]
    assert torch.allclose(result.advantages[mask], rebuilt[mask])
    # Trajectory 3 (lose_b): the 'pen' tokens of its scored turns gained 0.3 nats with the PI.
    privileged = result.row_info["privileged"]
    assert len(privileged) == len(batch)
    row = next(r for r in range(len(batch)) if int(batch.trajectory_index[r]) == 3 and privileged[r])
    assert "Guidance from successful" in privileged[row]
    start, end = batch.action_token_spans[row].tolist()
    assert all(min(abs(d - 0.3), abs(d + 0.1)) < 1e-5 for d in delta[row, start:end].tolist())
    assert (delta[batch.trajectory_index == 3] - 0.3).abs().min() < 1e-5  # the 'e' of 'go to drawer 1'


# -- env PI (an extension of the paper: env_pi) ------------------------------------------------


def env_rule(prompt, token, position):
    """With env PI in the prompt, 'pen' characters gain 0.3 nats and the others lose 0.1."""
    return -1.0 + (0.3 if chr(token) in "pen" else -0.1) * ("Privileged information from the environment" in prompt)


def test_env_pi_replace_covers_targets_without_a_successful_sibling():
    group = with_expert_plans(toy_group())
    single_win = TrajectoryGroup("toy", 0, [group.trajectories[0], group.trajectories[1], group.trajectories[3]])
    scorer = RecordingScorer(env_rule)
    rule, batch, result, base = run(scorer, [single_win], env_pi="replace", epsilon_w=0.5)
    out = result.advantages
    # Without env PI the only success (trajectory 0) has no source and keeps weight 1 (see above);
    # with it every trajectory is covered. lose_b (now trajectory 2) is hand-checked as before:
    # supports look -0.1, "go to drawer 1" (0.3 - 13 * 0.1) / 14, look -0.1 -> w = [1.25, 0.5, 1.25].
    assert turn_weights(batch, out, base, 0) != pytest.approx([1.0] * 4)
    assert turn_weights(batch, out, base, 2) == pytest.approx([1.25, 0.5, 1.25], abs=1e-5)
    for trajectory in range(3):
        weights = turn_weights(batch, out, base, trajectory)
        assert sum(weights) / len(weights) == pytest.approx(1.0, abs=1e-5)
    assert result.stats["taspo/pi_coverage"] == 1.0 and result.stats["taspo/env_pi_rows"] == 1.0
    # Only env PI was scored (no guidance written), each turn with the plan that held before its action.
    pi_prompts = [p for p in scorer.prompts if "Privileged information" in p]
    assert len(pi_prompts) == len(batch) and not any("Guidance from successful" in p for p in scorer.prompts)
    assert any("Expert plan from here: look; go to drawer 1; look" in p for p in pi_prompts)
    assert not any("Privileged information" in p for p in batch.prompts)


def test_env_pi_add_appends_env_pi_to_aligned_guidance():
    scorer = RecordingScorer(env_rule)
    rule, batch, result, base = run(scorer, [with_expert_plans(toy_group())], env_pi="add")
    both = [p for p in scorer.prompts if "Guidance from successful" in p and "Privileged information" in p]
    assert both and all(p.index("Guidance") < p.index("Privileged information") for p in both)
    assert result.stats["taspo/pi_coverage"] == 1.0


def test_success_score_lets_taspo_act_on_partial_scores():
    scorer = CharScorer(pen_rule)
    partial = batch_from_groups([partial_scores(toy_group())], scorer)
    exact = batch_from_groups([toy_group()], scorer)
    grpo = GRPOCredit(config()).compute(partial, CreditContext(config())).advantages
    # The papers' rule (won only): a uniform outcome, so the credit is GRPO's.
    papers = make_credit_rule("taspo", config()).compute(partial, CreditContext(config(), policy=scorer))
    assert torch.equal(papers.advantages, grpo) and papers.stats["taspo/pi_coverage"] == 0.0
    # score >= 0.75 counts as success: the same credit as for the group whose winners won
    # (group-normalised 0.8 / 0.2 rewards give the advantages of 1 / 0, up to advantage_eps).
    relabelled = make_credit_rule("taspo", config(success_score=0.75)).compute(
        partial, CreditContext(config(), policy=scorer)
    )
    reference = make_credit_rule("taspo", config()).compute(exact, CreditContext(config(), policy=scorer))
    assert relabelled.stats["taspo/pi_coverage"] > 0
    assert torch.allclose(relabelled.advantages, reference.advantages, atol=1e-3)
