"""SearchQA-v0: Search-R1 style question answering with a BM25 search tool.

Each turn the agent writes ``<search>query</search>`` (the observation is the top-k
passages inside ``<information>…</information>``, formatted ``Doc i(Title: t) text``)
or ``<answer>text</answer>`` (ends the episode; reward = exact match after SQuAD
normalisation against any gold answer, or token F1 with ``reward="f1"``; both in
``info``). Anything else is an invalid action with feedback. ``max_turns`` steps
without an answer truncate the episode with reward 0. With ``initial_search=True`` the
first observation already holds the passages found for the question (the "RAG" setting).

Datasets: ``"generated"`` (the embedded fictional knowledge base, default),
``"hotpotqa"`` (HotpotQA questions over their own context paragraphs unless a
corpus is given) and ``"nq"`` (NQ-open questions over a FlashRAG corpus).

With ``privileged=True`` (off by default), ``info["privileged"]`` (:class:`SearchQAPrivileged`,
the same at reset and every step of an episode; never in an observation) holds the gold
answers, the supporting titles and the corpus passages with those titles (uncut), and the
answer step's info adds ``gold_answers``: what the expert or a PI-conditioned credit rule
may read and the agent may not.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = gym.make("SearchQA-v0")
    >>> observation, info = env.reset(seed=0)
    >>> observation.startswith("Question:")
    True
    >>> observation, reward, terminated, truncated, info = env.step("<search>capital</search>")
    >>> observation.startswith("<information>")
    True
    >>> "privileged" in info  # off by default
    False
    >>> _, info = gym.make("SearchQA-v0", privileged=True).reset(seed=0)
    >>> sorted(info["privileged"])
    ['gold_answers', 'supporting_passages', 'supporting_titles']
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, TypedDict

import numpy as np

from agentenvs.core.checks import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_path,
    check_str_sequence,
)
from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.parsers import SEARCH_ANSWER_FEEDBACK, Projection
from agentenvs.core.paths import locate_data
from agentenvs.core.retrieval import BM25Retriever, Passage, SearchHit
from agentenvs.searchqa.data import (
    DATA_ENV_VAR,
    HOTPOTQA_FILE,
    HOW_TO_GET_DATA,
    NQ_FILE,
    WIKI_CORPUS_FILE,
    QAExample,
    load_flashrag_corpus,
    load_hotpotqa,
    load_nq_open,
)
from agentenvs.searchqa.generator import KnowledgeBase, generate_knowledge_base
from agentenvs.searchqa.scoring import exact_match, f1_score

Dataset = Literal["generated", "hotpotqa", "nq"]
DATASETS: tuple[Dataset, ...] = ("generated", "hotpotqa", "nq")

INSTRUCTION = (
    "Answer the question. To search a knowledge source, put your search terms between <search> "
    "and </search>; results come back between <information> and </information>. Search as often "
    "as you need, then put the final answer between <answer> and </answer>."
)
"""No placeholder inside the tags: small models copy a literal ``<search>query</search>``."""


class PassageRecord(TypedDict):
    """A corpus passage as JSON: its id, title and full text."""

    id: str
    title: str
    text: str


class SearchQAPrivileged(TypedDict):
    """``info["privileged"]`` of SearchQA-v0 (constant over an episode).

    Attributes:
        gold_answers: The gold answers; any of them is an exact match.
        supporting_titles: Titles of the passages that support the answer, in order of
            use (``[]`` where the dataset has none, as NQ-open).
        supporting_passages: Every corpus passage whose title is a supporting title, in
            the order of ``supporting_titles`` and then of the corpus, text uncut (``[]``
            for a title the corpus lacks).
    """

    gold_answers: list[str]
    supporting_titles: list[str]
    supporting_passages: list[PassageRecord]


def format_hits(hits: Sequence[SearchHit], max_passage_chars: int) -> str:
    """Search-R1's result block: ``Doc i(Title: t) text`` lines inside ``<information>``."""
    if not hits:
        return "<information>No results.</information>"
    lines = []
    for rank, hit in enumerate(hits, start=1):
        text = hit.passage.text
        if len(text) > max_passage_chars:
            text = text[:max_passage_chars].rstrip() + " ..."
        lines.append(f"Doc {rank}(Title: {hit.passage.title}) {text}")
    return "<information>" + "\n".join(lines) + "</information>"


