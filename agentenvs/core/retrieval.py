"""BM25 retrieval over a passage corpus, with the index cached on disk.

Shared by the envs that search (SearchQA's knowledge source, WebShop's product search),
so neither imports the other. Backed by ``bm25s`` (sparse-matrix BM25, Lucene variant)
with a Snowball English stemmer and English stop words. The index is cached under
``cache_dir("bm25")`` (:mod:`agentenvs.core.paths`) in a folder keyed by the SHA-256 of
the corpus content, so a corpus is indexed once per machine.

Example:
    >>> corpus = [Passage("1", "Paris", "Paris is the capital of France."),
    ...           Passage("2", "Berlin", "Berlin is the capital of Germany.")]
    >>> retriever = BM25Retriever(corpus, cache=False)
    >>> retriever.search("capital of Germany", k=1)[0].passage.title
    'Berlin'
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from bm25s.tokenization import Tokenizer

from agentenvs.core.paths import cache_dir as _cache_dir

_INDEX_FORMAT = "bm25s-lucene-snowball-en-v1"


@dataclass(frozen=True)
class Passage:
    """One retrievable passage."""

    id: str
    title: str
    text: str


def default_cache_dir() -> Path:
    """Where indexes are cached: ``$AGENTENVS_CACHE/bm25`` or ``~/.cache/agentenvs/bm25``."""
    return _cache_dir("bm25")


def corpus_fingerprint(passages: Sequence[Passage]) -> str:
    """SHA-256 over the passages' ids, titles and texts (and the index format)."""
    digest = hashlib.sha256(_INDEX_FORMAT.encode())
    for passage in passages:
        for part in (passage.id, passage.title, passage.text):
            digest.update(part.encode("utf-8"))
            digest.update(b"\x00")
    return digest.hexdigest()


def passage_document(passage: Passage) -> str:
    """The text indexed for a passage: its title, then its text."""
    return f"{passage.title}\n{passage.text}"


@dataclass(frozen=True)
class SearchHit:
    """One retrieved passage with its BM25 score."""

    passage: Passage
    score: float


class BM25Retriever:
    """BM25 over ``passages``.

    Args:
        passages: The corpus.
        cache: Whether to cache the index on disk.
        cache_dir: Where indexes are cached (None: :func:`default_cache_dir`).
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    def __init__(
        self,
        passages: Sequence[Passage],
        *,
        cache: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        k1: float = 0.9,
        b: float = 0.4,
    ) -> None:
        if not passages:
            raise ValueError("BM25Retriever needs at least one passage")
        self.passages = list(passages)
        self.k1, self.b = k1, b
        self._stemmer = Stemmer.Stemmer("english")
        self._tokenizer = Tokenizer(stopwords="en", stemmer=self._stemmer.stemWord)
        folder = None
        if cache:
            cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            folder = cache_root / f"{corpus_fingerprint(self.passages)}-k{k1}-b{b}"
        if folder is not None and (folder / "params.index.json").is_file():
            self._index = bm25s.BM25.load(str(folder), show_progress=False, verbosity=0)
            self._tokenizer.load_vocab(str(folder))
            self.loaded_from_cache = True
        else:
            self._index = self._build()
            self.loaded_from_cache = False
            if folder is not None:
                self._save(folder)

    def _build(self) -> bm25s.BM25:
        tokens = self._tokenizer.tokenize(
            [passage_document(p) for p in self.passages], update_vocab=True, show_progress=False, return_as="tuple"
        )
        index = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        index.index(tokens, show_progress=False)
        return index

    def _save(self, folder: Path) -> None:
        """Writes to a temporary sibling, then renames: readers never see half an index."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
        try:
            self._index.save(str(staging), show_progress=False)
            self._tokenizer.save_vocab(str(staging))
            os.replace(staging, folder)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another process won the race

    def __len__(self) -> int:
        return len(self.passages)

    def _query_ids(self, queries: Sequence[str]) -> list[list[int]]:
        return self._tokenizer.tokenize(list(queries), update_vocab=False, show_progress=False, return_as="ids")

    def search_batch(self, queries: Sequence[str], k: int = 3) -> list[list[SearchHit]]:
        """Top-``k`` passages for each query (only passages sharing a term with it).

        Scores come from the index's sparse matrix and top-k from ``argpartition``;
        ``bm25s.BM25.retrieve`` would start a thread pool per call, which costs more
        than the scoring itself on small corpora. Ties rank the earlier passage first.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        k = min(k, len(self.passages))
        results: list[list[SearchHit]] = []
        for ids in self._query_ids(queries):
            if not ids:
                results.append([])
                continue
            scores = self._index.get_scores(ids)
            top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
            top = top[np.lexsort((top, -scores[top]))]
            results.append([SearchHit(self.passages[int(i)], float(scores[i])) for i in top if scores[i] > 0])
        return results

    def search(self, query: str, k: int = 3) -> list[SearchHit]:
        """Top-``k`` passages for ``query``."""
        return self.search_batch([query], k)[0]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for ``query`` (for diagnostics and tests)."""
        ids = self._query_ids([query])[0]
        if not ids:
            return np.zeros(len(self.passages), dtype=np.float32)
        return self._index.get_scores(ids)
