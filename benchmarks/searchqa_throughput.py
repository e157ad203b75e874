"""SearchQA-v0 throughput: env steps/s with scripted agents, and BM25 queries/s vs rank-bm25.

Prints ratios against baselines measured in the same process:
- retrieval: our ``BM25Retriever`` (bm25s) vs ``rank_bm25.BM25Okapi`` on the same corpus,
  same tokens, same queries (goal >= 5x), one query at a time and batched;
- env: steps/s of the oracle agent through ``gym.make("SearchQA-v0")``;
- quality: BM25 recall@5 of HotpotQA supporting titles (when the data is present).

Run: ``python benchmarks/searchqa_throughput.py [--data-path ../shared/data/searchqa]``
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
from rank_bm25 import BM25Okapi

import agentenvs  # noqa: F401
from agentenvs.core.retrieval import BM25Retriever, passage_document
from agentenvs.searchqa.data import load_flashrag_corpus, load_hotpotqa
from agentenvs.searchqa.generator import generate_knowledge_base
from agentenvs.searchqa.scripted import ExpertAgent, play_episodes


def best_of(repeats: int, run) -> float:
    """Fastest wall time of ``repeats`` runs (least disturbed by a noisy machine)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def compare_retrievers(name: str, passages, queries, k: int = 5) -> None:
    ours = BM25Retriever(passages, cache=False)
    tokenize = ours._tokenizer  # identical tokens for both libraries
    corpus_tokens = tokenize.tokenize(
        [passage_document(p) for p in passages], update_vocab=False, show_progress=False, return_as="string"
    )
    query_tokens = tokenize.tokenize(list(queries), update_vocab=False, show_progress=False, return_as="string")
    baseline = BM25Okapi(corpus_tokens, k1=0.9, b=0.4)

    def baseline_search() -> None:
        for tokens in query_tokens:
            np.argsort(-baseline.get_scores(tokens))[:k]

    def ours_single() -> None:
        for query in queries:
            ours.search(query, k)

    t_base = best_of(3, baseline_search)
    t_single = best_of(3, ours_single)
    t_batch = best_of(3, lambda: ours.search_batch(queries, k))
    n = len(queries)
    print(f"[{name}] {len(passages)} passages, {n} queries, top-{k}")
    print(f"  rank-bm25        {n / t_base:10.0f} q/s   1.00x")
    print(f"  ours (one by one){n / t_single:10.0f} q/s   {t_base / t_single:5.1f}x")
    print(f"  ours (batched)   {n / t_batch:10.0f} q/s   {t_base / t_batch:5.1f}x")


def env_throughput(episodes: int) -> None:
    env = gym.make("SearchQA-v0")
    start = time.perf_counter()
    results = play_episodes(env, ExpertAgent(), episodes=episodes)
    seconds = time.perf_counter() - start
    steps = sum(r.turns for r in results)
    print(
        f"[env] SearchQA-v0 oracle: {steps / seconds:.0f} steps/s, {episodes / seconds:.0f} episodes/s "
        f"(EM {np.mean([r.em for r in results]):.3f})"
    )


def hotpot_recall(path: Path) -> None:
    questions, passages = load_hotpotqa(path)
    retriever = BM25Retriever(passages, cache=False)
    for k in (1, 3, 5, 10):
        found = total = 0
        for question in questions:
            titles = {hit.passage.title for hit in retriever.search(question.question, k)}
            found += sum(title in titles for title in question.supporting_titles)
            total += len(question.supporting_titles)
        print(f"[quality] HotpotQA-100 BM25 recall@{k} of supporting titles: {found / total:.3f}")


def main() -> None:
    default = Path(os.environ.get("AGENTENVS_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-path", type=Path, default=default / "searchqa")
    parser.add_argument("--episodes", type=int, default=2000)
    args = parser.parse_args()

    kb = generate_knowledge_base(seed=0, num_people=3000, num_cities=300, num_countries=40, num_companies=600)
    queries = [q.question for q in kb.questions[:2000]]
    compare_retrievers("generated KB", kb.passages, queries)
    hotpot = args.data_path / "hotpotqa_dev_distractor_100.jsonl"
    wiki = args.data_path / "wiki18_sample_corpus_1000.jsonl"
    if hotpot.is_file() and wiki.is_file():
        questions, passages = load_hotpotqa(hotpot)
        compare_retrievers("HotpotQA-100 paragraphs", passages, [q.question for q in questions] * 10)
        compare_retrievers("wiki-18 sample", load_flashrag_corpus(wiki), [q.question for q in questions] * 10)
        hotpot_recall(hotpot)
    else:
        print(f"(real data not found under {args.data_path}; skipped the HotpotQA / wiki-18 parts)")
    env_throughput(args.episodes)


if __name__ == "__main__":
    main()
