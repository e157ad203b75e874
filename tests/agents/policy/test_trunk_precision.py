"""A bf16 frozen trunk: where it applies, what it casts, and that the RL ratio still starts at 1."""

import os
import subprocess
import sys

import pytest
import torch

from agents.policy import (
    DecodeSettings,
    LoraOptions,
    SamplingSettings,
    TransformersPolicy,
    WeightSettings,
    trunk_precision,
)
from agents.policy.trunk import decoder_and_head
from agents.policy.trunk_precision import lower_trunk, resolve_trunk_dtype
from agents.settings import LoraSettings
from tests.support.padded import padded_generations

PROMPTS = ["Say hi.", "A much longer prompt, so the batch needs left padding to line up.", "Mid-length prompt."]
CPU = torch.device("cpu")


def _policy(path, trunk_dtype=None, state=None, decode="dynamic"):
    torch.manual_seed(0)
    policy = TransformersPolicy(
        str(path),
        weights=WeightSettings(lora=LoraOptions(rank=2, alpha=4, top_layers=1), trunk_dtype=trunk_dtype),
        sampling=SamplingSettings(max_new_tokens=6),
        decoding=DecodeSettings(decode=decode),
        seed=0,
    )
    if state is None:
        generator = torch.Generator().manual_seed(1)
        state = {
            name: torch.randn(p.shape, generator=generator) * 0.5 if "lora_B" in name else p.detach()
            for name, p in policy.model.named_parameters()
            if p.requires_grad
        }
    policy.load_trainable_state_dict(state)
    return policy, state


def test_resolve_trunk_dtype(monkeypatch):
    f32, bf16 = torch.float32, torch.bfloat16
    assert resolve_trunk_dtype(None, dtype=f32, device=CPU, has_trunk=True) == f32
    assert resolve_trunk_dtype("bfloat16", dtype=f32, device=CPU, has_trunk=True) == bf16
    with pytest.raises(ValueError, match="needs a frozen trunk"):
        resolve_trunk_dtype("bfloat16", dtype=f32, device=CPU, has_trunk=False)
    with pytest.raises(ValueError, match="trunk_dtype must be None, 'auto' or 'bfloat16', got 'float16'"):
        resolve_trunk_dtype("float16", dtype=f32, device=CPU, has_trunk=True)  # type: ignore[arg-type]
    monkeypatch.setattr(trunk_precision, "cpu_has_bf16_units", lambda: True)
    assert resolve_trunk_dtype("auto", dtype=f32, device=CPU, has_trunk=True) == bf16
    assert resolve_trunk_dtype("auto", dtype=f32, device=CPU, has_trunk=False) == f32  # nothing frozen to lower
    assert resolve_trunk_dtype("auto", dtype=torch.float64, device=CPU, has_trunk=True) == torch.float64
    monkeypatch.setattr(trunk_precision, "cpu_has_bf16_units", lambda: False)  # emulated bf16 is slower
    assert resolve_trunk_dtype("auto", dtype=f32, device=CPU, has_trunk=True) == f32
    assert resolve_trunk_dtype("auto", dtype=f32, device=torch.device("cuda"), has_trunk=True) == bf16


def test_a_process_limited_to_avx2_has_no_bf16_units():
    # What "auto" asks on a machine without AVX-512 (the AMD EPYC of issue #27), whatever this one has.
    limited = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2"}
    code = "from agents.policy.trunk_precision import cpu_has_bf16_units; print(cpu_has_bf16_units())"
    answer = subprocess.run([sys.executable, "-c", code], env=limited, capture_output=True, text=True, check=True)
    assert answer.stdout.strip() == "False"


def test_settings_refuse_a_trunk_dtype_without_a_trunk():
    assert LoraSettings(lora=True, lora_top_layers=4, trunk_dtype="auto").trunk_dtype == "auto"
    with pytest.raises(ValueError, match="LoraSettings.trunk_dtype must be None unless lora=True with lora_top_layers"):
        LoraSettings(lora=True, trunk_dtype="bfloat16")
    with pytest.raises(ValueError, match="LoraSettings.trunk_dtype"):
        LoraSettings(lora=True, lora_top_layers=4, trunk_dtype="float16")  # type: ignore[arg-type]


