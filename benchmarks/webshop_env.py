"""WebShop-v0 speed: env steps/s with the oracle, search latency at 1k and 100k products, BM25 vs rank-bm25.

Prints ratios against baselines measured in the same process:
- env: in-process steps/s of the scripted oracle through ``gym.make("WebShop-v0")`` at 1k
  products, against the goal of 1,000 steps/s, and the oracle's success rate (and, for
  contrast, a shopper that buys the first search result);
- search: p50/p95 latency of one product search (top 50) at 1k and 100k generated products
  (goal instructions as queries, the search cache bypassed);
- BM25: our search vs ``rank_bm25.BM25Okapi`` on the same documents and tokens (1k and 10k
  products; rank-bm25 scores every document per query, so 100k would take minutes).

Run: ``python benchmarks/webshop_env.py [--large 100000] [--episodes 1000]``
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
from rank_bm25 import BM25Okapi

import agentenvs  # noqa: F401
from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.expert import expert_action
from agentenvs.webshop.search import SEARCH_RETURN_N, product_document

STEPS_PER_SECOND_GOAL = 1000.0


def env_throughput(episodes: int) -> None:
    env = gym.make("WebShop-v0", split="all", cache_index=False)
    webshop = env.unwrapped
    task_ids = webshop.task_ids[:episodes]
    steps = wins = 0
    start = time.perf_counter()
    for task_id in task_ids:
        env.reset(options={"task_id": task_id})
        while True:
            *_, terminated, truncated, info = env.step(expert_action(webshop.goal, webshop.page))
            steps += 1
            if terminated or truncated:
                wins += info["won"]
                break
    seconds = time.perf_counter() - start
    rate = steps / seconds
    print(
        f"[env] WebShop-v0 oracle, 1k products: {rate:.0f} steps/s ({len(task_ids) / seconds:.0f} episodes/s), "
        f"{rate / STEPS_PER_SECOND_GOAL:.1f}x the 1,000 steps/s goal; oracle success {wins / len(task_ids):.4f} "
        f"on {len(task_ids)} goals"
    )


def first_result_baseline(episodes: int) -> None:
    """How much ranking matters: buy the top result (with the goal's options) instead of the goal product."""
    env = gym.make("WebShop-v0", split="all", cache_index=False)
    webshop = env.unwrapped
    task_ids = webshop.task_ids[:episodes]
    rewards, wins = [], 0
    for task_id in task_ids:
        env.reset(options={"task_id": task_id})
        goal = webshop.goal
        env.step(f"search[{goal.instruction_text}]")
        first = webshop.page.products[0]
        env.step(f"click[{first.asin}]")
        wanted = goal.goal_options.values() if isinstance(goal.goal_options, dict) else goal.goal_options
        for value in wanted:
            if any(value in values for values in first.options.values()):
                env.step(f"click[{value}]")
        *_, info = env.step("click[Buy Now]")
        rewards.append(info["score"])
        wins += info["won"]
    print(
        f"[baseline] buy the first search result with the goal's options: success {wins / len(task_ids):.4f}, "
        f"mean reward {np.mean(rewards):.4f} on {len(task_ids)} goals"
    )


def search_latency(num_products: int, queries: int = 300) -> WebShopEngine:
    start = time.perf_counter()
    engine = WebShopEngine.generated(num_products, seed=0, cache_index=False)
    build = time.perf_counter() - start
    texts = [goal.instruction_text for goal in engine.goals[:queries]]
    latencies = []
    for text in texts:
        begin = time.perf_counter()
        engine.index.search(text, SEARCH_RETURN_N)
        latencies.append(time.perf_counter() - begin)
    p50, p95 = np.percentile(np.array(latencies) * 1000, [50, 95])
    print(
        f"[search] {num_products:>7} products: p50 {p50:6.2f} ms, p95 {p95:6.2f} ms per query "
        f"(shop generated and indexed in {build:.1f} s)"
    )
    return engine


def compare_with_rank_bm25(engine: WebShopEngine, queries: int = 100) -> None:
    retriever = engine.index._retriever
    tokenizer = retriever._tokenizer  # identical tokens for both libraries
    documents = [product_document(product) for product in engine.products.values()]
    corpus_tokens = tokenizer.tokenize(documents, update_vocab=False, show_progress=False, return_as="string")
    texts = [goal.instruction_text.lower() for goal in engine.goals[:queries]]
    query_tokens = tokenizer.tokenize(texts, update_vocab=False, show_progress=False, return_as="string")
    baseline = BM25Okapi(corpus_tokens, k1=0.9, b=0.4)

    start = time.perf_counter()
    for tokens in query_tokens:
        np.argsort(-baseline.get_scores(tokens))[:SEARCH_RETURN_N]
    t_baseline = time.perf_counter() - start
    start = time.perf_counter()
    for text in texts:
        engine.index.search(text, SEARCH_RETURN_N)
    t_ours = time.perf_counter() - start
    n = len(texts)
    print(
        f"[bm25] {len(documents)} products, {n} queries, top-{SEARCH_RETURN_N}: rank-bm25 {n / t_baseline:7.0f} q/s, "
        f"ours {n / t_ours:7.0f} q/s  ({t_baseline / t_ours:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", type=int, default=100_000, help="products in the large shop (search latency)")
    parser.add_argument("--episodes", type=int, default=1000, help="oracle episodes for steps/s")
    args = parser.parse_args()
    env_throughput(args.episodes)
    first_result_baseline(args.episodes)
    small = search_latency(1000)
    compare_with_rank_bm25(small)
    compare_with_rank_bm25(WebShopEngine.generated(10_000, seed=0, cache_index=False))
    search_latency(args.large)


if __name__ == "__main__":
    main()
