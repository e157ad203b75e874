import pytest
import torch

from agents.policy import (
    ChatSettings,
    LoraOptions,
    PrefillSettings,
    SamplingSettings,
    ScoreSettings,
    TransformersPolicy,
    WeightSettings,
    selective_logprobs,
)
from agents.policy.generation import char_span_to_token_span


def test_selective_logprobs_matches_log_softmax_for_any_chunk_size():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=generator)
    labels = torch.randint(0, 11, (3, 5), generator=generator)
    expected = torch.log_softmax(logits / 0.7, dim=-1).gather(-1, labels[..., None]).squeeze(-1)
    for chunk_size in (1, 4, 15, 100):
        got = selective_logprobs(logits, labels, temperature=0.7, chunk_size=chunk_size)
        assert torch.allclose(got, expected, atol=1e-6)
    with pytest.raises(ValueError, match="disagree"):
        selective_logprobs(logits, labels[:, :2])


def test_char_span_to_token_span():
    offsets = [(0, 3), (3, 8), (8, 9), (9, 15)]
    assert char_span_to_token_span(offsets, 3, 9) == (1, 3)
    assert char_span_to_token_span(offsets, 4, 5) == (1, 2)
    assert char_span_to_token_span(offsets, 0, 15) == (0, 4)
    assert char_span_to_token_span(offsets, 8, 8) == (2, 2)


def test_sampled_logprobs_agree_with_teacher_forced_scores(tiny_policy):
    prompts = ["Say hi.", "A much longer prompt, so the batch needs left padding to line up."]
    generations = tiny_policy.generate(prompts)
    scores = tiny_policy.score(prompts, [g.response_ids for g in generations])
    for row, generation in enumerate(generations):
        length = len(generation.response_ids)
        assert length == 6 and generation.finish_reason == "length"
        assert torch.allclose(scores[row, :length], torch.tensor(generation.logprobs), atol=1e-4)
        assert generation.prompt_ids == tiny_policy.prompt_ids([prompts[row]])[0]


def test_temperature_and_padding_tensor_path(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=5, temperature=0.5), seed=1
    )
    generations = policy.generate(["one", "two two two"])
    ids = torch.zeros(2, 7, dtype=torch.long)
    mask = torch.zeros(2, 7, dtype=torch.long)
    for row, g in enumerate(generations):
        ids[row, : len(g.response_ids)] = torch.tensor(g.response_ids)
        mask[row, : len(g.response_ids)] = 1
    scores = policy.score(["one", "two two two"], ids, response_mask=mask)
    assert scores.shape == (2, 7) and scores[:, 5:].abs().sum() == 0
    for row, g in enumerate(generations):
        assert torch.allclose(scores[row, :5], torch.tensor(g.logprobs), atol=1e-4)


def test_score_rows_come_back_in_input_order_across_length_sorted_batches(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=4),
        scoring=ScoreSettings(score_batch_size=2),
        seed=0,
    )
    prompts = ["a", "a much longer prompt than the others", "mid length prompt", "b", "another long-ish prompt here"]
    responses = [[5, 6, 7], [8], [9, 10], [11, 12, 13, 14], [15, 16]]
    together = policy.score(prompts, responses)
    for row, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        alone = policy.score([prompt], [response])
        assert torch.allclose(together[row, : len(response)], alone[0], atol=1e-5)
        assert together[row, len(response) :].abs().sum() == 0


def test_context_changes_scores_of_the_same_tokens(tiny_policy):
    [generation] = tiny_policy.generate(["Question?"])
    plain = tiny_policy.score(["Question?"], [generation.response_ids])
    with_context = tiny_policy.score(["Question?"], [generation.response_ids], contexts=["The answer is 42."])
    same = tiny_policy.score(["Question?"], [generation.response_ids], contexts=[None])
    assert torch.equal(plain, same)
    assert not torch.allclose(plain, with_context)
    assert (
        tiny_policy.prompt_ids(["Question?"], ["The answer is 42."])[0]
        == tiny_policy.prompt_ids(["The answer is 42.\n\nQuestion?"])[0]
    )
    with pytest.raises(ValueError, match="contexts"):
        tiny_policy.score(["a", "b"], [[1], [2]], contexts=["x"])


def test_greedy_is_deterministic_and_sampling_follows_the_seed(tiny_model_path):
    a = TransformersPolicy(str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=5), seed=3)
    b = TransformersPolicy(str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=5), seed=3)
    assert [g.response_ids for g in a.generate(["x", "y"])] == [g.response_ids for g in b.generate(["x", "y"])]
    assert a.generate(["x"], greedy=True)[0].response_ids == a.generate(["x"], greedy=True)[0].response_ids


