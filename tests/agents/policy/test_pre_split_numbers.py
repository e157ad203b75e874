"""The composed TransformersPolicy samples and scores exactly as the single-class one did.

The numbers were computed with the code before the policy was split into sampler, scorer and
caches (commit 95e5ccf), on the tiny random Qwen3 with fixed seeds; the sequence of calls below is
the one that produced them (each call advances the sampling generator). Tokens must match
exactly, log-probs to 1e-4 (they were rounded to 5 decimals; the split reproduced them bit for bit
on the machine that pinned them).
"""

import pytest
import torch

from agents.policy import (
    ChatSettings,
    DecodeSettings,
    LoraOptions,
    SamplingSettings,
    TransformersPolicy,
    WeightSettings,
)

PROMPTS = ["Say hi.", "A longer prompt, so rows are left-padded.", "Say hi."]

SAMPLED = [
    [10854, 24909, 89559, 70890, 37073],
    [106072, 71568, 100528, 136969, 61042],
    [41597, 84310, 53528, 16742, 124193],
]
SAMPLED_LOGPROBS = [
    [-11.98814, -11.82051, -11.8853, -11.89769, -12.01645],
    [-11.65793, -11.89215, -12.18965, -11.80409, -11.86414],
    [-11.6828, -11.72966, -12.01421, -11.85116, -11.46884],
]
WITH_CONTEXT = [
    [-12.02272, -11.81105, -11.88643, -11.90662, -12.06469],
    [-11.65793, -11.89215, -12.18965, -11.80409, -11.86414],
    [-11.65115, -11.71923, -11.94821, -11.83178, -11.35321],
]
GREEDY = [[1339, 1339, 1339], [1339, 1339, 1339]]
GREEDY_LOGPROBS = [[-10.64427, -10.64091, -10.65222], [-10.54157, -10.54919, -10.5453]]
KEPT = [[96573, 102346, 13849, 109285, 18330], [79479, 20693, 54282, 68286, 52174]]
KEPT_PI_SCORES = [
    [-11.70111, -11.76875, -12.1801, -11.86314, -11.65085],
    [-11.96665, -11.99981, -12.02931, -11.4068, -11.75205],
]
TOKEN_LOGPROBS = [[-12.18859, -11.74765, -11.86038], [-12.11567, -11.81107, 0.0]]
CONVERSATION = [
    [62689, 119787, 126750, 4843, 97541],
    [78656, 45853, 105811, 104302, 91204],
    [60985, 82189, 113764, 9803, 39016],
    [139879, 75746, 128350, 64085, 79127],
]
CONVERSATION_LOGPROBS = [
    [-11.92397, -12.08812, -11.86305, -11.8664, -12.15383],
    [-11.697, -11.96456, -11.93207, -11.66117, -11.81195],
    [-11.8406, -11.84234, -12.03946, -11.84255, -11.87651],
    [-12.02065, -11.78999, -11.46269, -11.9075, -11.96914],
]
LORA = [[46934, 66359, 48242, 149747], [51628, 69055, 124, 83721]]
LORA_LOGPROBS = [[-11.61987, -11.9963, -11.71702, -12.04814], [-12.04332, -11.6388, -12.07, -11.85169]]
LORA_REFERENCE = [[-11.99541, -11.93787, -11.76597, -12.25743], [-12.16157, -11.60193, -12.05847, -11.88828]]


def _close(got, expected):
    got = torch.as_tensor(got, dtype=torch.float32)
    return torch.allclose(got, torch.tensor(expected, dtype=torch.float32), atol=1e-4, rtol=0)


