import numpy as np
import pytest
import torch

from agents.policy.sampler import Sampler, SamplingSettings, sample_top_p

PROMPTS = ["Say hi.", "A longer prompt, so that rows are left-padded."]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"temperature": 0}, r"SamplingSettings\.temperature must be a finite number > 0, got 0"),
        ({"top_p": 0.0}, r"SamplingSettings\.top_p must be a finite number in \(0, 1\], got 0\.0"),
        ({"top_p": 1.01}, r"SamplingSettings\.top_p must be a finite number in \(0, 1\]"),
        ({"max_new_tokens": 0}, r"SamplingSettings\.max_new_tokens must be an integer >= 1, got 0"),
    ],
)
def test_bad_sampling_settings_are_named(settings, message):
    with pytest.raises(ValueError, match=message):
        SamplingSettings(**settings)


def test_sampling_settings_normalise_their_types():
    settings = SamplingSettings(temperature=1, top_p=1, max_new_tokens=np.int64(3), stop=["."])  # type: ignore[arg-type]
    assert (settings.temperature, settings.top_p, settings.max_new_tokens, settings.stop) == (1.0, 1.0, 3, (".",))
    assert type(settings.temperature) is float and type(settings.max_new_tokens) is int


def test_top_p_keeps_the_smallest_set_that_reaches_it():
    probs = torch.tensor([[0.2, 0.5, 0.3]]).expand(400, 3)
    generator = torch.Generator().manual_seed(0)
    assert set(sample_top_p(probs, 0.5, generator).tolist()) == {1}
    assert set(sample_top_p(probs, 0.7, generator).tolist()) == {1, 2}  # 0.5 alone falls short of 0.7
    assert set(sample_top_p(probs, 1.0, generator).tolist()) == {0, 1, 2}


def _sampler(tiny_pieces, **settings):
    weights, codec, caches = tiny_pieces
    seed = settings.pop("seed", 0)
    return Sampler(weights.model, codec, caches, SamplingSettings(**settings), seed=seed)


def _forward_logprobs(model, prompt_ids, response_ids, temperature):
    """log softmax(logits / T) of each response token, from one plain forward over prompt and response."""
    sequence = prompt_ids + response_ids
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([sequence])).logits[0].float() / temperature
    log_probs = torch.log_softmax(logits, dim=-1)
    return torch.stack([log_probs[len(prompt_ids) + i - 1, token] for i, token in enumerate(response_ids)])


def test_each_sampled_token_s_log_prob_is_that_of_the_temperature_scaled_distribution(tiny_pieces):
    sampler = _sampler(tiny_pieces, temperature=0.6, top_p=0.9, max_new_tokens=5)
    generations = sampler.generate(PROMPTS)
    for prompt, generation in zip(PROMPTS, generations, strict=True):
        assert generation.prompt == prompt and generation.prompt_ids == sampler.codec.prompt_ids([prompt])[0]
        assert len(generation.response_ids) == 5 and generation.finish_reason == "length"
        expected = _forward_logprobs(sampler.model, generation.prompt_ids, generation.response_ids, 0.6)
        assert torch.allclose(torch.tensor(generation.logprobs), expected, atol=1e-4)
        assert generation.text == sampler.codec.tokenizer.decode(generation.response_ids, skip_special_tokens=True)


def test_the_seed_fixes_the_samples_and_greedy_ignores_the_generator(tiny_pieces):
    first = _sampler(tiny_pieces, max_new_tokens=4, seed=3).generate(PROMPTS)
    again = _sampler(tiny_pieces, max_new_tokens=4, seed=3).generate(PROMPTS)
    other = _sampler(tiny_pieces, max_new_tokens=4, seed=4).generate(PROMPTS)
    assert [g.response_ids for g in first] == [g.response_ids for g in again] != [g.response_ids for g in other]
    sampler = _sampler(tiny_pieces, max_new_tokens=4)
    greedy = [sampler.generate(PROMPTS, greedy=True) for _ in range(2)]
    assert [g.response_ids for g in greedy[0]] == [g.response_ids for g in greedy[1]]


def test_an_eos_id_ends_a_row_and_a_call_s_limit_and_stops_override_the_settings(tiny_pieces):
    sampler = _sampler(tiny_pieces, max_new_tokens=6)
    [full] = sampler.generate(PROMPTS[:1], greedy=True)
    assert len(sampler.generate(PROMPTS[:1], greedy=True, max_new_tokens=2)[0].response_ids) == 2
    stop = full.text[: full.token_offsets[1][1]]
    [stopped] = sampler.generate(PROMPTS[:1], greedy=True, stop=[stop])
    assert stopped.finish_reason == "stop" and stopped.response_ids == full.response_ids[:2]
    codec = sampler.codec
    saved, codec.eos_token_ids = codec.eos_token_ids, {full.response_ids[0]}
    try:
        [ended] = sampler.generate(PROMPTS[:1], greedy=True)
    finally:
        codec.eos_token_ids = saved
    assert ended.finish_reason == "eos" and ended.response_ids == full.response_ids[:1]
    assert sampler.generate([]) == []


def test_prompt_kv_is_kept_only_inside_the_block_and_cache_prompts_keeps_it_as_a_rollout_would(tiny_pieces):
    sampler = _sampler(tiny_pieces, max_new_tokens=2)
    caches = sampler.caches
    sampler.generate(PROMPTS)
    assert len(caches.prompts) == 0
    with caches.keeping_prompt_caches() as store:
        sampler.generate(PROMPTS + PROMPTS[:1])  # the repeated prompt is prefilled (and kept) once
    assert store is caches.prompts and len(store) == 2
    ids = sampler.codec.prompt_ids(PROMPTS)
    kept = {length: kv for length, kv in (store.longest_prefix(row + [0], row) for row in ids)}
    caches.prompts.clear()
    sampler.cache_prompts(ids)
    for row in ids:
        length, kv = caches.prompts.longest_prefix(row + [0], row)
        assert length == len(row) and torch.allclose(kv[0][0], kept[length][0][0], atol=1e-6)
    caches.prompts.clear()
