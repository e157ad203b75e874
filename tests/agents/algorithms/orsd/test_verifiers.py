import math

import numpy as np
import pytest
import torch

from agents.algorithms.orsd.rubrics import RubricItem
from agents.algorithms.orsd.verifiers import (
    LMVerifier,
    LogprobVerifier,
    ProgrammaticVerifier,
    build_verification_prompt,
    parse_verification,
)
from tests.support.privileged import CharScorer, toy_group


def test_programmatic_verifier_matrix():
    group = toy_group()  # win_a, lose_a, win_b, lose_b
    items = [
        RubricItem.requires("take pen 2 from desk 1"),
        RubricItem.avoids("look"),
        RubricItem.order("go to desk 1", "go to drawer 1"),
        RubricItem.mentions("mug 1"),
        RubricItem("text", "The agent is careful."),
    ]
    matrix = ProgrammaticVerifier()(items, group.trajectories)
    assert matrix[:4].tolist() == [[1, 0, 1, 0], [1, 0, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0]]
    assert np.isnan(matrix[4]).all()


def test_parse_verification_first_answer_wins_and_missing_is_nan():
    answers = parse_verification("1: yes\n2. No, because\n1: no\n7: yes\n", 3)
    assert answers[:2].tolist() == [1.0, 0.0] and math.isnan(answers[2])


def test_lm_verifier_asks_only_text_items_one_prompt_per_trajectory():
    group = toy_group()
    items = [RubricItem.requires("look"), RubricItem("text", "Picks up the pen."), RubricItem("text", "Opens it.")]
    prompts_seen = []

    def complete(prompts):
        prompts_seen.extend(prompts)
        return ["1: yes\n2: no" if "take pen 2" in p else "garbage" for p in prompts]

    matrix = LMVerifier(complete)(items, group.trajectories)
    assert len(prompts_seen) == 4 and "Picks up the pen." in prompts_seen[0] and "REQUIRE" not in prompts_seen[0]
    assert matrix[0].tolist() == [0, 1, 1, 1]
    assert matrix[1, 0] == 1 and matrix[2, 0] == 0 and np.isnan(matrix[1:, 1]).all()
    assert "1. Picks up the pen." in build_verification_prompt(items[1:], group.trajectories[0])


def test_logprob_verifier_yes_iff_yes_beats_no():
    group = toy_group()
    item = RubricItem("text", "Picks up the pen.")

    def rule(prompt, token, position):
        picked = "take pen 2" in prompt
        return {1: -0.5 if picked else -2.0, 2: -1.0}[token]  # 1 = "yes", 2 = "no"

    scorer = CharScorer(rule)
    matrix = LogprobVerifier(scorer, [1], [2])([item], group.trajectories)
    assert matrix.tolist() == [[1, 0, 1, 0]]
    assert scorer.calls == 1 and scorer.rows_scored == 8


def test_logprob_verifier_multi_token_answers_sum():
    item = RubricItem("text", "Anything at all.")
    scorer = CharScorer(lambda prompt, token, position: -1.0)
    # yes = two tokens (-2 total) vs no = one token (-1): no wins.
    assert LogprobVerifier(scorer, [1, 1], [2])([item], toy_group().trajectories[:1]).tolist() == [[0.0]]
    assert torch.is_tensor(scorer(["p"], torch.tensor([[1]]), None))


def test_verifiers_handle_empty_inputs():
    assert ProgrammaticVerifier()([], toy_group().trajectories).shape == (0, 4)
    assert LMVerifier(lambda p: pytest.fail("no call expected"))([RubricItem("text", "abc def")], []).shape == (1, 0)
