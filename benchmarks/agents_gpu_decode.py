"""GPU decode and scoring speed for a Qwen3-1.7B-shaped random model at batch 64.

Needs a CUDA GPU (exits with a message otherwise). Random weights: speed does not
depend on their values, and nothing is downloaded. Measured, in one process:

- decode ms/step: Hugging Face ``generate`` with the dynamic cache; ``generate`` with
  the static cache and ``torch.compile`` (CUDA graphs via ``reduce-overhead``); our
  ``TransformersPolicy`` decode loop (per-token log-probs) with the dynamic cache, the
  static cache, and the static cache with its step compiled (CUDA graphs; aim ≤ 2 ms/step);
- the bandwidth floor: bytes of weights read per step / the GPU's memory bandwidth;
- scoring tokens/s: ``TransformersPolicy.token_logprobs`` (teacher forcing,
  ``logits_to_keep``, chunked log-softmax) on 64 × (prompt + response) tokens.

Anchors measured on an H200 with plain HF: 70 ms/step dynamic cache, 9.3 ms/step
static cache + torch.compile, bandwidth floor ≈ 0.8 ms/step.

Run: ``python benchmarks/agents_gpu_decode.py [--batch-size 64 --prompt-tokens 256 --new-tokens 128]``
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from agents.policy import SamplingSettings, ScoreSettings, WeightSettings

H200_BANDWIDTH_BYTES_PER_S = 4.8e12


def qwen3_1p7b_config(vocab_size: int):
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40960,
        tie_word_embeddings=True,
        rope_theta=1_000_000.0,
    )


def build_model_folder(folder: str) -> None:
    """A random Qwen3-1.7B-shaped model with the Qwen vocabulary, saved as a HF folder."""
    from transformers import GenerationConfig, Qwen3ForCausalLM

    from agents.policy.models import qwen_tokenizer

    tokenizer = qwen_tokenizer()
    config = qwen3_1p7b_config(vocab_size=151936)
    config.eos_token_id, config.pad_token_id = tokenizer.eos_token_id, tokenizer.pad_token_id
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def cuda_time(function, repeats: int = 3) -> float:
    function()  # warm-up (compilation, allocator)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--skip-compile", action="store_true", help="skip the static-cache + torch.compile run")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("agents_gpu_decode.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    from agents.policy import TransformersPolicy
    from agents.policy.decoding import DecodeSettings, make_decoder

    batch, prompt_len, new = args.batch_size, args.prompt_tokens, args.new_tokens
    with tempfile.TemporaryDirectory() as folder:
        build_model_folder(folder)
        policy = TransformersPolicy(
            folder,
            weights=WeightSettings(dtype="bfloat16", device="cuda"),
            sampling=SamplingSettings(max_new_tokens=new),
            scoring=ScoreSettings(score_batch_size=batch),
            seed=0,
        )
    policy.eos_token_ids = {-1}  # decode exactly `new` tokens everywhere
    model = policy.model
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    print(
        f"{torch.cuda.get_device_name()} | Qwen3-1.7B-shaped, {params / 2**30:.2f} GiB bf16 | "
        f"batch {batch}, prompt {prompt_len}, {new} new tokens"
    )
    generator = torch.Generator(device="cuda").manual_seed(0)
    input_ids = torch.randint(0, 150000, (batch, prompt_len), device="cuda", generator=generator)
    attention_mask = torch.ones_like(input_ids)

    def hf_generate(**kwargs):  # kwargs override the defaults (the prefill passes max/min_new_tokens=1)
        defaults = {"max_new_tokens": new, "min_new_tokens": new, "do_sample": True, "top_k": 0, "top_p": 1.0}
        with torch.no_grad():
            model.generate(input_ids=input_ids, attention_mask=attention_mask, **{**defaults, **kwargs})

    def per_step(seconds_total: float, seconds_prefill: float) -> float:
        return (seconds_total - seconds_prefill) / (new - 1) * 1e3

    prefill = cuda_time(lambda: hf_generate(max_new_tokens=1, min_new_tokens=1))
    dynamic = cuda_time(lambda: hf_generate())
    print(f"HF generate, dynamic cache          : {per_step(dynamic, prefill):7.2f} ms/step")
    if not args.skip_compile:
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=False)
        static = cuda_time(lambda: hf_generate(cache_implementation="static"))
        static_prefill = cuda_time(
            lambda: hf_generate(cache_implementation="static", max_new_tokens=1, min_new_tokens=1)
        )
        print(f"HF generate, static cache + compile : {per_step(static, static_prefill):7.2f} ms/step")
        model.forward = model.__class__.forward.__get__(model)

    rows = [[int(t) for t in row] for row in input_ids.tolist()]

    def decode(limit: int) -> None:  # the policy's sampling loop on the prompt rows, as generate() runs it
        logits = policy.sampler.prefill(policy.decoder, rows, limit)
        policy.sampler.sample(policy.decoder, logits, limit, False, ())

    for label, decoder in (
        ("dynamic", make_decoder(model)),
        ("static", make_decoder(model, DecodeSettings("static"))),
        ("static + compile", make_decoder(model, DecodeSettings("static", compile_decode=True))),
    ):
        policy.decoder = decoder
        ours_prefill = cuda_time(lambda: decode(1))
        ours = cuda_time(lambda: decode(new))
        print(f"ours, {label:29s}: {per_step(ours, ours_prefill):7.2f} ms/step (with log-probs)")
    print(f"bandwidth floor (weights / 4.8 TB/s): {params / H200_BANDWIDTH_BYTES_PER_S * 1e3:7.2f} ms/step")

    response = torch.randint(0, 150000, (batch, new), device="cuda", generator=generator)
    response_mask = torch.ones_like(response)

    def score():
        with torch.no_grad():
            policy.token_logprobs(input_ids, attention_mask, response, response_mask)

    seconds = cuda_time(score)
    print(
        f"scoring (teacher forcing)           : {batch * (prompt_len + new) / seconds:,.0f} tokens/s "
        f"({batch * new / seconds:,.0f} response tokens/s), peak memory "
        f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB"
    )


if __name__ == "__main__":
    main()
