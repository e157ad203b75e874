import pytest
import torch

from agents.algorithms.privileged.shift import insert_privileged_text, privileged_logprob_shift
from tests.support.privileged import CharScorer


def test_insert_after_task_line():
    prompt = "Intro\nTask: find pen.\nObs"
    assert insert_privileged_text(prompt, "PI", task="find pen.") == "Intro\nTask: find pen.\nPI\nObs"
    # Task not found: after the first line.
    assert insert_privileged_text(prompt, "PI", task="other") == "Intro\nPI\nTask: find pen.\nObs"
    assert insert_privileged_text(prompt, "PI", placement="prompt_start") == "PI\n" + prompt
    assert insert_privileged_text(prompt, "PI", placement="prompt_end") == prompt + "\nPI"
    assert insert_privileged_text(prompt, "", task="find pen.") == prompt
    assert insert_privileged_text("Task: x", "PI", task="x") == "Task: x\nPI"


def test_insert_rejects_unknown_placement():
    with pytest.raises(ValueError, match="placement"):
        insert_privileged_text("p", "PI", placement="middle")  # type: ignore[arg-type]


def rule(prompt, token, position):
    # Base log-prob -1 - 0.1 * position; PI "boost" raises token 7 by 0.5 and lowers others by 0.25
    # when it sits on the line right after the task line.
    base = -1.0 - 0.1 * position
    if "Task: t\nboost" in prompt:
        return base + (0.5 if token == 7 else -0.25)
    return base


def test_shift_hand_computed_and_rows_without_pi_not_scored():
    scorer = CharScorer(rule)
    prompts = ["Task: t\nobs", "Task: t\nobs", "Task: t\nobs"]
    ids = torch.tensor([[7, 3, 7], [3, 3, 0], [7, 7, 7]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 1]])
    shift = privileged_logprob_shift(scorer, prompts, ids, mask, ["boost", "boost", None], tasks=["t"] * 3)
    assert torch.allclose(shift, torch.tensor([[0.5, -0.25, 0.5], [-0.25, -0.25, 0.0], [0.0, 0.0, 0.0]]))
    assert scorer.rows_scored == 4  # two rows, with and without PI
    base = scorer(prompts, ids, None, response_mask=mask)
    scorer.rows_scored = 0
    reused = privileged_logprob_shift(
        scorer, prompts, ids, mask, ["boost", "boost", None], tasks=["t"] * 3, base_logprobs=base
    )
    assert torch.allclose(reused, shift)
    assert scorer.rows_scored == 2  # only the with-PI pass


def test_shift_placement_matters():
    scorer = CharScorer(rule)
    ids, mask = torch.tensor([[7]]), torch.tensor([[1]])
    at_start = privileged_logprob_shift(scorer, ["Task: t\nobs"], ids, mask, ["boost"], placement="prompt_start")
    assert at_start.item() == 0.0


def test_shift_no_pi_costs_nothing_and_checks_sizes():
    scorer = CharScorer(rule)
    ids, mask = torch.tensor([[7, 1]]), torch.tensor([[1, 1]])
    assert privileged_logprob_shift(scorer, ["p"], ids, mask, [None]).abs().sum() == 0
    assert scorer.calls == 0
    with pytest.raises(ValueError, match="privileged"):
        privileged_logprob_shift(scorer, ["p"], ids, mask, [None, None])
    with pytest.raises(ValueError, match="base_logprobs"):
        privileged_logprob_shift(scorer, ["p"], ids, mask, ["x"], base_logprobs=torch.zeros(2, 2))


def test_shift_with_the_real_policy_reuses_rollout_logprobs(tiny_policy):
    """Δ from rollout log-probs equals Δ from re-scoring: the PI pass is the only extra forward."""
    prompts = ["Task: find the pen.\nYou see a desk 1.", "Task: find the pen.\nYou see a drawer 2."]
    generations = tiny_policy.generate(prompts)
    width = max(len(g.response_ids) for g in generations)
    ids = torch.zeros((2, width), dtype=torch.long)
    mask = torch.zeros((2, width), dtype=torch.long)
    old = torch.zeros((2, width))
    for row, generation in enumerate(generations):
        n = len(generation.response_ids)
        ids[row, :n], mask[row, :n] = torch.tensor(generation.response_ids), 1
        old[row, :n] = torch.tensor(generation.logprobs)
    privileged = ["Hint: the pen is on the desk 1.", None]
    reused = privileged_logprob_shift(
        tiny_policy.score, prompts, ids, mask, privileged, tasks=["find the pen."] * 2, base_logprobs=old
    )
    rescored = privileged_logprob_shift(tiny_policy.score, prompts, ids, mask, privileged, tasks=["find the pen."] * 2)
    assert torch.allclose(reused, rescored, atol=1e-4)
    assert reused[0][mask[0].bool()].abs().sum() > 0  # the hint moves the random model's log-probs
    assert (reused[1] == 0).all() and (reused[~mask.bool()] == 0).all()
    with_hint = insert_privileged_text(prompts[0], privileged[0], task="find the pen.")
    direct = tiny_policy.score([with_hint], ids[:1], response_mask=mask[:1]) - tiny_policy.score(
        prompts[:1], ids[:1], response_mask=mask[:1]
    )
    assert torch.allclose(rescored[:1], direct * mask[:1], atol=1e-5)


def test_after_task_lands_right_after_the_prompt_builders_task_line():
    from agentenvs.core.prompts import PromptBuilder

    prompt = PromptBuilder().build(
        task="Put a mug on the desk.",
        observation="You see a mug 1.",
        history=[("You are in a room.", "go to desk 1")],
        action_format="think_action",
    )
    lines = insert_privileged_text(prompt, "RUBRIC", task="Put a mug on the desk.").splitlines()
    assert lines[lines.index("Task: Put a mug on the desk.") + 1] == "RUBRIC"
    assert len(lines) == len(prompt.splitlines()) + 1


def test_shift_scores_repeated_rows_once_and_gives_each_its_delta():
    scorer = CharScorer(rule)
    prompts = ["Task: t\nobs", "Task: t\nobs", "Task: t\nother", "Task: t\nobs"]
    # Rows 0 and 3 repeat each other (padding past the mask does not count); row 1 differs in its
    # response, row 2 in its prompt.
    ids = torch.tensor([[7, 3, 0], [7, 7, 0], [7, 3, 0], [7, 3, 5]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 0], [1, 1, 0], [1, 1, 0]])
    shift = privileged_logprob_shift(scorer, prompts, ids, mask, ["boost"] * 4, tasks=["t"] * 4)
    assert scorer.rows_scored == 6  # three distinct rows, with and without PI
    expected = torch.tensor([[0.5, -0.25, 0.0], [0.5, 0.5, 0.0], [0.5, -0.25, 0.0], [0.5, -0.25, 0.0]])
    assert torch.allclose(shift, expected)
    # A repeated response under a different PI is its own row.
    scorer.rows_scored = 0
    other = privileged_logprob_shift(scorer, prompts[:2], ids[[0, 0]], mask[:2], ["boost", "calm"], tasks=["t"] * 2)
    assert scorer.rows_scored == 4 and torch.allclose(other, torch.tensor([[0.5, -0.25, 0.0], [0.0, 0.0, 0.0]]))