def test_response_prefix_is_in_the_text_not_the_tokens(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=8),
        chat=ChatSettings(response_prefix="<"),
        seed=0,
    )
    [generation] = policy.generate(["x"])
    assert generation.text.startswith("<")
    assert generation.prompt_ids[-1] == policy.tokenizer.encode("<", add_special_tokens=False)[-1]
    assert generation.token_offsets[0][0] == 1  # offsets count the prefix
    assert generation.token_offsets[-1][1] == len(generation.text)


def test_generation_ends_right_after_a_stop_string(tiny_policy):
    [full] = tiny_policy.generate(["x"], greedy=True)
    stop = full.text[: full.token_offsets[1][1]]
    [stopped] = tiny_policy.generate(["x"], greedy=True, stop=[stop])
    decode = tiny_policy.tokenizer.decode
    assert stopped.finish_reason == "stop"
    assert stopped.response_ids == full.response_ids[: len(stopped.response_ids)]
    assert stop in decode(stopped.response_ids) and stop not in decode(stopped.response_ids[:-1])


def test_lora_reference_is_the_base_model(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(lora=LoraOptions(rank=2, alpha=4)),
        sampling=SamplingSettings(max_new_tokens=4),
        seed=0,
    )
    assert all("lora" in name for name in policy.trainable_state_dict())
    [generation] = policy.generate(["x"])
    base = policy.score(["x"], [generation.response_ids], reference=True)
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.add_(0.5)
    moved = policy.score(["x"], [generation.response_ids])
    reference = policy.score(["x"], [generation.response_ids], reference=True)
    assert torch.allclose(base, reference) and not torch.allclose(moved, reference)


def test_lora_on_top_layers_only(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path), weights=WeightSettings(lora=LoraOptions(rank=2, alpha=4, top_layers=1))
    )
    names = list(policy.trainable_state_dict())
    assert names and all(".layers.1." in name for name in names)  # the tiny model has layers 0 and 1
    with pytest.raises(ValueError, match="top_layers"):
        LoraOptions(top_layers=0)


def test_full_finetuning_reference_is_a_frozen_copy(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(reference=True),
        sampling=SamplingSettings(max_new_tokens=4),
        seed=0,
    )
    with torch.no_grad():
        next(policy.model.parameters()).add_(0.1)
    [generation] = policy.generate(["x"])
    assert not torch.allclose(
        policy.score(["x"], [generation.response_ids]), policy.score(["x"], [generation.response_ids], reference=True)
    )
    with pytest.raises(RuntimeError, match="reference"):
        with TransformersPolicy(str(tiny_model_path)).reference_model():
            pass


def test_trainable_state_round_trip_and_mismatch(tiny_policy):
    state = tiny_policy.trainable_state_dict()
    tiny_policy.load_trainable_state_dict(state)
    with pytest.raises(KeyError, match="missing"):
        tiny_policy.load_trainable_state_dict({})


def test_bad_arguments_are_named(tiny_model_path):
    with pytest.raises(ValueError, match="temperature"):
        TransformersPolicy(str(tiny_model_path), sampling=SamplingSettings(temperature=0))
    with pytest.raises(ValueError, match="top_p"):
        TransformersPolicy(str(tiny_model_path), sampling=SamplingSettings(top_p=1.5))
    with pytest.raises(ValueError, match="neither a built-in name"):
        TransformersPolicy("/no/such/model")


def _rows_fed_to_the_first_layer(policy, run):
    """What ``run()`` returns and the batch size of each forward through the first decoder layer."""
    batches = []
    layer = policy.model.get_decoder().layers[0]
    handle = layer.register_forward_pre_hook(lambda module, args: batches.append(args[0].shape[0]))
    try:
        return run(), batches
    finally:
        handle.remove()


@pytest.mark.parametrize("conversation", [False, True])
def test_a_group_s_shared_first_prompt_is_prefilled_once_with_the_same_samples(tiny_model_path, conversation):
    prompts = [
        "Task one, said by every member of group one.",
        "Task two.",
        "Task one, said by every member of group one.",
        "Task two.",
        "Task one, said by every member of group one.",
    ]
    results = {}
    for share in (False, True):
        policy = TransformersPolicy(
            str(tiny_model_path),
            sampling=SamplingSettings(max_new_tokens=5),
            prefill=PrefillSettings(share_prompts=share, prefill_rows=0),
            seed=7,
        )

        def run(policy=policy):
            if conversation:
                return policy.conversations().generate(list(range(len(prompts))), prompts)
            return policy.generate(prompts)

        results[share] = _rows_fed_to_the_first_layer(policy, run)
    (plain, plain_batches), (shared, shared_batches) = results[False], results[True]
    assert plain_batches[0] == 5 and shared_batches[0] == 2 and shared_batches[1:] == plain_batches[1:]
    for a, b in zip(plain, shared, strict=True):
        assert a.prompt_ids == b.prompt_ids and a.response_ids == b.response_ids
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5)
    assert len({tuple(g.response_ids) for g in shared}) > 2  # the members still sample their own responses