def test_the_policy_refuses_bf16_without_a_trunk_before_loading_weights(tiny_model_path):
    with pytest.raises(ValueError, match="needs a frozen trunk"):
        TransformersPolicy(
            str(tiny_model_path), weights=WeightSettings(lora=LoraOptions(rank=2), trunk_dtype="bfloat16")
        )


def test_only_the_frozen_layers_are_lowered(tiny_model_path):
    policy, _ = _policy(tiny_model_path, "bfloat16")
    decoder, head = decoder_and_head(policy.model)
    assert policy.trunk_dtype == torch.bfloat16
    assert {p.dtype for p in decoder.layers[0].parameters()} == {torch.bfloat16}
    assert {p.dtype for p in decoder.layers[1].parameters()} == {torch.float32}  # the adapted layer, LoRA included
    assert head.weight.dtype == torch.float32 and decoder.norm.weight.dtype == torch.float32
    assert _policy(tiny_model_path)[0].trunk_dtype == torch.float32
    with pytest.raises(ValueError, match="first adapted layer must be in 1..1, got 2"):
        lower_trunk(policy.model, 2, torch.bfloat16)


def test_the_rollout_the_update_and_the_reference_agree_on_a_bf16_trunk(tiny_model_path):
    policy, _ = _policy(tiny_model_path, "bfloat16")
    with policy.keeping_trunk_hiddens():
        generations = policy.generate(PROMPTS)  # sampled
    tensors = padded_generations(policy, generations)
    kept = [g.trunk_hiddens for g in generations]
    assert all(h is not None and h.dtype == torch.float32 for h in kept)  # handed up in float32
    full = policy.token_logprobs(*tensors)
    trunk = policy.token_logprobs(*tensors, trunk_hiddens=kept)
    for generation, full_row, trunk_row in zip(generations, full, trunk, strict=True):
        old = torch.tensor(generation.logprobs)
        n = len(old)
        assert torch.allclose(trunk_row[:n], old, atol=1e-5)  # the update's path: ratio exp(new - old) = 1
        # A full re-forward rounds bf16 sums in another order (whole sequence, not token by token).
        assert torch.allclose(full_row[:n], old, atol=5e-3)
    with policy.reference_model() as reference:
        assert reference is policy.model  # the adapter off over the same bf16 trunk


def test_log_probs_stay_within_hundredths_of_a_nat_of_float32(tiny_model_path):
    exact, state = _policy(tiny_model_path)
    lowered, _ = _policy(tiny_model_path, "bfloat16", state=state)
    generations = exact.generate(PROMPTS, greedy=True)
    tensors = padded_generations(exact, generations)
    mask = tensors[3].bool()
    difference = (exact.token_logprobs(*tensors) - lowered.token_logprobs(*tensors))[mask].abs()
    assert 0 < difference.mean() < 0.02 and difference.max() < 0.1  # changed, slightly


def test_static_decode_gives_the_dynamic_tokens_on_a_bf16_trunk(tiny_model_path):
    dynamic, state = _policy(tiny_model_path, "bfloat16")
    static, _ = _policy(tiny_model_path, "bfloat16", state=state, decode="static")
    expected = dynamic.generate(PROMPTS, greedy=True)
    got = static.generate(PROMPTS, greedy=True)
    assert [g.response_ids for g in got] == [g.response_ids for g in expected]
    for a, b in zip(got, expected, strict=True):  # the static cache's padded widths round bf16 sums otherwise
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=5e-3)


def test_privileged_scores_reuse_the_rollouts_prompt_kv_on_a_bf16_trunk(tiny_model_path):
    # ORSD and TASPO score responses after prompts with PI, reusing the rollout's prompt KV, whose
    # trunk layers hold bf16 keys and values and whose adapted layers hold float32 ones.
    policy, _ = _policy(tiny_model_path, "bfloat16")
    with policy.keeping_prompt_caches():
        generations = policy.generate(PROMPTS)
    with_pi = [prompt + "\nHint: buy the red one." for prompt in PROMPTS]
    responses = [g.response_ids for g in generations]
    expected = policy.score(with_pi, responses)
    got = policy.score(with_pi, responses, reuse_from=PROMPTS)
    assert torch.allclose(got, expected, atol=5e-3)
    rollout = policy.score(PROMPTS, responses, reuse_from=PROMPTS)
    for row, generation in enumerate(generations):
        assert torch.allclose(rollout[row, : len(generation.logprobs)], torch.tensor(generation.logprobs), atol=5e-3)
