"""Policy throughput on CPU: rollout (sampling) and update (forward + backward) tokens/s.

Prints our figures and ratios against baselines measured in the same process:
- rollout: ``TransformersPolicy.generate`` (our KV-cached decode loop, which also
  returns each token's log-prob) vs Hugging Face ``model.generate`` on the same
  prompts, same number of new tokens (no early stop on either side), and our loop
  over the static cache (``decode="static"``, uncompiled) vs the default dynamic one;
- scoring: ``selective_logprobs`` (chunked) vs a full-vocabulary ``log_softmax`` + gather
  on the same logits;
- update: tokens/s of one clipped-loss forward + backward over a rollout batch
  (``TransformersPolicy.token_logprobs`` + ``policy_loss``).

Run: ``python benchmarks/agents_throughput.py --model tiny-random-qwen3 smollm2-135m``
"""

from __future__ import annotations

import argparse
import time

import torch

from agents.algorithms.loss import policy_loss
from agents.policy import SamplingSettings, TransformersPolicy, selective_logprobs
from agents.policy.decoding import DecodeSettings, make_decoder
from agents.rollout import RolloutBatch, RolloutRow

PROMPT = (
    "Question: In which city was Tronzoum Pestaelse born?\nAnswer the question. You may search a knowledge "
    "source: write <search>query</search>, then give the final answer as <answer>answer</answer>."
)


def timed(function, repeats: int) -> float:
    """Median wall seconds of ``function()`` over ``repeats`` runs (after one warm-up)."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def benchmark(model: str, batch_size: int, new_tokens: int, repeats: int) -> None:
    policy = TransformersPolicy(model, sampling=SamplingSettings(max_new_tokens=new_tokens), seed=0)
    policy.eos_token_ids = {-1}  # never stop early: both sides produce exactly new_tokens tokens
    prompts = [f"{PROMPT} (variant {i})" for i in range(batch_size)]
    tokens = batch_size * new_tokens

    ours = timed(lambda: policy.generate(prompts), repeats)
    encoded = [policy.prompt_ids([p])[0] for p in prompts]
    width = max(len(e) for e in encoded)
    input_ids = torch.tensor([[policy.pad_token_id] * (width - len(e)) + e for e in encoded])
    attention_mask = (torch.arange(width)[None, :] >= torch.tensor([width - len(e) for e in encoded])[:, None]).long()

    def hf_generate():
        with torch.no_grad():
            policy.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=True,
                top_p=1.0,
                top_k=0,
                temperature=1.0,
                pad_token_id=policy.pad_token_id,
            )

    baseline = timed(hf_generate, repeats)
    print(
        f"[{model}] rollout  batch {batch_size} x {new_tokens} new tokens: ours {tokens / ours:8.1f} tok/s, "
        f"HF generate {tokens / baseline:8.1f} tok/s, ratio {baseline / ours:.2f}x (>1: ours faster)"
    )
    dynamic_decoder, policy.decoder = policy.decoder, make_decoder(policy.model, DecodeSettings("static"))
    static = timed(lambda: policy.generate(prompts), repeats)
    policy.decoder = dynamic_decoder
    print(
        f"[{model}] rollout  static cache {tokens / static:8.1f} tok/s vs dynamic {tokens / ours:8.1f} tok/s, "
        f"ratio {ours / static:.2f}x (>1: static faster)"
    )

    generations = policy.generate(prompts)
    rows = [
        RolloutRow(g.prompt, g.prompt_ids, g.response_ids, g.logprobs, None, i, 0, i // 4, 0.0, True)
        for i, g in enumerate(generations)
    ]
    batch = RolloutBatch.from_rows(
        rows,
        trajectory_rewards=[0.0] * len(rows),
        trajectory_success=[False] * len(rows),
        trajectory_group_ids=[i // 4 for i in range(len(rows))],
        pad_token_id=policy.pad_token_id,
    )
    advantages = torch.randn(batch.response_ids.shape, generator=torch.Generator().manual_seed(0))

    def update():
        policy.model.zero_grad(set_to_none=True)
        logprobs = policy.token_logprobs(batch.prompt_ids, batch.prompt_mask, batch.response_ids, batch.response_mask)
        loss, _ = policy_loss(logprobs, batch.old_logprobs, advantages, batch.response_mask)
        loss.backward()

    seconds = timed(update, repeats)
    scored = batch.num_tokens + int(batch.prompt_mask.sum())
    print(
        f"[{model}] update   {batch.num_tokens} response tokens ({scored} with prompts): "
        f"{batch.num_tokens / seconds:8.1f} response tok/s, {scored / seconds:8.1f} total tok/s"
    )

    with torch.no_grad():
        logits = torch.randn(batch_size, new_tokens, policy.model.config.vocab_size)
    labels = batch.response_ids[:, :new_tokens]
    chunked = timed(lambda: selective_logprobs(logits, labels, chunk_size=256), repeats)
    full = timed(lambda: torch.log_softmax(logits, -1).gather(-1, labels[..., None]), repeats)
    extra_mib = logits.numel() * 4 / 2**20
    print(
        f"[{model}] log-probs over [{batch_size}, {new_tokens}, {logits.shape[-1]}] logits: chunked {chunked * 1e3:.1f} ms "
        f"vs full log_softmax {full * 1e3:.1f} ms (ratio {full / chunked:.2f}x); the full one allocates "
        f"{extra_mib:.0f} MiB more"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="+", default=["tiny-random-qwen3", "smollm2-135m"])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    for model in args.model:
        benchmark(model, args.batch_size, args.new_tokens, args.repeats)


if __name__ == "__main__":
    main()
