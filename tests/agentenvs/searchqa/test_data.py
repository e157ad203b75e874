import json

import pytest

from agentenvs.searchqa.data import (
    load_flashrag_corpus,
    load_hotpotqa,
    load_nq_open,
    parse_flashrag_contents,
)


def test_hotpotqa_both_schemas(tmp_path):
    hf = {
        "id": "h1",
        "question": "Q?",
        "answer": "A",
        "type": "bridge",
        "supporting_facts": {"title": ["T1", "T2", "T1"], "sent_id": [0, 1, 2]},
        "context": {"title": ["T1", "T2"], "sentences": [["One.", " Two."], ["Three."]]},
    }
    original = [
        {
            "_id": "h2",
            "question": "Q2?",
            "answer": "B",
            "type": "comparison",
            "supporting_facts": [["T2", 0]],
            "context": [["T2", ["Three."]], ["T3", ["Four."]]],
        }
    ]
    (tmp_path / "hf.jsonl").write_text(json.dumps(hf) + "\n\n")
    (tmp_path / "orig.json").write_text(json.dumps(original))
    questions, passages = load_hotpotqa(tmp_path / "hf.jsonl")
    assert questions[0].supporting_titles == ("T1", "T2") and questions[0].answers == ("A",)
    assert [(p.title, p.text) for p in passages] == [("T1", "One. Two."), ("T2", "Three.")]
    questions, passages = load_hotpotqa(tmp_path / "orig.json")
    assert questions[0].id == "h2" and questions[0].kind == "comparison" and len(passages) == 2


def test_nq_and_flashrag(tmp_path):
    (tmp_path / "nq.jsonl").write_text(
        json.dumps({"id": "n1", "question": "who?", "golden_answers": ["X", "Y"]})
        + "\n"
        + json.dumps({"question": "what?", "answer": "Z"})
        + "\n"
    )
    first, second = load_nq_open(tmp_path / "nq.jsonl")
    assert first.answers == ("X", "Y") and second.answers == ("Z",) and second.id == "nq-1"
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"id": "7", "contents": '"Evan Morris"\nEvan was a lobbyist.'}))
    (passage,) = load_flashrag_corpus(tmp_path / "corpus.jsonl")
    assert (passage.id, passage.title, passage.text) == ("7", "Evan Morris", "Evan was a lobbyist.")
    assert parse_flashrag_contents("no title line") == ("no title line", "")


def test_bad_json_names_file_and_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"question": "ok", "golden_answers": []}\n{oops\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        load_nq_open(tmp_path / "bad.jsonl")


def test_real_files_load(searchqa_data):
    questions, passages = load_hotpotqa(searchqa_data / "hotpotqa_dev_distractor_100.jsonl")
    assert len(questions) == 100 and len(passages) >= 990
    assert sum(q.kind == "bridge" for q in questions) == 85
    assert all(len(q.supporting_titles) >= 2 for q in questions)
    assert len(load_nq_open(searchqa_data / "nq_open_test_17.jsonl")) == 17
    corpus = load_flashrag_corpus(searchqa_data / "wiki18_sample_corpus_1000.jsonl")
    assert len(corpus) == 1000 and corpus[0].title == "Evan Morris"
