import pytest
import torch

from agentenvs.core.trajectory import TrajectoryGroup
from agents.algorithms import make_credit_rule
from agents.algorithms.base import CreditContext
from agents.algorithms.grpo import GRPOCredit
from agents.algorithms.orsd import ORSDCredit, ORSDOptions
from agents.config import GRPOConfig
from tests.support.privileged import (
    CharScorer,
    RecordingScorer,
    batch_from_groups,
    partial_scores,
    toy_group,
    with_expert_plans,
)


def pen_rule(prompt, token, position):
    """With any PI in the prompt, the characters of 'pen' gain 0.3 nats and every other one loses 0.1."""
    privileged = "Process rubric" in prompt or "Guidance" in prompt or "successful attempt" in prompt
    return -1.0 + (0.0 if not privileged else (0.3 if chr(token) in "pen" else -0.1))


def mixed_and_uniform_batch(scorer):
    mixed = toy_group(group_id=0, task_id="toy")
    failed = TrajectoryGroup("toy2", 1, [t for t in toy_group(1, "toy2") if not t.success])
    return batch_from_groups([mixed, failed], scorer)


def config(**options):
    return GRPOConfig(credit="orsd", credit_options=options)


def test_orsd_shaping_hand_checked_against_grpo():
    scorer = CharScorer(pen_rule)
    batch = mixed_and_uniform_batch(scorer)
    rule = make_credit_rule("orsd", config(coef=0.5, clip=0.2))
    assert isinstance(rule, ORSDCredit)
    result = rule.compute(batch, CreditContext(config(), policy=scorer))
    out = result.advantages
    base = GRPOCredit(config()).compute(batch, CreditContext(config())).advantages
    mask = batch.response_mask.bool()
    in_mixed = (batch.group_ids == 0)[:, None] & mask
    is_pen = torch.tensor([[chr(int(t)) in "pen" for t in row] for row in batch.response_ids])
    # Mixed group: Δ = +0.3 on p/e/n (clipped to 0.2, times λ = 0.5 -> +0.1), -0.1 elsewhere (-> -0.05).
    expected = base + torch.where(is_pen, torch.tensor(0.1), torch.tensor(-0.05)) * in_mixed
    assert torch.allclose(out, expected, atol=1e-5)
    assert (out[~mask] == 0).all()
    assert result.stats["orsd/groups_with_rubric"] == 0.5 and result.stats["orsd/groups_uniform_outcome"] == 0.5
    assert result.stats["orsd/selected_alignment"] == pytest.approx(1.0)
    assert 0 < result.stats["orsd/shaping_to_advantage"] < 1
    assert result.examples[0]["task_id"] == "toy" and "take pen 2 from desk 1" in result.examples[0]["rubric"]
    # Only the mixed group's rows were re-scored, once, with the rubric (rollout log-probs reused);
    # its rows that repeat a sibling's prompt and response (one rubric for the group) once in all.
    distinct = {
        (batch.prompts[row], tuple(batch.response_ids[row][mask[row]].tolist()))
        for row in range(len(batch.prompts))
        if batch.group_ids[row] == 0
    }
    assert len(distinct) < int((batch.group_ids == 0).sum())  # the toy group has repeated turns
    assert scorer.rows_scored == batch.response_ids.shape[0] + len(distinct)


def test_orsd_without_rubric_is_grpo():
    scorer = CharScorer(pen_rule)
    batch = mixed_and_uniform_batch(scorer)
    rule = ORSDCredit(config(min_alignment=0.999))  # nothing clears the bar
    rule.opts = ORSDOptions(min_alignment=1.0)
    result = rule.compute(batch, CreditContext(config(), policy=scorer))
    out = result.advantages
    assert torch.equal(out, GRPOCredit(config()).compute(batch, CreditContext(config())).advantages)
    assert result.stats["orsd/groups_with_rubric"] == 0.0