class SearchQAEnv(TextEnv):
    """Question answering by searching a corpus (see the module docstring).

    Args:
        dataset: ``"generated"``, ``"hotpotqa"`` or ``"nq"``.
        data_path: Folder with the real files (else ``$AGENTENVS_SEARCHQA_DATA``).
        questions_file: A questions file overriding the dataset's default name.
        corpus_file: A FlashRAG corpus overriding the dataset's default corpus.
        split: For ``"generated"``: ``"train"`` (default), ``"test"`` or ``"all"``.
        top_k: Passages returned per search.
        max_turns: Steps before truncation.
        max_passage_chars: Passages longer than this are cut in observations.
        question_kinds: Keep only questions of these kinds (``"1hop"``/``"2hop"`` for
            generated data; ``"bridge"``/``"comparison"`` for HotpotQA). None keeps all.
        reward: What an answer earns: ``"em"`` (exact match, default, as in Search-R1) or
            ``"f1"`` (token F1: partial credit, a denser signal for small models). ``won``
            is exact match either way.
        initial_search: Search with the question itself on reset and show those passages
            before the question in the first observation (Search-R1's "RAG" setting);
            the agent may still search again.
        generator_seed: Seed of the generated knowledge base.
        test_fraction: Share of generated questions held out as ``"test"``.
        cache_index: Whether to cache the BM25 index on disk.
        render_mode: None, ``"ansi"`` or ``"human"``.
        privileged: Put ``info["privileged"]`` and the answer step's ``gold_answers`` in infos
            (see :class:`~agentenvs.core.env.TextEnv`).
    """

    held_out_split = "test"
    split_roles = MappingProxyType(
        {
            "train": "training set",
            "test": "held-out set: trainers and the README's figures evaluate here",
            "all": "every question",
        }
    )
    # The answer step's info names the gold answers: privileged too (StripPrivileged drops it).
    privileged_info_keys = ("gold_answers",)

    def __init__(
        self,
        *,
        dataset: Dataset = "generated",
        data_path: str | os.PathLike[str] | None = None,
        questions_file: str | os.PathLike[str] | None = None,
        corpus_file: str | os.PathLike[str] | None = None,
        split: Literal["train", "test", "all"] | None = None,
        top_k: int = 3,
        max_turns: int = 4,
        max_passage_chars: int = 600,
        question_kinds: Sequence[str] | None = None,
        reward: Literal["em", "f1"] = "em",
        initial_search: bool = False,
        generator_seed: int = 0,
        test_fraction: float = 0.2,
        cache_index: bool = True,
        render_mode: str | None = None,
        privileged: bool = False,
    ) -> None:
        super().__init__(
            max_turns=max_turns, action_format="search_answer", render_mode=render_mode, privileged=privileged
        )
        owner = type(self).__name__
        self.dataset = check_choice(owner, "dataset", dataset, DATASETS)
        files = {
            name: check_path(owner, name, value)
            for name, value in (
                ("data_path", data_path),
                ("questions_file", questions_file),
                ("corpus_file", corpus_file),
            )
        }
        split = check_choice(owner, "split", split, (None, "train", "test", "all"))
        self.top_k = check_int(owner, "top_k", top_k, minimum=1)
        self.max_passage_chars = check_int(owner, "max_passage_chars", max_passage_chars, minimum=1)
        kinds = None if question_kinds is None else check_str_sequence(owner, "question_kinds", question_kinds)
        self.reward_kind = check_choice(owner, "reward", reward, ("em", "f1"))
        self.initial_search = check_bool(owner, "initial_search", initial_search)
        generator_seed = check_int(owner, "generator_seed", generator_seed, minimum=0)
        test_fraction = check_float(
            owner, "test_fraction", test_fraction, minimum=0, maximum=1, min_inclusive=False, max_inclusive=False
        )
        cache_index = check_bool(owner, "cache_index", cache_index)
        if self.dataset == "generated":
            # The generated knowledge base reads no files: a path given with it is a mistake, not a no-op.
            ignored = [name for name, value in files.items() if value is not None]
            if ignored:
                raise ValueError(
                    f"{owner}: {', '.join(ignored)} need dataset='hotpotqa' or 'nq'; "
                    "dataset='generated' is built in and reads no files"
                )
        elif split is not None:
            raise ValueError(
                f"{owner}: split applies to dataset='generated' only (got split={split!r}, dataset={self.dataset!r})"
            )
        questions, passages = _load(
            self.dataset, files["data_path"], files["questions_file"], files["corpus_file"], generator_seed
        )
        if self.dataset == "generated":
            questions = _split_questions(questions, split or "train", test_fraction, generator_seed)
        if kinds is not None:
            available = sorted({q.kind for q in questions})
            if not set(kinds) <= set(available):
                raise ValueError(
                    f"{owner}: question_kinds {sorted(set(kinds) - set(available))} not in this dataset's {available}"
                )
            questions = [q for q in questions if q.kind in kinds]
        if not questions:
            raise ValueError(f"{owner}: dataset {self.dataset!r} has no questions")
        self.questions = {example.id: example for example in questions}
        if len(self.questions) != len(questions):
            raise ValueError(f"{owner}: question ids are not unique")
        self._task_ids = tuple(self.questions)
        self.retriever = _cached_retriever(tuple(passages), cache_index)
        self._scope = repr(
            (self.dataset, *(os.fspath(v) if v is not None else None for v in files.values()), generator_seed)
        )
        self.searches: list[str] = []
        self._passages_by_title: dict[str, tuple[Passage, ...]] | None = None  # built on first reset
        self._episode_privileged: SearchQAPrivileged | None = None

    @property
    def task_ids(self) -> Sequence[str]:
        return self._task_ids

    @property
    def current_question(self) -> QAExample:
        """The question of the current episode (gold answers included: for the expert and evaluation)."""
        if self.task_id is None:
            raise RuntimeError("call reset() first")
        return self.questions[self.task_id]

    def _has_task(self, task_id: str) -> bool:
        return task_id in self.questions

    def _task_text(self, task_id: str) -> str:
        return self.questions[task_id].question

    def _begin(self, task_id: str) -> tuple[str, dict[str, Any]]:
        self.searches = []
        self._episode_privileged = self._privileged_of(self.questions[task_id])
        question = self.questions[task_id].question
        if not self.initial_search:
            return f"Question: {question}\n{INSTRUCTION}", {}
        hits = self.retriever.search(question, self.top_k)
        observation = f"{format_hits(hits, self.max_passage_chars)}\nQuestion: {question}\n{INSTRUCTION}"
        return observation, {"retrieved_titles": [hit.passage.title for hit in hits]}

    def expert_action(self) -> str | None:
        """Search the next gold supporting title not searched yet this episode, then answer the first gold answer."""
        if self._done or self.task_id is None:
            return None
        question = self.current_question
        searched = set(self.searches)
        title = next((t for t in question.supporting_titles if t not in searched), None)
        return f"<search>{title}</search>" if title is not None else f"<answer>{question.answers[0]}</answer>"

    def _privileged(self) -> Mapping[str, Any]:
        return self._episode_privileged or {}

    def _privileged_of(self, example: QAExample) -> SearchQAPrivileged:
        if self._passages_by_title is None:
            wanted = frozenset(title for q in self.questions.values() for title in q.supporting_titles)
            self._passages_by_title = _passages_by_title(self.retriever, wanted)
        found = self._passages_by_title
        return {
            "gold_answers": list(example.answers),
            "supporting_titles": list(example.supporting_titles),
            "supporting_passages": [
                {"id": passage.id, "title": passage.title, "text": passage.text}
                for title in dict.fromkeys(example.supporting_titles)
                for passage in found.get(title, ())
            ],
        }

    def _snapshot_scope(self) -> str:
        return self._scope

    def _invalid_format_observation(self, projection: Projection) -> str:
        return projection.error or SEARCH_ANSWER_FEEDBACK

    def _act(self, action: str) -> Outcome:
        if action.startswith("<search>"):
            query = action[len("<search>") : -len("</search>")]
            self.searches.append(query)
            hits = self.retriever.search(query, self.top_k)
            return Outcome(
                observation=format_hits(hits, self.max_passage_chars),
                info={"retrieved_titles": [hit.passage.title for hit in hits]},
            )
        prediction = action[len("<answer>") : -len("</answer>")]
        gold = self.current_question.answers
        em, f1 = exact_match(prediction, gold), f1_score(prediction, gold)
        return Outcome(
            observation=f"Your answer: {prediction}",
            reward=em if self.reward_kind == "em" else f1,
            terminated=True,
            won=em == 1.0,
            info={"em": em, "f1": f1, "prediction": prediction, "gold_answers": list(gold)},
        )


