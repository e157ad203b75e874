"""Prompt-lookup speculative decoding: drafts, the acceptance rule, and a sampler that changes only the speed."""

from __future__ import annotations

import math

import pytest
import torch

from agents.config import GRPOConfig
from agents.policy import (
    DecodeSettings,
    LoraOptions,
    PrefillSettings,
    SamplingSettings,
    TransformersPolicy,
    WeightSettings,
)
from agents.policy.decoding import DynamicDecoder
from agents.policy.speculation import PromptLookup, target_probs, verify_drafts

# The tiny random model's greedy responses fall into loops, so drafts copied from them are accepted.
PROMPTS = ["Say hi.", "click[B0ABC123] or click[B0XYZ999]? click[B0ABC", "a b c d e f g a b c", "Say hi."]


def test_a_draft_copies_what_followed_the_context_suffix() -> None:
    lookup = PromptLookup(num_tokens=4, max_ngram=3)
    # The longest suffix that occurred before decides: [7, 8] occurred at 1 and at 6.
    assert lookup.draft([1, 7, 8, 2, 3, 9, 7, 8, 4, 5, 6, 7, 8], limit=10) == [4, 5, 6, 7]
    assert lookup.draft([1, 7, 8, 2, 3, 9, 7, 8, 4, 5, 6, 7, 8], limit=2) == [4, 5]  # capped by the limit
    # The latest match has no whole draft after it: the latest one that has wins.
    assert lookup.draft([5, 1, 2, 3, 4, 5, 6, 5], limit=10) == [1, 2, 3, 4]
    assert PromptLookup(num_tokens=4, max_ngram=1).draft([3, 3], limit=10) == [3]
    assert lookup.draft([1, 2, 3, 4], limit=10) == []  # the last token never occurred before
    assert lookup.draft([1, 1, 1], limit=0) == [] and lookup.draft([1], limit=5) == []


def test_lookup_settings_are_checked() -> None:
    for field, value in (("num_tokens", 0), ("max_ngram", True), ("num_tokens", 2.0)):
        with pytest.raises(ValueError, match=f"PromptLookup.{field} must be an integer >= 1"):
            PromptLookup(**{field: value})
    with pytest.raises(ValueError, match="GRPOConfig.prompt_lookup_num_tokens must be 0 unless decode='dynamic'"):
        GRPOConfig(prompt_lookup_num_tokens=4, decode="static")
    with pytest.raises(ValueError, match="prompt lookup needs decode='dynamic'"):
        TransformersPolicy(
            "tiny-random-qwen3",
            decoding=DecodeSettings(decode="static"),
            prefill=PrefillSettings(prompt_lookup_num_tokens=4),
        )


def test_greedy_verification_keeps_the_prefix_the_argmax_agrees_with() -> None:
    # Two rows, three positions over a vocabulary of 4; row 0 drafts [2, 1], row 1 drafts [3, -1].
    log_probs = torch.log(
        torch.tensor(
            [
                [[0.1, 0.1, 0.7, 0.1], [0.1, 0.2, 0.3, 0.4], [0.9, 0.05, 0.03, 0.02]],
                [[0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]],
            ]
        )
    )
    kept, following = verify_drafts(log_probs, torch.tensor([[2, 1], [3, -1]]), greedy=True)
    # Row 0: 2 is the argmax at position 0 (kept), 1 is not at position 1 (argmax 3 follows).
    # Row 1: 3 is not the argmax at position 0: nothing kept, the argmax 1 follows.
    assert kept.tolist() == [1, 0] and following.tolist() == [3, 1]
    kept, following = verify_drafts(log_probs[:1], torch.tensor([[2, 3]]), greedy=True)
    assert kept.tolist() == [2] and following.tolist() == [0]  # a whole draft kept: the next argmax follows


@pytest.mark.parametrize(("top_p", "draft"), [(1.0, 1), (1.0, 0), (0.8, 1), (0.8, 2)])
def test_speculative_sampling_draws_every_token_from_the_target_distribution(top_p: float, draft: int) -> None:
    # p at the first position; the draft is one token. Whatever the draft, the first emitted token
    # (the draft when kept, else the following one) must be distributed as the sampler's
    # top-p distribution, and a kept draft must be followed by a draw from the second position.
    rows = 200_000
    first = torch.tensor([0.5, 0.3, 0.15, 0.05])
    second = torch.tensor([0.1, 0.2, 0.3, 0.4])
    log_probs = torch.log(torch.stack([first, second]))[None].expand(rows, 2, 4)
    generator = torch.Generator().manual_seed(0)
    kept, following = verify_drafts(
        log_probs, torch.full((rows, 1), draft), greedy=False, top_p=top_p, generator=generator
    )
    emitted = torch.where(kept == 1, torch.full_like(following, draft), following)
    expected = target_probs(torch.log(first), top_p)
    observed = torch.bincount(emitted, minlength=4).float() / rows
    assert torch.allclose(observed, expected, atol=0.005), (observed, expected)
    after_kept = following[kept == 1]
    if len(after_kept):
        observed = torch.bincount(after_kept, minlength=4).float() / len(after_kept)
        assert torch.allclose(observed, target_probs(torch.log(second), top_p), atol=0.01)