class FakePolicy:
    """generate() writes a fixed rubric; score() is a CharScorer; a tokenizer for yes/no; a reference."""

    has_reference = True

    class tokenizer:  # noqa: N801
        @staticmethod
        def encode(text, add_special_tokens=False):
            return [ord(c) for c in text]

    def __init__(self, outputs):
        self.outputs = outputs
        self.prompts = []
        self.scorer = CharScorer(pen_rule)
        self.references = 0

    def generate(self, prompts, greedy=False, max_new_tokens=None, stop=None):
        assert stop == () and max_new_tokens == 192
        self.prompts += list(prompts)
        return [type("G", (), {"text": self.outputs[i % len(self.outputs)]})() for i in range(len(prompts))]

    def score(self, prompts, responses, contexts=None, *, response_mask=None, reference=False, reuse_from=None):
        self.references += reference
        return self.scorer(prompts, responses, contexts, response_mask=response_mask)


def test_orsd_policy_written_bundles_with_reference_verifier():
    policy = FakePolicy(["1. REQUIRE: take pen 2 from desk 1\n2. The agent picks up the pen.", "no rubric here"])
    batch = mixed_and_uniform_batch(policy.scorer)
    rule = ORSDCredit(config(proposer="policy", verifier="reference", num_bundles=2))
    result = rule.compute(batch, CreditContext(config(), policy=policy))
    out = result.advantages
    assert len(policy.prompts) == 2 and "Attempt 1 (SUCCESS)" in policy.prompts[0]
    assert result.stats["orsd/bundles_proposed"] == 2 and result.stats["orsd/bundles_dropped"] == 1
    assert policy.references == 1  # the free-text item was judged by the frozen model
    assert out.shape == batch.response_ids.shape


def test_orsd_options_validate_and_name_the_field():
    with pytest.raises(ValueError, match="unknown orsd credit option"):
        ORSDCredit(config(lambda_=1.0))
    with pytest.raises(ValueError, match="ORSDOptions.clip"):
        ORSDCredit(config(clip=0))
    with pytest.raises(ValueError, match="ORSDOptions.endpoint_url"):
        ORSDOptions(verifier="endpoint", endpoint_model="m")
    with pytest.raises(ValueError, match="ORSDOptions.pattern_families"):
        ORSDOptions(pattern_families=("nonsense",))
    with pytest.raises(ValueError, match="ORSDOptions.alignment_metric"):
        ORSDOptions(alignment_metric="f1")
    assert ORSDOptions(pattern_families=["order"]).pattern_families == ("order",)


def test_orsd_exposes_the_delta_and_rubric_its_shaping_came_from():
    scorer = CharScorer(pen_rule)
    batch = mixed_and_uniform_batch(scorer)
    result = make_credit_rule("orsd", config(coef=0.5, clip=0.2)).compute(batch, CreditContext(config(), policy=scorer))
    mask = batch.response_mask.bool()
    delta, outcome = result.token_values["delta"], result.trajectory_values["advantage"]
    # A_{i,t} = A_i + λ·clip(Δ, −c, c) with the recorded Δ and A_i.
    rebuilt = outcome[batch.trajectory_index][:, None] + 0.5 * delta.clamp(-0.2, 0.2)
    assert torch.allclose(result.advantages[mask], rebuilt[mask], atol=1e-6)
    in_mixed = (batch.group_ids == 0).tolist()
    rubrics = result.row_info["privileged"]
    assert [bool(text) for text in rubrics] == in_mixed
    assert all("take pen 2 from desk 1" in text for text in rubrics if text)
    assert (delta[~(batch.group_ids == 0)] == 0).all()


# -- env PI (an extension of the paper: env_pi) ------------------------------------------------


def env_rule(prompt, token, position):
    """With env PI in the prompt, 'pen' characters gain 0.3 nats and others lose 0.1; a rubric adds nothing."""
    return -1.0 + (0.3 if chr(token) in "pen" else -0.1) * ("Privileged information from the environment" in prompt)