def _load(
    dataset: str,
    data_path: str | os.PathLike[str] | None,
    questions_file: str | os.PathLike[str] | None,
    corpus_file: str | os.PathLike[str] | None,
    generator_seed: int,
) -> tuple[list[QAExample], list[Passage]]:
    if dataset == "generated":
        kb = _cached_knowledge_base(generator_seed)
        return list(kb.questions), list(kb.passages)

    def locate(explicit: str | os.PathLike[str] | None, default_name: str, what: str) -> Path:
        return locate_data(
            what,
            explicit=explicit,
            folder=data_path,
            env_var=DATA_ENV_VAR,
            names=(default_name,),
            owner=f"SearchQA (dataset={dataset!r})",
            hint=HOW_TO_GET_DATA,
        )

    if dataset == "hotpotqa":
        questions, passages = load_hotpotqa(locate(questions_file, HOTPOTQA_FILE, "HotpotQA questions"))
        if corpus_file is not None:
            passages = load_flashrag_corpus(locate(corpus_file, WIKI_CORPUS_FILE, "corpus"))
        return questions, passages
    questions = load_nq_open(locate(questions_file, NQ_FILE, "NQ-open questions"))
    return questions, load_flashrag_corpus(locate(corpus_file, WIKI_CORPUS_FILE, "FlashRAG corpus"))


