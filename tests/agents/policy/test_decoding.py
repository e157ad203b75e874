import shutil

import pytest
import torch

from agents.policy import DecodeSettings, PrefillSettings, SamplingSettings, TransformersPolicy
from agents.policy.decoding import (
    DynamicDecoder,
    StaticDecoder,
    cache_keyword,
    length_passes,
    make_decoder,
    positions_from_mask,
    returned_cache,
)
from agents.policy.sampler import shared_prefix_length

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
    dynamic = TransformersPolicy(
        str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=9, temperature=0.8), seed=3
    )
    static = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=9, temperature=0.8),
        decoding=DecodeSettings(decode="static", decode_bucket=8),
        seed=3,
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
    policy = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=7),
        decoding=DecodeSettings(decode="static"),
        seed=0,
    )
    generations = policy.generate(PROMPTS)
    scores = policy.score(PROMPTS, [g.response_ids for g in generations])
    for row, generation in enumerate(generations):
        length = len(generation.response_ids)
        assert torch.allclose(scores[row, :length], torch.tensor(generation.logprobs), atol=1e-4)


def test_static_cache_refuses_to_overflow(tiny_model_path):
    policy = TransformersPolicy(str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=2), seed=0)
    decoder = StaticDecoder(policy.model, bucket=1)
    ids = torch.tensor([policy.prompt_ids(["hi"])[0]])
    decoder.prefill(ids, torch.ones_like(ids), limit=1)
    decoder.step(torch.tensor([5]))
    with pytest.raises(RuntimeError, match="full"):
        decoder.step(torch.tensor([5]))


def test_bad_decode_settings_are_named(tiny_model_path):
    with pytest.raises(ValueError, match="DecodeSettings.decode must be one of 'dynamic', 'static', got 'paged'"):
        TransformersPolicy(str(tiny_model_path), decoding=DecodeSettings(decode="paged"))
    with pytest.raises(ValueError, match=r"DecodeSettings\.compile_decode must be False unless decode='static'"):
        TransformersPolicy(str(tiny_model_path), decoding=DecodeSettings(compile_decode=True))
    with pytest.raises(ValueError, match="decode_bucket"):
        TransformersPolicy(str(tiny_model_path), decoding=DecodeSettings(decode="static", decode_bucket=0))
    with pytest.raises(ValueError, match="DecodeSettings.decode_bucket must be an integer >= 1, got True"):
        DecodeSettings("static", decode_bucket=True)
    assert isinstance(make_decoder(torch.nn.Linear(1, 1)), DynamicDecoder)
    assert make_decoder(torch.nn.Linear(1, 1), DecodeSettings("static", decode_bucket=8)).bucket == 8


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="torch.compile on CPU needs a C++ compiler")
def test_compiled_static_decode_gives_the_same_tokens(tiny_model_path):
    eager = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=5),
        decoding=DecodeSettings(decode="static"),
        seed=1,
    )
    compiled = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=5),
        decoding=DecodeSettings(decode="static", compile_decode=True),
        seed=1,
    )
    for want, have in zip(eager.generate(PROMPTS), compiled.generate(PROMPTS), strict=True):
        assert have.response_ids == want.response_ids
        assert torch.allclose(torch.tensor(have.logprobs), torch.tensor(want.logprobs), atol=1e-4)


def test_the_in_place_growing_cache_samples_what_the_concatenating_one_does(tiny_model_path):
    from agents.policy.decoding import DynamicDecoder

    prompts = ["one", "two two two two", "three"]
    results = []
    for grow in (False, True):
        policy = TransformersPolicy(
            str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=70), seed=5
        )  # past the first capacity
        policy.decoder = DynamicDecoder(policy.model, grow_in_place=grow)
        policy.eos_token_ids = {-1}
        results.append(policy.generate(prompts))
    for a, b in zip(*results, strict=True):
        assert a.response_ids == b.response_ids
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5)


def test_length_passes_group_rows_by_length_and_leave_small_batches_whole():
    mask = torch.tensor([[0, 0, 0, 1], [1, 1, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 1]])
    assert [rows.tolist() for rows in length_passes(mask, 2)] == [[0, 4], [2, 3], [1]]
    assert length_passes(mask, 5) == [] and length_passes(mask, 0) == []
    with pytest.raises(ValueError, match="rows_per_pass must be >= 0"):
        length_passes(mask, -1)


PASS_PROMPTS = [
    "Say hi.",
    "A much longer prompt, so the batch needs left padding to line up with the short ones.",
    "Count: one two",
    "Say hi.",  # the same prompt again: prefilled once (share_prompts), then repeated
    "A mid-length prompt about nothing much.",
    "x",
]


def _first_layer_inputs(policy, run):
    """What ``run()`` returns and the ``(rows, columns)`` of each forward through the first decoder layer."""
    shapes = []
    layer = policy.model.get_base_model().get_decoder().layers[0]
    handle = layer.register_forward_pre_hook(lambda module, args: shapes.append(tuple(args[0].shape[:2])))
    try:
        return run(), shapes
    finally:
        handle.remove()


def _generate_recorded(tiny_model_path, prompts, greedy, **settings):
    """A LoRA policy's generations, kept prompt KV and first-layer input shapes for ``prompts``
    (``settings``: :class:`PrefillSettings` fields)."""
    from agents.policy import LoraOptions, WeightSettings

    torch.manual_seed(0)
    policy = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(lora=LoraOptions(rank=2, alpha=4, top_layers=1)),
        sampling=SamplingSettings(max_new_tokens=6),
        prefill=PrefillSettings(**settings),
        seed=3,
    )

    def run():
        with policy.keeping_trunk_hiddens(), policy.keeping_prompt_caches() as kept:
            return policy.generate(prompts, greedy=greedy), kept

    return policy, _first_layer_inputs(policy, run)


