import pytest
import torch

from agents.policy import LoraOptions, SamplingSettings, TransformersPolicy, WeightSettings
from agents.policy.trunk import trunk_layer
from tests.support.padded import padded_generations

PROMPTS = [
    "Say hi.",
    "A much longer prompt, so the batch needs left padding to line up.",
    "Mid-length prompt.",
    "Say hi.",
]


@pytest.fixture()
def lora_policy(tiny_model_path):
    """LoRA on the top layer of the tiny model's two, with non-zero weights so the adapter matters."""
    torch.manual_seed(0)
    policy = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(lora=LoraOptions(rank=2, alpha=4, top_layers=1)),
        sampling=SamplingSettings(max_new_tokens=6),
        seed=0,
    )
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0.0, 0.5)
    return policy


def _stopping_generations(policy):
    """Left-padded rows of different prompt and response lengths (one ends at a stop string)."""
    [full] = policy.generate(PROMPTS[:1], greedy=True)
    stop = full.text[: full.token_offsets[1][1]]
    with policy.keeping_trunk_hiddens():
        generations = policy.generate(PROMPTS, greedy=True, stop=[stop])
    assert {len(g.response_ids) for g in generations} != {6}  # some row stopped early
    return generations


def test_trunk_layer():
    assert trunk_layer(30, 6) == 24
    assert trunk_layer(2, None) is None and trunk_layer(2, 2) is None


def test_kept_states_cover_prompt_and_response_but_the_last_token(lora_policy):
    generations = _stopping_generations(lora_policy)
    for generation in generations:
        assert generation.trunk_hiddens is not None
        assert generation.trunk_hiddens.shape == (len(generation.prompt_ids) + len(generation.response_ids) - 1, 64)
    assert lora_policy.generate(PROMPTS[:1])[0].trunk_hiddens is None  # only inside the block


def test_top_layers_on_kept_states_equal_the_full_forward_and_its_gradients(lora_policy):
    generations = _stopping_generations(lora_policy)
    tensors = padded_generations(lora_policy, generations)
    kept = [g.trunk_hiddens for g in generations]
    parameters = lora_policy.trainable_parameters()

    full = lora_policy.token_logprobs(*tensors)
    full_grads = torch.autograd.grad(full.sum(), parameters)
    trunk = lora_policy.token_logprobs(*tensors, trunk_hiddens=kept)
    trunk_grads = torch.autograd.grad(trunk.sum(), parameters)

    assert torch.allclose(full, trunk, atol=1e-4)
    assert trunk[tensors[3] == 0].abs().sum() == 0  # padding stays 0
    for generation, row in zip(generations, trunk, strict=True):
        assert torch.allclose(row[: len(generation.logprobs)], torch.tensor(generation.logprobs), atol=1e-4)
    assert any(g.abs().sum() > 0 for g in full_grads)
    for expected, got in zip(full_grads, trunk_grads, strict=True):
        assert torch.allclose(expected, got, atol=1e-4)


def test_kept_states_serve_the_reference_model_too(lora_policy):
    generations = _stopping_generations(lora_policy)
    tensors = padded_generations(lora_policy, generations)
    with torch.no_grad(), lora_policy.reference_model() as reference:
        full = lora_policy.token_logprobs(*tensors, model=reference)
        trunk = lora_policy.token_logprobs(
            *tensors, model=reference, trunk_hiddens=[g.trunk_hiddens for g in generations]
        )
    assert torch.allclose(full, trunk, atol=1e-4)
    assert not torch.allclose(full, lora_policy.token_logprobs(*tensors).detach(), atol=1e-3)  # the adapter mattered


def test_sequence_spans_check_their_inputs(lora_policy):
    [generation] = _stopping_generations(lora_policy)[:1]
    sequence = generation.prompt_ids + generation.response_ids
    with pytest.raises(ValueError, match="not inside"):
        lora_policy.sequence_logprobs([sequence], [[(len(sequence), len(sequence) + 1)]])
    with pytest.raises(ValueError, match="kept trunk states"):
        lora_policy.sequence_logprobs(
            [sequence], [[(len(generation.prompt_ids), len(sequence))]], trunk_hiddens=[generation.trunk_hiddens[:3]]
        )


def test_keeping_trunk_states_needs_a_frozen_trunk(tiny_policy, tiny_model_path):
    with pytest.raises(ValueError, match="top_layers"):
        with tiny_policy.keeping_trunk_hiddens():
            pass
    everything = TransformersPolicy(str(tiny_model_path), weights=WeightSettings(lora=LoraOptions(rank=2, alpha=4)))
    assert everything.trunk_layer is None
