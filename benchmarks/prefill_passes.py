"""Prefill in passes of similar length against one pass: the quick start's prompts, greedy.

The env's expert plays ``--episodes`` WebShop goals of the recipe's tuning set with the recipe's
prompts (later turns only: the results and item pages, ~250 tokens, whose lengths differ); the
model then answers ``--prompts`` of them in one batch, greedy, with the recipe's token limit and
stop strings, alternately prefilled in one pass (``prefill_rows=0``) and in passes of
``--rows`` prompts sorted by length (:func:`agents.policy.decoding.length_passes`; several
values: each in turn), each twice. It prints each run's seconds, the ratio of the means to one
pass, and whether each gave the one pass's tokens.

Usage (the figures in docs/agents.md, "Prefill in passes of similar length")::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/prefill_passes.py runs/quickstart-webshop/sft
"""

from __future__ import annotations

import argparse
import statistics
import time

from agentenvs.testing.machine import cpu_model
from agents.sft import SFTAgent, SFTConfig
from agents.sft.demonstrations import collect_demonstrations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="smollm2-135m", help="a model name or folder (the warm start's)")
    parser.add_argument("--prompts", type=int, default=32, help="prompts in the batch (an evaluation's 32)")
    parser.add_argument("--rows", type=int, nargs="+", default=[8], help="prompts a pass (several: each in turn)")
    parser.add_argument("--episodes", type=int, default=16, help="expert episodes whose later turns give the prompts")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each, alternating")
    args = parser.parse_args()
    config = SFTConfig.for_env("WebShop-v0", output_dir="runs/prefill-passes", eval_episodes=0)
    agent = SFTAgent(args.model, "WebShop-v0", config)
    demonstrations, _ = collect_demonstrations(
        "WebShop-v0",
        episodes=args.episodes,
        prompt_builder=agent.prompt_builder,
        env_kwargs={**agent.env_kwargs, "split": "test"},
        seed=123,
    )
    prompts = [d.prompt for d in demonstrations if d.turn_index > 0][: args.prompts]
    policy = agent.policy
    stop = list(agent.prompt_builder.stop_strings(agent._action_format()))
    lengths = [len(ids) for ids in policy.prompt_ids(prompts)]
    print(
        f"{cpu_model()}; {len(prompts)} prompts, {sum(lengths)} tokens ({max(lengths) * len(lengths)} padded to "
        f"the longest), up to {config.max_new_tokens} new tokens, greedy"
    )
    seconds: dict[int, list[float]] = {0: [], **{rows: [] for rows in args.rows}}
    tokens: dict[int, list[list[int]]] = {}
    for _ in range(args.repeats):
        for rows in seconds:
            policy.sampler.prefill_rows = rows
            started = time.perf_counter()
            with policy.keeping_trunk_hiddens():
                generations = policy.generate(prompts, greedy=True, max_new_tokens=config.max_new_tokens, stop=stop)
            seconds[rows].append(time.perf_counter() - started)
            tokens.setdefault(rows, [g.response_ids for g in generations])
    one = statistics.mean(seconds[0])
    print(f"one pass: {' / '.join(f'{s:.1f}' for s in seconds[0])} s")
    for rows in args.rows:
        runs, ratio = " / ".join(f"{s:.1f}" for s in seconds[rows]), statistics.mean(seconds[rows]) / one
        print(f"passes of {rows}: {runs} s ({ratio:.2f}x); same tokens: {tokens[0] == tokens[rows]}")


if __name__ == "__main__":
    main()
