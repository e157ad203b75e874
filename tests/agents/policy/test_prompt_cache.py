import pytest
import torch

from agents.algorithms.privileged.shift import insert_privileged_text
from agents.policy import DecodeSettings, SamplingSettings, TransformersPolicy, WeightSettings
from agents.policy.prompt_cache import PromptCacheStore, common_prefix_length, stacked_past

PROMPTS = [
    "Task: say hi.\nYou see a desk.",
    "Task: a much longer task line.\nYou see a long room with many things.",
    "Task: x\nnothing",
]


class FakeLayer:
    def __init__(self, keys):
        self.keys, self.values = keys, -keys


class FakeCache:
    def __init__(self, keys):
        self.layers = [FakeLayer(keys)]


def test_common_prefix_length():
    assert common_prefix_length([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix_length([1, 2, 3], [1, 5, 3]) == 1
    assert common_prefix_length([], [1]) == 0


def test_store_keeps_each_rows_real_tokens_and_reuses_the_shared_prefix():
    # Two left-padded rows of width 4: row 0 holds 2 real tokens, row 1 holds 4.
    keys = torch.arange(2 * 1 * 4 * 1, dtype=torch.float32).reshape(2, 1, 4, 1)
    store = PromptCacheStore()
    store.keep([[7, 8], [1, 2, 3, 4]], FakeCache(keys), width=4)
    assert len(store) == 2
    length, [(k, v)] = store.longest_prefix([7, 8, 9], [7, 8])
    assert length == 2 and k.flatten().tolist() == [2.0, 3.0] and torch.equal(v, -k)
    length, [(k, _)] = store.longest_prefix([1, 2, 9, 9], [1, 2, 3, 4])
    assert length == 2 and k.flatten().tolist() == [4.0, 5.0]
    # At least one token is always fed: an identical prompt reuses all but its last token.
    assert store.longest_prefix([7, 8], [7, 8])[0] == 1
    assert store.longest_prefix([7, 8, 9], [5]) == (0, [])  # nothing kept for [5]
    store.clear()
    assert len(store) == 0


def test_stacked_past_left_pads_rows_of_different_lengths():
    from transformers import Qwen3Config

    config = Qwen3Config(num_hidden_layers=1, num_key_value_heads=1, num_attention_heads=1, hidden_size=4, head_dim=2)
    short = [(torch.ones(1, 1, 2), torch.ones(1, 1, 2))]
    long = [(torch.full((1, 3, 2), 2.0), torch.full((1, 3, 2), 2.0))]
    cache, mask = stacked_past([short, [], long], [1, 0, 3], config=config, device=torch.device("cpu"))
    assert mask.tolist() == [[0, 0, 1], [0, 0, 0], [1, 1, 1]]
    keys = cache.layers[0].keys
    assert keys.shape == (3, 1, 3, 2)
    assert keys[0, 0, :, 0].tolist() == [0.0, 0.0, 1.0] and keys[2, 0, :, 0].tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="at least one row"):
        stacked_past([[]], [0], config=config, device=torch.device("cpu"))


@pytest.mark.parametrize("placement", ["prompt_end", "after_task", "prompt_start"])
def test_reusing_the_rollout_prompt_kv_gives_the_same_scores(tiny_model_path, placement):
    policy = TransformersPolicy(str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=6), seed=0)
    with policy.keeping_prompt_caches():
        generations = policy.generate(PROMPTS[:2])  # the third prompt is never kept
    assert len(policy.prompt_caches) == 2
    policy.generate(PROMPTS)  # outside the block nothing more is kept
    assert len(policy.prompt_caches) == 2
    with_pi = [
        insert_privileged_text(p, "Hint: the desk 1 holds the pen.", task=p.split("\n")[0][6:], placement=placement)
        for p in PROMPTS
    ]
    responses = [g.response_ids for g in generations] + [generations[0].response_ids]
    expected = policy.score(with_pi, responses)
    got = policy.score(with_pi, responses, reuse_from=PROMPTS)
    assert torch.allclose(got, expected, atol=1e-5)
    # The kept KV really is what the pass reads: spoiling it changes the scores.
    for layers in policy.prompt_caches._kept.values():
        for keys, _ in layers:
            keys.add_(1.0)
    assert not torch.allclose(policy.score(with_pi, responses, reuse_from=PROMPTS), expected, atol=1e-3)


@pytest.mark.parametrize("decode", ["dynamic", "static"])
def test_reuse_matches_the_rollout_logprobs_and_rejects_bad_calls(tiny_model_path, decode):
    policy = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(reference=True),
        sampling=SamplingSettings(max_new_tokens=5),
        decoding=DecodeSettings(decode=decode),
        seed=2,
    )
    with policy.keeping_prompt_caches():
        generations = policy.generate(PROMPTS)
    scores = policy.score(PROMPTS, [g.response_ids for g in generations], reuse_from=PROMPTS)
    for row, generation in enumerate(generations):
        length = len(generation.response_ids)
        assert torch.allclose(scores[row, :length], torch.tensor(generation.logprobs), atol=1e-4)
    with pytest.raises(ValueError, match="reuse_from"):
        policy.score(PROMPTS, [g.response_ids for g in generations], reuse_from=PROMPTS[:1])
    with pytest.raises(ValueError, match="reference"):
        policy.score(PROMPTS, [g.response_ids for g in generations], reuse_from=PROMPTS, reference=True)