@pytest.mark.parametrize("greedy", [True, False])
def test_a_prefill_in_length_passes_samples_keeps_and_records_what_one_pass_does(tiny_model_path, greedy):
    results = {
        rows: _generate_recorded(tiny_model_path, PASS_PROMPTS, greedy, prefill_rows=rows, shared_prefix=0)[1]
        for rows in (0, 2)
    }
    (whole, whole_shapes), (passes, passes_shapes) = results[0], results[2]
    width = whole_shapes[0][1]
    assert whole_shapes[0][0] == 5  # the five distinct prompts in one pass, all `width` columns
    # Three passes of at most two prompts, shortest first, each on its own longest prompt's columns.
    assert [rows for rows, _ in passes_shapes[:3]] == [2, 2, 1]
    assert [columns for _, columns in passes_shapes[:3]] == sorted(columns for _, columns in passes_shapes[:3])
    assert passes_shapes[2][1] == width and sum(r * c for r, c in passes_shapes[:3]) < 5 * width
    assert passes_shapes[3:] == whole_shapes[1:]  # then the same decode steps on the joined batch
    _same_generations_kept_and_recorded(whole, passes)


def test_passes_are_refused_where_one_pass_is_the_only_way(tiny_model_path):
    policy = TransformersPolicy(str(tiny_model_path), decoding=DecodeSettings(decode="static"))
    ids, mask = torch.tensor([[1, 2], [3, 4]]), torch.ones(2, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="one pass"):
        policy.decoder.prefill(ids, mask, 4, [torch.tensor([0]), torch.tensor([1])])
    sliding = DynamicDecoder(policy.model)
    sliding.joins_passes = False  # as for a model with sliding-window layers
    with pytest.raises(ValueError, match="sliding-window layers"):
        sliding.prefill(ids, mask, 4, [torch.tensor([0]), torch.tensor([1])])
    with pytest.raises(ValueError, match="PrefillSettings.prefill_rows must be an integer >= 0, got -1"):
        PrefillSettings(prefill_rows=-1)


def _same_generations_kept_and_recorded(one, other):
    """Two runs' generations, trunk states and kept prompt KV agree (tokens exactly, floats to 1e-5)."""
    (first, first_kept), (second, second_kept) = one, other
    for a, b in zip(first, second, strict=True):
        assert a.prompt_ids == b.prompt_ids and a.response_ids == b.response_ids
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5, rtol=0)
        assert a.trunk_hiddens is not None and b.trunk_hiddens is not None
        torch.testing.assert_close(a.trunk_hiddens, b.trunk_hiddens, atol=1e-5, rtol=1e-5)
    assert len(first_kept) == len(second_kept) == len({tuple(g.prompt_ids) for g in first})
    for generation in first:
        one_kv = first_kept.longest_prefix(generation.prompt_ids, generation.prompt_ids)
        other_kv = second_kept.longest_prefix(generation.prompt_ids, generation.prompt_ids)
        assert one_kv[0] == other_kv[0] == len(generation.prompt_ids) - 1
        for (keys, values), (other_keys, other_values) in zip(one_kv[1], other_kv[1], strict=True):
            torch.testing.assert_close(keys, other_keys, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(values, other_values, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("greedy", "rows_per_pass"), [(True, 0), (False, 2)])
def test_a_prefix_every_prompt_shares_is_prefilled_once_with_the_same_results(tiny_model_path, greedy, rows_per_pass):
    prompts = ["Fixed text before each prompt. " + prompt for prompt in PASS_PROMPTS]
    results = {}
    for shared_prefix in (0, 4):
        policy, results[shared_prefix] = _generate_recorded(
            tiny_model_path, prompts, greedy, prefill_rows=rows_per_pass, shared_prefix=shared_prefix
        )
    rows = [list(ids) for ids in dict.fromkeys(tuple(ids) for ids in policy.codec.prompt_ids(prompts))]
    shared = shared_prefix_length(rows, minimum=1)
    (whole, whole_shapes), (split, split_shapes) = results[0], results[4]
    _same_generations_kept_and_recorded(whole, split)
    assert shared >= 8  # the template's start and the fixed text
    passes = next(i for i, (_, columns) in enumerate(whole_shapes) if columns == 1)  # then one token a step
    assert passes == (1 if rows_per_pass == 0 else 3)
    assert split_shapes[0] == (1, shared)  # the prefix alone, once
    prefilled = split_shapes[1 : 1 + passes]
    assert sum(r for r, _ in prefilled) == 6 - 1  # the distinct prompts, each without the prefix
    assert sum(r * c for r, c in prefilled) + shared < sum(r * c for r, c in whole_shapes[:passes])
    assert split_shapes[1 + passes :] == whole_shapes[passes:]  # the same decode steps


def test_shared_prefix_settings_are_checked_and_refused_where_one_pass_is_the_only_way(tiny_model_path):
    with pytest.raises(ValueError, match="PrefillSettings.shared_prefix must be an integer >= 0, got -1"):
        PrefillSettings(shared_prefix=-1)
    policy = TransformersPolicy(str(tiny_model_path), decoding=DecodeSettings(decode="static"))
    ids, mask = torch.tensor([[1, 2], [3, 4]]), torch.ones(2, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="one pass"):
        policy.decoder.prefill(ids, mask, 4, prefix=[7, 8])
    dynamic = DynamicDecoder(policy.model)
    with pytest.raises(ValueError, match="needs passes"):
        dynamic.prefill(ids, mask, 4, prefix=[7, 8])
