"""Our GRPO step vs TRL's ``GRPOTrainer`` step: same tiny model, same single-turn batch shape.

Both sides do one full GRPO step on CPU: sample ``group_size`` completions for each of
``num_prompts`` chat prompts (``max_new_tokens`` each, no early stop), score them with
the same length reward, compute group-normalised advantages, and take one AdamW step
on the clipped loss (``loss_type="dapo"``, ``beta=0``, one iteration, one micro-batch).
Printed: median wall seconds per step (first step excluded as warm-up) and the ratio
ours / TRL (goal ≤ 1.0).

TRL is optional and is not a dependency of agentenvs. Install it somewhere that does
not touch the project's environment, e.g.::

    pip install --target /tmp/trl_site --no-deps trl==1.16.0 datasets==5.2.0 dill multiprocess pandas pyarrow xxhash
    PYTHONPATH=/tmp/trl_site python benchmarks/agents_vs_trl.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from agents.algorithms.base import CreditContext, make_credit_rule
from agents.config import GRPOConfig
from agents.policy import SamplingSettings, TransformersPolicy
from agents.policy.models import resolve_model
from agents.rollout import RolloutBatch, RolloutRow
from agents.training.trainer import Trainer

PROMPTS = [f"Write a short answer about topic number {i}." for i in range(64)]


def length_reward(lengths: list[int]) -> list[float]:
    """A reward with spread inside each group: shorter completions are better."""
    return [-float(n) for n in lengths]


def ours(model_path: str, num_prompts: int, group_size: int, new_tokens: int, steps: int) -> list[float]:
    config = GRPOConfig(
        num_groups=num_prompts,
        group_size=group_size,
        max_new_tokens=new_tokens,
        loss_type="dapo",
        micro_batch_size=num_prompts * group_size,
        learning_rate=1e-6,
        output_dir=tempfile.mkdtemp(),
        tensorboard=False,
        progress=False,
    )
    policy = TransformersPolicy(model_path, sampling=SamplingSettings(max_new_tokens=new_tokens), seed=0)
    policy.eos_token_ids = {-1}
    trainer = Trainer(policy, "SearchQA-v0", config)  # the env is unused: we feed the batch ourselves
    rule = make_credit_rule("grpo", config)
    prompts = [p for p in PROMPTS[:num_prompts] for _ in range(group_size)]
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        generations = policy.generate(prompts)
        rewards = length_reward([len(g.text) for g in generations])
        rows = [
            RolloutRow(
                g.prompt, g.prompt_ids, g.response_ids, g.logprobs, None, i, 0, i // group_size, rewards[i], True
            )
            for i, g in enumerate(generations)
        ]
        batch = RolloutBatch.from_rows(
            rows,
            trajectory_rewards=rewards,
            trajectory_success=[False] * len(rows),
            trajectory_group_ids=[i // group_size for i in range(len(rows))],
            pad_token_id=policy.pad_token_id,
        )
        advantages = rule.compute(batch, CreditContext(config=config)).advantages
        trainer.update(batch, advantages)
        times.append(time.perf_counter() - start)
    trainer.close()
    return times


def trl(model_path: str, num_prompts: int, group_size: int, new_tokens: int, steps: int) -> list[float]:
    import datasets.arrow_dataset
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.start)

    def reward(completions, **kwargs):
        return length_reward([len(c[0]["content"]) if isinstance(c, list) else len(c) for c in completions])

    # datasets' fingerprinting pickles pyarrow types, which fails with some dill/pyarrow pairs; the
    # fingerprint only names cache files, which this in-memory run never writes.
    datasets.arrow_dataset.generate_fingerprint = lambda dataset: "agents-vs-trl"
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": p}]} for p in PROMPTS[:num_prompts]] * steps)
    args = TRLConfig(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=num_prompts * group_size,
        num_generations=group_size,
        max_completion_length=new_tokens,
        max_steps=steps,
        learning_rate=1e-6,
        loss_type="dapo",
        beta=0.0,
        num_iterations=1,
        gradient_accumulation_steps=1,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        dataloader_num_workers=0,
        seed=0,
        shuffle_dataset=False,
        disable_dropout=True,
        generation_kwargs={"min_new_tokens": new_tokens},
    )
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    timer = StepTimer()
    trainer = GRPOTrainer(
        model=model, reward_funcs=reward, args=args, train_dataset=data, processing_class=tokenizer, callbacks=[timer]
    )
    trainer.train()
    return timer.times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-random-qwen3")
    parser.add_argument("--num-prompts", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    try:
        import trl as _trl
    except ImportError:
        raise SystemExit("trl is not importable; see this script's docstring for a side install") from None
    model_path = str(resolve_model(args.model))
    shape = (model_path, args.num_prompts, args.group_size, args.new_tokens, args.steps)
    our_times = ours(*shape)
    trl_times = trl(*shape)
    our_step = statistics.median(our_times[1:] or our_times)
    trl_step = statistics.median(trl_times[1:] or trl_times)
    print(
        f"trl {_trl.__version__}, torch {torch.__version__}, {torch.get_num_threads()} threads | model {args.model} | "
        f"{args.num_prompts} prompts x {args.group_size} completions x {args.new_tokens} tokens"
    )
    print(
        f"ours: {our_step:.3f} s/step   TRL GRPOTrainer: {trl_step:.3f} s/step   ratio ours/TRL: "
        f"{our_step / trl_step:.2f}x (goal <= 1.0)"
    )


if __name__ == "__main__":
    main()
