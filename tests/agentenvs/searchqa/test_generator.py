from collections import Counter

import pytest

from agentenvs.core.retrieval import BM25Retriever
from agentenvs.searchqa.generator import generate_knowledge_base
from agentenvs.searchqa.scoring import normalize_answer


@pytest.fixture(scope="module")
def kb():
    return generate_knowledge_base(seed=3)


def test_deterministic_per_seed(kb):
    assert generate_knowledge_base(seed=3) == kb
    assert generate_knowledge_base(seed=4).passages != kb.passages


def test_titles_unique_and_questions_well_formed(kb):
    titles = [p.title for p in kb.passages]
    assert len(set(titles)) == len(titles)
    by_title = {p.title: p for p in kb.passages}
    kinds = Counter(q.kind for q in kb.questions)
    assert kinds["1hop"] > 100 and kinds["2hop"] > 100
    assert len({q.id for q in kb.questions}) == len(kb.questions)
    for question in kb.questions:
        assert len(question.supporting_titles) == (1 if question.kind == "1hop" else 2)
        assert all(title in by_title for title in question.supporting_titles)
        # the answer is stated in the last supporting passage; the bridge entity in the first
        assert question.answers[0] in by_title[question.supporting_titles[-1]].text
        if question.kind == "2hop":
            assert question.supporting_titles[1] in by_title[question.supporting_titles[0]].text
        # the answer is not given away by the question
        assert normalize_answer(question.answers[0]) not in normalize_answer(question.question)


def test_each_question_has_a_unique_answer(kb):
    """Answers are functions of the entities: the same question text never has two answers."""
    answers: dict[str, set[str]] = {}
    for question in kb.questions:
        answers.setdefault(question.question, set()).add(question.answers[0])
    assert all(len(found) == 1 for found in answers.values())


def test_supporting_passages_are_retrievable_by_name(kb):
    retriever = BM25Retriever(kb.passages, cache=False)
    for question in kb.questions[:200]:
        for title in question.supporting_titles:
            assert retriever.search(title, k=3)[0].passage.title == title


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="num_people"):
        generate_knowledge_base(num_people=1)
