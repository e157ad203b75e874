import shutil

import pytest
import torch

from agents.policy import TransformersPolicy
from agents.policy.decoding import (
    DecodeSettings,
    DynamicDecoder,
    StaticDecoder,
    cache_keyword,
    make_decoder,
    positions_from_mask,
    returned_cache,
)

PROMPTS = ["Say hi.", "A much longer prompt, so the batch needs left padding to line up.", "Count: one two"]


def test_positions_count_real_tokens_only():
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]])
    assert positions_from_mask(mask).tolist() == [[0, 0, 0, 1], [0, 1, 2, 3], [0, 0, 0, 0]]


def test_the_cache_keyword_follows_the_transformers_version():
    class New(torch.nn.Module):
        def forward(self, input_ids=None, cache=None):
            return input_ids

    class Old(torch.nn.Module):
        def forward(self, input_ids=None, past_key_values=None):
            return input_ids

    class Output:
        def __init__(self, **fields):
            self.__dict__.update(fields)

    assert cache_keyword(New()) == "cache"
    assert cache_keyword(Old()) == "past_key_values"
    assert returned_cache(Output(cache="c")) == "c"
    assert returned_cache(Output(past_key_values="p")) == "p"
    assert returned_cache(Output(cache=None, past_key_values="p")) == "p"


def test_static_cache_width_rounds_up_to_the_bucket():
    decoder = StaticDecoder(torch.nn.Linear(1, 1), bucket=16)
    assert decoder.cache_width(20, 8) == 32
    assert decoder.cache_width(24, 8) == 32
    assert decoder.cache_width(25, 8) == 48


@pytest.mark.parametrize("greedy", [True, False])
def test_static_decode_gives_the_dynamic_tokens_and_logprobs(tiny_model_path, greedy):
    dynamic = TransformersPolicy(str(tiny_model_path), max_new_tokens=9, temperature=0.8, seed=3)
    static = TransformersPolicy(
        str(tiny_model_path), max_new_tokens=9, temperature=0.8, seed=3, decode="static", decode_bucket=8
    )
    for _ in range(2):  # the second call reuses the static cache (reset, same buffers)
        expected = dynamic.generate(PROMPTS, greedy=greedy)
        got = static.generate(PROMPTS, greedy=greedy)
        for want, have in zip(expected, got, strict=True):
            assert have.response_ids == want.response_ids
            assert have.finish_reason == want.finish_reason
            assert torch.allclose(torch.tensor(have.logprobs), torch.tensor(want.logprobs), atol=1e-5)
    assert isinstance(static.decoder, StaticDecoder) and static.decoder.cache is not None


def test_static_decode_agrees_with_teacher_forced_scores(tiny_model_path):
    policy = TransformersPolicy(str(tiny_model_path), max_new_tokens=7, seed=0, decode="static")
    generations = policy.generate(PROMPTS)
    scores = policy.score(PROMPTS, [g.response_ids for g in generations])
    for row, generation in enumerate(generations):
        length = len(generation.response_ids)
        assert torch.allclose(scores[row, :length], torch.tensor(generation.logprobs), atol=1e-4)


def test_static_cache_refuses_to_overflow(tiny_model_path):
    policy = TransformersPolicy(str(tiny_model_path), max_new_tokens=2, seed=0)
    decoder = StaticDecoder(policy.model, bucket=1)
    ids = torch.tensor([policy.prompt_ids(["hi"])[0]])
    decoder.prefill(ids, torch.ones_like(ids), limit=1)
    decoder.step(torch.tensor([5]))
    with pytest.raises(RuntimeError, match="full"):
        decoder.step(torch.tensor([5]))


def test_bad_decode_settings_are_named(tiny_model_path):
    with pytest.raises(ValueError, match="decode must be one of"):
        TransformersPolicy(str(tiny_model_path), decode="paged")
    with pytest.raises(ValueError, match="compile_decode needs decode='static'"):
        TransformersPolicy(str(tiny_model_path), compile_decode=True)
    with pytest.raises(ValueError, match="decode_bucket"):
        TransformersPolicy(str(tiny_model_path), decode="static", decode_bucket=0)
    with pytest.raises(ValueError, match="decode_bucket must be an integer"):
        DecodeSettings("static", decode_bucket=True)
    assert isinstance(make_decoder(torch.nn.Linear(1, 1)), DynamicDecoder)
    assert make_decoder(torch.nn.Linear(1, 1), DecodeSettings("static", decode_bucket=8)).bucket == 8


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="torch.compile on CPU needs a C++ compiler")
def test_compiled_static_decode_gives_the_same_tokens(tiny_model_path):
    eager = TransformersPolicy(str(tiny_model_path), max_new_tokens=5, seed=1, decode="static")
    compiled = TransformersPolicy(str(tiny_model_path), max_new_tokens=5, seed=1, decode="static", compile_decode=True)
    for want, have in zip(eager.generate(PROMPTS), compiled.generate(PROMPTS), strict=True):
        assert have.response_ids == want.response_ids
        assert torch.allclose(torch.tensor(have.logprobs), torch.tensor(want.logprobs), atol=1e-4)


def test_the_in_place_growing_cache_samples_what_the_concatenating_one_does(tiny_model_path):
    from agents.policy.decoding import DynamicDecoder

    prompts = ["one", "two two two two", "three"]
    results = []
    for grow in (False, True):
        policy = TransformersPolicy(str(tiny_model_path), max_new_tokens=70, seed=5)  # past the first capacity
        policy.decoder = DynamicDecoder(policy.model, grow_in_place=grow)
        policy.eos_token_ids = {-1}
        results.append(policy.generate(prompts))
    for a, b in zip(*results, strict=True):
        assert a.response_ids == b.response_ids
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5)