def test_sampling_scoring_prompt_kv_reuse_and_conversations_match_the_pinned_numbers(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=5, temperature=0.7, top_p=0.9), seed=11
    )
    sampled = policy.generate(PROMPTS)
    assert [g.response_ids for g in sampled] == SAMPLED
    assert _close([g.logprobs for g in sampled], SAMPLED_LOGPROBS)
    assert [g.finish_reason for g in sampled] == ["length"] * 3
    assert _close(policy.score(PROMPTS, SAMPLED), SAMPLED_LOGPROBS)
    assert _close(policy.score(PROMPTS, SAMPLED, contexts=["Hint: wave.", None, "x"]), WITH_CONTEXT)

    greedy = policy.generate(PROMPTS[:2], greedy=True, max_new_tokens=3)
    assert [g.response_ids for g in greedy] == GREEDY
    assert _close([g.logprobs for g in greedy], GREEDY_LOGPROBS)

    with policy.keeping_prompt_caches():
        kept = policy.generate(PROMPTS[:2])
    assert [g.response_ids for g in kept] == KEPT
    reused = policy.score([p + " PI." for p in PROMPTS[:2]], KEPT, reuse_from=PROMPTS[:2])
    assert _close(reused, KEPT_PI_SCORES)
    policy.clear_prompt_caches()

    prompt_ids = torch.tensor([[0, 0, 5, 6], [7, 8, 9, 10]])
    prompt_mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    response_ids = torch.tensor([[11, 12, 13], [14, 15, 0]])
    response_mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    scored = policy.token_logprobs(prompt_ids, prompt_mask, response_ids, response_mask)
    assert scored.requires_grad and _close(scored.detach(), TOKEN_LOGPROBS)

    conversation = policy.conversations()
    turns = conversation.generate([0, 1], ["Task: A", "Task: a longer B"])
    turns += conversation.generate([1, 0], ["You see x.", "Nothing."])
    assert [g.response_ids for g in turns] == CONVERSATION
    assert _close([g.logprobs for g in turns], CONVERSATION_LOGPROBS)
    assert _close(policy.score([g.prompt for g in turns], CONVERSATION), CONVERSATION_LOGPROBS)


def test_the_static_cache_with_a_stop_string_matches_the_pinned_numbers(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=5, temperature=0.7, stop=("a",)),
        decoding=DecodeSettings(decode="static"),
        seed=11,
    )
    sampled = policy.generate(PROMPTS)
    assert [g.response_ids for g in sampled] == [SAMPLED[0][:1], SAMPLED[1], SAMPLED[2][:1]]
    assert [g.finish_reason for g in sampled] == ["stop", "length", "stop"]
    assert _close([g.logprobs[0] for g in sampled], [row[0] for row in SAMPLED_LOGPROBS])
    assert _close(sampled[1].logprobs, SAMPLED_LOGPROBS[1])


def test_lora_on_the_top_layer_with_trunk_states_and_its_reference_match_the_pinned_numbers(tiny_model_path):
    torch.manual_seed(0)  # the adapter's initialisation draws from the global generator
    policy = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(lora=LoraOptions(rank=2, alpha=4, top_layers=1)),
        sampling=SamplingSettings(max_new_tokens=4),
        chat=ChatSettings(response_prefix="<"),
        seed=5,
    )
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0.0, 0.5)
    with policy.keeping_trunk_hiddens():
        sampled = policy.generate(PROMPTS[:2])
    assert [g.response_ids for g in sampled] == LORA
    assert _close([g.logprobs for g in sampled], LORA_LOGPROBS)
    assert sampled[0].text == "< cara OG$/,\n\ub73d"
    assert [tuple(g.trunk_hiddens.shape) for g in sampled] == [(21, 64), (29, 64)]
    assert _close(policy.score(PROMPTS[:2], LORA, reference=True), LORA_REFERENCE)
    sequences = [g.prompt_ids + g.response_ids for g in sampled]
    spans = [[(len(g.prompt_ids), len(sequence))] for g, sequence in zip(sampled, sequences, strict=True)]
    with torch.no_grad():
        on_trunk = policy.sequence_logprobs(sequences, spans, trunk_hiddens=[g.trunk_hiddens for g in sampled])
    assert _close([pieces[0].tolist() for pieces in on_trunk], LORA_LOGPROBS)


@pytest.mark.parametrize("name", ["generator", "decoder", "share_prompts", "eos_token_ids"])
def test_the_settings_benchmarks_and_evaluation_swap_still_reach_the_sampler(tiny_policy, name):
    replacement = {"generator": torch.Generator(), "decoder": object(), "share_prompts": False, "eos_token_ids": {-1}}[
        name
    ]
    setattr(tiny_policy, name, replacement)
    owner = tiny_policy.codec if name == "eos_token_ids" else tiny_policy.sampler
    assert getattr(owner, name) is replacement and getattr(tiny_policy, name) is replacement