def _split_questions(questions: list[QAExample], split: str, test_fraction: float, seed: int) -> list[QAExample]:
    """A fixed split of the generated questions: every ``1/test_fraction``-th (shuffled) is test."""
    if split == "all":
        return questions
    order = np.random.default_rng(seed + 10_007).permutation(len(questions))
    num_test = max(1, int(round(test_fraction * len(questions))))
    test = set(order[:num_test].tolist())
    keep_test = split == "test"
    return [q for i, q in enumerate(questions) if (i in test) == keep_test]


@lru_cache(maxsize=4)
def _cached_knowledge_base(seed: int) -> KnowledgeBase:
    return generate_knowledge_base(seed=seed)


@lru_cache(maxsize=8)
def _passages_by_title(retriever: BM25Retriever, titles: frozenset[str]) -> dict[str, tuple[Passage, ...]]:
    """The corpus passages of each of ``titles`` (one pass over the corpus, shared by vector members)."""
    found: dict[str, list[Passage]] = {}
    for passage in retriever.passages:
        if passage.title in titles:
            found.setdefault(passage.title, []).append(passage)
    return {title: tuple(passages) for title, passages in found.items()}


@lru_cache(maxsize=8)
def _cached_retriever(passages: tuple[Passage, ...], cache_index: bool) -> BM25Retriever:
    """One retriever per corpus per process: vector envs share it instead of re-indexing."""
    return BM25Retriever(passages, cache=cache_index)