def test_env_pi_replace_shapes_every_group_and_reaches_only_the_scoring_pass():
    scorer = RecordingScorer(env_rule)
    mixed = with_expert_plans(toy_group(group_id=0, task_id="toy"))
    failed = with_expert_plans(TrajectoryGroup("toy2", 1, [t for t in toy_group(1, "toy2") if not t.success]))
    batch = batch_from_groups([mixed, failed], scorer)
    rollout_prompts = list(batch.prompts)
    scorer.clear()
    rule = ORSDCredit(config(coef=0.5, clip=0.2, env_pi="replace"))
    result = rule.compute(batch, CreditContext(config(), policy=scorer))
    base = GRPOCredit(config()).compute(batch, CreditContext(config())).advantages
    mask = batch.response_mask.bool()
    is_pen = torch.tensor([[chr(int(t)) in "pen" for t in row] for row in batch.response_ids])
    # Every row, the uniform (all-failed) group's included: +0.3 -> clip 0.2 -> x0.5 = +0.1; -0.1 -> -0.05.
    expected = base + torch.where(is_pen, torch.tensor(0.1), torch.tensor(-0.05)) * mask
    assert torch.allclose(result.advantages, expected, atol=1e-5)
    assert result.stats["orsd/env_pi_rows"] == 1.0 and result.stats["orsd/bundles_proposed"] == 0
    assert result.stats["orsd/groups_uniform_outcome"] == 0.5
    # The PI pass scored each distinct row once, with the plan that held before the row's action
    # (its own first); rows repeating another's prompt, plan and response shared its score.
    assert len(set(scorer.rows)) == len(scorer.rows) < len(batch)
    for row in range(len(batch)):
        trajectory = batch.trajectories[int(batch.trajectory_index[row])]
        remaining = [turn.action for turn in trajectory.turns][int(batch.turn_index[row]) :]
        assert any(f"Expert plan from here: {'; '.join(remaining)}" in p for p in scorer.scored_for(batch, row))
    assert batch.prompts == rollout_prompts and not any("Privileged information" in p for p in batch.prompts)
    assert result.examples and "env_privileged" in result.examples[0]


def test_env_pi_add_puts_the_rubric_first_and_keeps_plain_orsd_by_default():
    scorer = RecordingScorer(env_rule)
    mixed = with_expert_plans(toy_group(group_id=0, task_id="toy"))
    failed = with_expert_plans(TrajectoryGroup("toy2", 1, [t for t in toy_group(1, "toy2") if not t.success]))
    batch = batch_from_groups([mixed, failed], scorer)
    scorer.clear()
    result = ORSDCredit(config(env_pi="add")).compute(batch, CreditContext(config(), policy=scorer))
    assert len(set(scorer.rows)) == len(scorer.rows)  # each distinct row once
    for row in range(len(batch)):
        prompts = scorer.scored_for(batch, row)  # (the groups share a task text, so their rows may match both)
        if batch.group_ids[row] == 0:  # the mixed group's rows: the rubric, then the env PI
            assert any("Process rubric" in p for p in prompts)
        else:  # the uniform group's rows: env PI alone
            assert any(
                "Process rubric" not in p and "Privileged information from the environment" in p for p in prompts
            )
    env = "Privileged information from the environment"
    assert all(p.index("Process rubric") < p.index(env) for p in scorer.prompts if "Process rubric" in p)
    assert result.stats["orsd/groups_with_rubric"] == 0.5
    scorer.clear()
    plain = ORSDCredit(config()).compute(batch, CreditContext(config(), policy=scorer))
    assert not any("Privileged information" in p for p in scorer.prompts) and plain.stats["orsd/env_pi_rows"] == 0.0


def test_success_score_lets_orsd_act_on_partial_scores():
    scorer = CharScorer(pen_rule)
    partial = batch_from_groups([partial_scores(toy_group())], scorer)
    exact = batch_from_groups([toy_group()], scorer)
    grpo = GRPOCredit(config()).compute(partial, CreditContext(config())).advantages
    # The papers' rule (won only): a uniform outcome, so the credit is GRPO's.
    papers = make_credit_rule("orsd", config()).compute(partial, CreditContext(config(), policy=scorer))
    assert torch.equal(papers.advantages, grpo) and papers.stats["orsd/groups_with_rubric"] == 0.0
    # score >= 0.75 counts as success: the same credit as for the group whose winners won
    # (group-normalised 0.8 / 0.2 rewards give the advantages of 1 / 0, up to advantage_eps).
    relabelled = make_credit_rule("orsd", config(success_score=0.75)).compute(
        partial, CreditContext(config(), policy=scorer)
    )
    reference = make_credit_rule("orsd", config()).compute(exact, CreditContext(config(), policy=scorer))
    assert relabelled.stats["orsd/groups_with_rubric"] > 0
    assert torch.allclose(relabelled.advantages, reference.advantages, atol=1e-3)
