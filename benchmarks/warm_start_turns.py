"""Which expert turns a WebShop warm start has learned: per turn kind, on the TUNING set's demonstrations.

The expert plays ``--episodes`` goals of the recipe's tuning set (the test split's one-option
goals) with the recipe's prompts; the warm start (teacher-forced, float32) is scored on each
turn's expert response. Per turn kind (search, product click, option click, Buy Now after an
option, Buy Now with nothing to choose): the mean negative log-likelihood of the response and
how often greedy decoding reproduces it exactly. On option turns it also scores every option
value and ``click[Buy Now]`` as whole responses: how often Buy Now outranks them all (the
warm start skips the option), how often the expert's value is the best-ranked option, and the
mean probability of Buy Now, of the expert's value and of any option value.

Usage (the figures in docs/multiturn-training.md)::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/warm_start_turns.py runs/quickstart-webshop/sft
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
from typing import Any

import torch

from agents.policy.decoding import positions_from_mask
from agents.sft import SFTAgent, SFTConfig
from agents.sft.demonstrations import Demonstration, collect_demonstrations
from agents.sft.trainer import pad_demonstrations, tokenize_demonstrations

NOT_OPTIONS = {"click[Back to Search]", "click[< Prev]", "click[Description]", "click[Features]", "click[Reviews]"}
BUY = "click[Buy Now]"


def turn_kind(demonstration: Demonstration) -> str:
    """``search``, ``product``, ``option``, ``buy-after-option`` or ``buy-no-option``."""
    page = demonstration.prompt.split("Current observation")[-1]
    if demonstration.response.startswith("search["):
        return "search"
    if "Total results" in page:
        return "product"
    if demonstration.response == BUY:
        return "buy-after-option" if "(chosen)" in page else "buy-no-option"
    return "option"


@torch.no_grad()
def response_logprobs(
    agent: SFTAgent, demonstrations: list[Demonstration], stop: list[str]
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per demonstration, the log-probs of its response tokens and whether greedy decoding picks each."""
    policy = agent.policy
    examples = tokenize_demonstrations(policy, demonstrations, stop=stop)
    rows: list[tuple[torch.Tensor, torch.Tensor]] = []
    for start in range(0, len(examples), 8):
        prompt, prompt_mask, response, response_mask = pad_demonstrations(
            examples[start : start + 8], policy.pad_token_id
        )
        ids, mask = torch.cat([prompt, response], 1), torch.cat([prompt_mask, response_mask], 1)
        logits = policy.model(input_ids=ids, attention_mask=mask, position_ids=positions_from_mask(mask)).logits
        logits = logits[:, prompt.shape[1] - 1 : -1].float()
        token = logits.log_softmax(-1).gather(-1, response.unsqueeze(-1)).squeeze(-1)
        agree = logits.argmax(-1) == response
        for row in range(len(response)):
            length = int(response_mask[row].sum())
            rows.append((token[row, :length], agree[row, :length]))
    return rows


def score_turns(agent: SFTAgent, demonstrations: list[Demonstration], stop: list[str]) -> dict[str, Any]:
    """The per-kind table and the option-turn rankings (the module docstring's figures) of ``agent``.

    Returns ``{"kinds": {kind: {"turns", "nll", "greedy_exact"}}, "options": {...}}``; ``options``
    holds the option turns' count, the shares ``buy_first``, ``expert_first`` and
    ``expert_best_value`` (the expert's value outranks the other values), ``chance`` (the mean of
    1 / values offered: what picking a value at random gets), and the mean probabilities
    ``p_buy``, ``p_expert`` and ``p_any_value``.
    """
    table: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0])
    for demonstration, (logprobs, greedy) in zip(
        demonstrations, response_logprobs(agent, demonstrations, stop), strict=True
    ):
        counts = table[turn_kind(demonstration)]
        counts[0] += 1
        counts[1] += float(-logprobs.sum())
        counts[2] += bool(greedy.all())
    kinds = {
        kind: {"turns": int(turns), "nll": nll / turns, "greedy_exact": exact / turns}
        for kind, (turns, nll, exact) in sorted(table.items())
    }
    options: collections.Counter[str] = collections.Counter()
    probabilities = []
    chances = []
    for demonstration in demonstrations:
        if turn_kind(demonstration) != "option":
            continue
        listed = demonstration.prompt.split("Admissible actions: ")[-1].split("\n")[0]
        candidates = [action for action in ast.literal_eval(listed) if action not in NOT_OPTIONS]
        scored = [Demonstration(demonstration.prompt, action, demonstration.task_id, 0) for action in candidates]
        sequence = torch.stack([logprobs.sum() for logprobs, _ in response_logprobs(agent, scored, stop)])
        buy, gold = candidates.index(BUY), candidates.index(demonstration.response)
        values = [i for i in range(len(candidates)) if i != buy]
        options["buy_first"] += int(sequence.argmax()) == buy
        options["expert_first"] += int(sequence.argmax()) == gold
        options["expert_best_value"] += max(values, key=lambda i: float(sequence[i])) == gold
        chances.append(1 / len(values))
        probabilities.append(
            [float(sequence[buy].exp()), float(sequence[gold].exp()), float(sequence[values].exp().sum())]
        )
    turns = len(chances)
    means = torch.tensor(probabilities).mean(0).tolist() if probabilities else [0.0, 0.0, 0.0]
    shares = {key: options[key] / max(turns, 1) for key in ("buy_first", "expert_first", "expert_best_value")}
    return {
        "kinds": kinds,
        "options": {
            "turns": turns,
            **shares,
            "expert_best_value_count": options["expert_best_value"],
            "chance": sum(chances) / max(turns, 1),
            "p_buy": means[0],
            "p_expert": means[1],
            "p_any_value": means[2],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warm_start", help="the quick start's sft folder (or any model)")
    parser.add_argument("--episodes", type=int, default=48, help="expert episodes on the tuning set")
    parser.add_argument("--seed", type=int, default=123, help="draws the tuning goals")
    args = parser.parse_args()
    config = SFTConfig.for_env("WebShop-v0", output_dir="runs/warm-start-turns", eval_episodes=0, trunk_dtype=None)
    agent = SFTAgent(args.warm_start, "WebShop-v0", config)
    stop = list(agent.prompt_builder.stop_strings(agent._action_format()))
    demonstrations, _ = collect_demonstrations(
        "WebShop-v0",
        episodes=args.episodes,
        prompt_builder=agent.prompt_builder,
        env_kwargs={**agent.env_kwargs, "split": "test"},
        seed=args.seed,
    )
    scores = score_turns(agent, demonstrations, stop)
    print("| turn kind | turns | NLL per turn | greedy exact |\n|---|---|---|---|")
    for kind, row in scores["kinds"].items():
        print(f"| {kind} | {row['turns']} | {row['nll']:.3f} | {row['greedy_exact']:.2f} |")
    print(json.dumps({key: round(value, 2) for key, value in scores["options"].items()}))


if __name__ == "__main__":
    main()
