import numpy as np
import pytest

from agentenvs.core.retrieval import BM25Retriever, Passage, corpus_fingerprint

CORPUS = [
    Passage("1", "Paris", "Paris is the capital and largest city of France."),
    Passage("2", "Berlin", "Berlin is the capital of Germany."),
    Passage("3", "Rhine", "The Rhine flows through Germany and the Netherlands."),
    Passage("4", "Cheese", "France produces many cheeses."),
]


def test_ranking_hand_case():
    retriever = BM25Retriever(CORPUS, cache=False)
    assert retriever.search("capital of Germany", k=1)[0].passage.title == "Berlin"
    assert [h.passage.title for h in retriever.search("capital", k=4)] == ["Berlin", "Paris"]  # shorter doc first
    assert retriever.search("rivers flowing", k=1)[0].passage.title == "Rhine"  # stemming: flowing -> flow


def test_bm25_scores_match_the_lucene_formula():
    """Hand-computed Lucene BM25 (no (k1+1) factor, as Lucene >= 8) for 'germany', k1=0.9, b=0.4.

    Indexed tokens (title + text, stemmed, stop words removed):
    [pari pari capit largest citi franc] [berlin berlin capit germani]
    [rhine rhine flow through germani netherland] [chees franc produc mani chees]
    """
    retriever = BM25Retriever(CORPUS, cache=False)
    lengths = np.array([6, 4, 6, 5])
    idf = np.log(1 + (4 - 2 + 0.5) / (2 + 0.5))  # 2 of 4 docs contain 'germani'
    tf = np.array([0, 1, 1, 0])
    k1, b = 0.9, 0.4
    expected = idf * tf / (tf + k1 * (1 - b + b * lengths / lengths.mean()))
    assert expected[1] == pytest.approx(0.38205, abs=1e-5)
    assert retriever.scores("Germany") == pytest.approx(expected, rel=1e-5)


def test_batch_equals_single_and_empty_queries():
    retriever = BM25Retriever(CORPUS, cache=False)
    queries = ["capital", "the of", "cheese France", "zzzz"]
    batch = retriever.search_batch(queries, k=3)
    assert batch == [retriever.search(q, k=3) for q in queries]
    assert batch[1] == [] and batch[3] == []  # stop words only / unknown words
    with pytest.raises(ValueError, match="k must be"):
        retriever.search("x", k=0)
    with pytest.raises(ValueError, match="at least one passage"):
        BM25Retriever([], cache=False)


def test_index_is_cached_by_content_hash(tmp_path):
    first = BM25Retriever(CORPUS, cache_dir=tmp_path)
    second = BM25Retriever(CORPUS, cache_dir=tmp_path)
    assert not first.loaded_from_cache and second.loaded_from_cache
    assert second.search("capital of Germany", k=4) == first.search("capital of Germany", k=4)
    changed = CORPUS[:3] + [Passage("4", "Cheese", "Germany produces cheese.")]
    assert corpus_fingerprint(changed) != corpus_fingerprint(CORPUS)
    assert not BM25Retriever(changed, cache_dir=tmp_path).loaded_from_cache
    assert len(list(tmp_path.iterdir())) == 2
