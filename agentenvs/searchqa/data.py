"""Question and corpus loaders for the formats SearchQA users have.

- HotpotQA, Hugging Face schema (``id, question, answer, type, level,
  supporting_facts{title, sent_id}, context{title, sentences}``) as JSON lines, or the
  original JSON list (``_id``, ``supporting_facts`` and ``context`` as pairs). Its
  context paragraphs form a corpus.
- NQ-open / Search-R1 questions (``id, question, golden_answers``; ``answer`` also read).
- FlashRAG / Search-R1 corpus JSON lines (``id, contents`` = ``"Title"\\ntext``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentenvs.core.retrieval import Passage  # SearchQA's corpus type lives below the envs

DATA_ENV_VAR = "AGENTENVS_SEARCHQA_DATA"

HOTPOTQA_FILE = "hotpotqa_dev_distractor_100.jsonl"
NQ_FILE = "nq_open_test_17.jsonl"
WIKI_CORPUS_FILE = "wiki18_sample_corpus_1000.jsonl"

HOW_TO_GET_DATA = (
    "Pass data_path=<folder> or set $AGENTENVS_SEARCHQA_DATA. HotpotQA: export the Hugging Face "
    "'hotpot_qa' (distractor) split as JSON lines; NQ-open and the wiki-18 corpus: the "
    "FlashRAG / Search-R1 releases (question files with 'golden_answers', corpus with 'contents')."
)


@dataclass(frozen=True)
class QAExample:
    """One question with its gold answers.

    Attributes:
        id: Question id (the env's task id).
        question: The question text.
        answers: Gold answers (any of them counts).
        supporting_titles: Titles of the passages that support the answer, in order
            of use (empty when unknown).
        kind: Question type (e.g. ``bridge``, ``comparison``, ``1hop``, ``2hop``).
    """

    id: str
    question: str
    answers: tuple[str, ...]
    supporting_titles: tuple[str, ...] = field(default=())
    kind: str = ""


def _read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSON-lines file, or of a JSON file holding a list."""
    with open(path, encoding="utf-8") as handle:
        head = handle.read(1)
        while head and head.isspace():
            head = handle.read(1)
        handle.seek(0)
        if head == "[":
            yield from json.load(handle)
            return
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: not valid JSON ({error.msg})") from error


def _hotpot_context(record: dict[str, Any]) -> list[tuple[str, list[str]]]:
    context = record["context"]
    if isinstance(context, dict):  # Hugging Face schema
        return list(zip(context["title"], context["sentences"], strict=True))
    return [(title, sentences) for title, sentences in context]  # original schema


def _hotpot_supporting_titles(record: dict[str, Any]) -> tuple[str, ...]:
    facts = record.get("supporting_facts") or {}
    titles = facts["title"] if isinstance(facts, dict) else [title for title, _ in facts]
    return tuple(dict.fromkeys(titles))


def load_hotpotqa(path: str | os.PathLike[str]) -> tuple[list[QAExample], list[Passage]]:
    """HotpotQA questions and the corpus of their context paragraphs (deduplicated)."""
    examples: list[QAExample] = []
    passages: dict[tuple[str, str], Passage] = {}
    for record in _read_records(Path(path)):
        examples.append(
            QAExample(
                id=str(record.get("id", record.get("_id"))),
                question=record["question"],
                answers=(record["answer"],),
                supporting_titles=_hotpot_supporting_titles(record),
                kind=record.get("type", ""),
            )
        )
        for title, sentences in _hotpot_context(record):
            text = "".join(sentences).strip()
            key = (title, text)
            if key not in passages:
                passages[key] = Passage(id=f"hotpot-{len(passages)}", title=title, text=text)
    return examples, list(passages.values())


def load_nq_open(path: str | os.PathLike[str]) -> list[QAExample]:
    """NQ-open / Search-R1 questions (``golden_answers`` or ``answer``)."""
    examples = []
    for index, record in enumerate(_read_records(Path(path))):
        answers = record.get("golden_answers", record.get("answer"))
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list):
            raise ValueError(f"{path}: record {index} has no 'golden_answers' or 'answer' list")
        examples.append(
            QAExample(
                id=str(record.get("id", f"nq-{index}")),
                question=record["question"],
                answers=tuple(answers),
                kind="nq",
            )
        )
    return examples


def parse_flashrag_contents(contents: str) -> tuple[str, str]:
    """Splits FlashRAG ``contents`` (``"Title"\\ntext``) into title and text."""
    title, _, text = contents.partition("\n")
    return title.strip().strip('"'), text.strip()


def load_flashrag_corpus(path: str | os.PathLike[str]) -> list[Passage]:
    """A FlashRAG / Search-R1 corpus (``id``, ``contents``)."""
    passages = []
    for index, record in enumerate(_read_records(Path(path))):
        if "contents" in record:
            title, text = parse_flashrag_contents(record["contents"])
        else:
            title, text = record.get("title", ""), record["text"]
        passages.append(Passage(id=str(record.get("id", index)), title=title, text=text))
    return passages
