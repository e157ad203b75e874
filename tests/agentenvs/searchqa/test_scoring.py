import pytest

from agentenvs.searchqa.scoring import exact_match, f1_score, normalize_answer


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  An   apple, a day! ", "apple day"),
        ("U.S.A.", "usa"),
        ("theater", "theater"),  # 'the' only as a word
        ("", ""),
    ],
)
def test_normalize_answer(text, normalised):
    assert normalize_answer(text) == normalised


def test_exact_match_against_any_gold():
    assert exact_match("the beatles", ["Beatles", "The Fab Four"]) == 1.0
    assert exact_match("Fab Four!", ["Beatles", "The Fab Four"]) == 1.0
    assert exact_match("Beatle", ["Beatles"]) == 0.0
    assert exact_match("anything", []) == 0.0


def test_f1_hand_computed():
    # prediction tokens: eiffel tower in paris (4); gold: eiffel tower (2); common 2
    # precision 2/4, recall 2/2 -> F1 = 2 * 0.5 * 1 / 1.5 = 2/3
    assert f1_score("Eiffel Tower in Paris", ["the Eiffel Tower"]) == pytest.approx(2 / 3)
    # repeated tokens count with multiplicity: pred "a b b" (articles dropped: "b b"), gold "b" -> p 1/2, r 1 -> 2/3
    assert f1_score("a b b", ["b"]) == pytest.approx(2 / 3)
    assert f1_score("x", ["y", "x z"]) == pytest.approx(2 / 3)  # best gold: p 1, r 1/2
    assert f1_score("", [""]) == 1.0
    assert f1_score("the", ["x"]) == 0.0
