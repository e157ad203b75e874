"""Update-time overhead of ORSD and TASPO credit (and RLOO, GiGPO) over GRPO on one identical batch.

One batch of ALFWorld-style trajectory groups (two wins, two losses per group; real
tokenizer, rollout log-probs from the policy) is credited and used for one policy update by
each rule, in the same process, with the weights restored in between. ``--prompt agent``
(default) renders each turn as the trainer does (preamble, task, the last two steps, the
admissible actions, the format line); ``--prompt bare`` uses only the task line and the
observation, the worst case for the ratio, since the PI's length is then most of the prompt.
Reported: median seconds of credit + update per rule and the ratio to GRPO (goals: TASPO
≤ 1.3×, ORSD ≤ 1.6×). ORSD runs its programmatic proposer/verifier, TASPO its rule-based
analyzer with aligned PI, so the extra cost is mostly the one PI scoring pass. The
default rows put the PI at the prompt's end and reuse the rollout's prompt KV
(``placement="prompt_end"``, ``reuse_prompt_cache=True``), so that pass computes only the PI, the
turn's end and the response; the ``+full`` rows are the former defaults (the PI after the task line,
the whole prompt recomputed).

Usage:
    python benchmarks/credit_overhead.py --model tiny-random-qwen3 --groups 8 --repeats 3
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import torch

from agentenvs.core.prompts import PromptBuilder
from agents.algorithms.base import CreditContext, make_credit_rule
from agents.config import GRPOConfig
from agents.policy import SamplingSettings, TransformersPolicy
from agents.rollout import RolloutBatch, RolloutRow
from agents.training.trainer import Trainer

# The toy group and LetterHunt-v0 are the test suite's stand-ins (they ship with the tests, not the package).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.privileged import default_prompt, register_letter_hunt, toy_group  # noqa: E402

# What ALFWorld lists in the toy room (a real room lists more: one "go to" per receptacle).
TOY_ADMISSIBLE = (
    "go to desk 1",
    "go to drawer 1",
    "open drawer 1",
    "close drawer 1",
    "examine desk 1",
    "examine drawer 1",
    "take pen 2 from desk 1",
    "take mug 1 from desk 1",
    "put pen 2 in/on drawer 1",
    "inventory",
    "look",
)


def agent_prompts(trajectory, config: GRPOConfig) -> list[str]:
    """Each turn's prompt as the trainer's PromptBuilder renders it."""
    builder = PromptBuilder(
        history_length=config.history_length, show_format=config.show_format, preamble=config.prompt_preamble
    )
    history: list[tuple[str, str]] = []
    prompts = []
    for turn in trajectory.turns:
        prompts.append(
            builder.build(
                task=trajectory.task,
                observation=turn.observation,
                history=history,
                admissible_actions=TOY_ADMISSIBLE,
                action_format="raw",
            )
        )
        history.append((turn.observation, turn.action))
    return prompts


def tokenized_batch(policy: TransformersPolicy, num_groups: int, prompt_style: str = "agent") -> RolloutBatch:
    """The toy groups as a RolloutBatch in the policy's own tokens, log-probs from ``policy.score``."""
    groups = [toy_group(group_id=g, task_id=f"toy{g}") for g in range(num_groups)]
    rows: list[RolloutRow] = []
    index = 0
    for group in groups:
        for trajectory in group.trajectories:
            prompts = (
                agent_prompts(trajectory, GRPOConfig())
                if prompt_style == "agent"
                else [default_prompt(trajectory.task, turn.observation) for turn in trajectory.turns]
            )
            for turn_number, (turn, prompt) in enumerate(zip(trajectory.turns, prompts, strict=True)):
                encoded = policy.tokenizer(turn.raw_output, add_special_tokens=False, return_offsets_mapping=True)
                ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
                start, end = turn.action_span.start, turn.action_span.end
                covered = [k for k, (a, b) in enumerate(offsets) if a < end and b > start]
                span = (covered[0], covered[-1] + 1) if covered else None
                rows.append(
                    RolloutRow(
                        prompt,
                        policy.prompt_ids([prompt])[0],
                        ids,
                        [0.0] * len(ids),
                        span,
                        index,
                        turn_number,
                        group.group_id,
                        turn.reward,
                        turn.valid,
                    )
                )
            index += 1
    batch = RolloutBatch.from_groups(rows, groups, pad_token_id=policy.pad_token_id)
    batch.old_logprobs = policy.score(batch.prompts, batch.response_ids, response_mask=batch.response_mask).cpu()
    return batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-random-qwen3")
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--micro-batch-size", type=int, default=16)
    parser.add_argument(
        "--prompt",
        choices=("agent", "bare"),
        default="agent",
        help="turn prompts as the trainer renders them, or task line + observation only",
    )
    args = parser.parse_args()
    torch.manual_seed(0)
    policy = TransformersPolicy(args.model, sampling=SamplingSettings(max_new_tokens=8), seed=0)
    batch = tokenized_batch(policy, args.groups, args.prompt)
    prompt_tokens = sum(len(ids) for ids in policy.prompt_ids(batch.prompts))
    print(
        f"batch: {len(batch)} turns, {prompt_tokens} prompt / {batch.num_tokens} response tokens "
        f"({args.prompt} prompts), {args.groups} groups x 4, model {args.model}"
    )
    initial = copy.deepcopy(policy.trainable_state_dict())
    common = {"micro_batch_size": args.micro_batch_size, "progress": False, "tensorboard": False}
    full = {"placement": "after_task", "reuse_prompt_cache": False}  # the former defaults
    configs = {
        "grpo": GRPOConfig(credit="grpo", **common),
        "rloo": GRPOConfig(credit="rloo", scale_rewards="none", **common),
        "gigpo": GRPOConfig(credit="gigpo", **common),
        "orsd+full": GRPOConfig(credit="orsd", credit_options=full, **common),
        "taspo+full": GRPOConfig(credit="taspo", credit_options=full, **common),
        "orsd": GRPOConfig(credit="orsd", **common),
        "taspo": GRPOConfig(credit="taspo", **common),
    }
    trainer = Trainer(policy, register_letter_hunt(), configs["grpo"])
    policy.cache_prompts(batch.prompts)  # what the rollout's prefill would have kept (weights as at rollout)
    seconds: dict[str, list[float]] = {name: [] for name in configs}
    credit_seconds: dict[str, list[float]] = {name: [] for name in configs}
    try:
        # Warm-up (untimed): the first update allocates optimizer state and buffers.
        advantages = (
            make_credit_rule("grpo", configs["grpo"]).compute(batch, CreditContext(config=configs["grpo"])).advantages
        )
        trainer.update(batch, advantages)
        for _ in range(args.repeats):
            for name, config in configs.items():  # interleaved so drift in machine load hits all rules alike
                policy.load_trainable_state_dict(copy.deepcopy(initial))
                rule = make_credit_rule(config.credit, config)
                trainer.config = config
                start = time.perf_counter()
                advantages = rule.compute(batch, CreditContext(config=config, policy=policy)).advantages
                credited = time.perf_counter()
                trainer.update(batch, advantages)
                seconds[name].append(time.perf_counter() - start)
                credit_seconds[name].append(credited - start)
                print(f"  {name}: credit {credited - start:.2f} s, credit+update {seconds[name][-1]:.2f} s", flush=True)
                extra = {
                    k: round(v, 3)
                    for k, v in getattr(rule, "stats", {}).items()
                    if k.endswith(("groups_with_rubric", "pi_coverage", "aligned_turn_fraction"))
                }
                if extra and len(seconds[name]) == 1:
                    print(f"  {name} stats: {extra}")
    finally:
        trainer.close()
    base = statistics.median(seconds["grpo"])
    print(f"{'rule':12s} {'credit+update s':>16s} {'credit s':>9s} {'ratio vs GRPO':>14s}")
    for name in configs:
        median = statistics.median(seconds[name])
        print(f"{name:12s} {median:16.3f} {statistics.median(credit_seconds[name]):9.3f} {median / base:13.2f}x")


if __name__ == "__main__":
    main()