def _counting_feeds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    widths: list[int] = []
    feed = DynamicDecoder.feed

    def counted(self: DynamicDecoder, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kwargs: int):
        widths.append(input_ids.shape[1])
        return feed(self, input_ids, attention_mask, **kwargs)

    monkeypatch.setattr(DynamicDecoder, "feed", counted)
    return widths


def test_greedy_tokens_and_log_probs_are_the_plain_loops(tiny_model_path, monkeypatch) -> None:
    widths = _counting_feeds(monkeypatch)
    plain = TransformersPolicy(
        str(tiny_model_path), sampling=SamplingSettings(max_new_tokens=20, stop=("c d",)), seed=0
    )
    drafted = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=20, stop=("c d",)),
        prefill=PrefillSettings(prompt_lookup_num_tokens=5),
        seed=0,
    )
    for max_new_tokens in (20, 3, 1):
        want = plain.generate(PROMPTS, greedy=True, max_new_tokens=max_new_tokens)
        have = drafted.generate(PROMPTS, greedy=True, max_new_tokens=max_new_tokens)
        for a, b in zip(want, have, strict=True):
            assert b.response_ids == a.response_ids and b.finish_reason == a.finish_reason and b.text == a.text
            assert torch.allclose(torch.tensor(b.logprobs), torch.tensor(a.logprobs), atol=1e-5)
    # Drafts were fed and accepted: fewer forward passes than tokens.
    assert max(widths) > 1 and len(widths) < sum(len(g.response_ids) for g in have) + 20


def test_sampled_log_probs_are_the_teacher_forced_ones(tiny_model_path, monkeypatch) -> None:
    widths = _counting_feeds(monkeypatch)
    # A low temperature makes drafts of the model's own loops likely to be kept, so both the
    # accepting and the rejecting branches run.
    policy = TransformersPolicy(
        str(tiny_model_path),
        sampling=SamplingSettings(max_new_tokens=16, temperature=0.05),
        prefill=PrefillSettings(prompt_lookup_num_tokens=4),
        seed=3,
    )
    generations = policy.generate(PROMPTS)
    scores = policy.score(PROMPTS, [g.response_ids for g in generations])
    for row, generation in enumerate(generations):
        length = len(generation.response_ids)
        assert length == 16 or generation.finish_reason != "length"
        assert torch.allclose(scores[row, :length], torch.tensor(generation.logprobs), atol=1e-4)
        assert all(math.isfinite(x) for x in generation.logprobs)
    assert len(widths) < sum(len(g.response_ids) for g in generations)


def test_kept_trunk_states_and_conversations_are_the_plain_loops(tiny_model_path) -> None:
    lora = LoraOptions(rank=2, alpha=4, top_layers=1)
    plain = TransformersPolicy(
        str(tiny_model_path), weights=WeightSettings(lora=lora), sampling=SamplingSettings(max_new_tokens=8), seed=0
    )
    drafted = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(lora=lora),
        sampling=SamplingSettings(max_new_tokens=8),
        prefill=PrefillSettings(prompt_lookup_num_tokens=4),
        seed=0,
    )
    with plain.keeping_trunk_hiddens():
        want = plain.generate(PROMPTS, greedy=True)
    with drafted.keeping_trunk_hiddens():
        have = drafted.generate(PROMPTS, greedy=True)
    for a, b in zip(want, have, strict=True):
        assert b.response_ids == a.response_ids
        assert a.trunk_hiddens is not None and b.trunk_hiddens is not None
        assert b.trunk_hiddens.shape == a.trunk_hiddens.shape
        assert torch.allclose(b.trunk_hiddens, a.trunk_hiddens, atol=1e-5)
    # A conversation's later turns are appended after drafted ones (rejected columns masked out).
    turns = (["Task: say hi.", "Task: a b c a b c a b"], ["You see a door.", "a b c"], ["ok", "a b"])
    conversations = [policy.conversations() for policy in (plain, drafted)]
    for messages in turns:
        want, have = (c.generate([0, 1], list(messages), greedy=True) for c in conversations)
        for a, b in zip(want, have, strict=True):
            assert b.response_ids == a.response_ids
            assert torch.allclose(torch.tensor(b.logprobs), torch.tensor(a.logprobs), atol=1e-5)
