import pytest
import torch

from agents.policy.padding import left_pad, right_pad
from agents.policy.sampler import Sampler, SamplingSettings
from agents.policy.scorer import Scorer, ScoreSettings

PROMPTS = [[11, 12, 13, 14], [21, 22], [31, 32, 33]]
RESPONSES = [[41, 42, 43], [51], [61, 62]]


@pytest.fixture()
def scorer(tiny_pieces):
    weights, codec, caches = tiny_pieces
    return Scorer(
        weights,
        caches,
        pad_token_id=codec.pad_token_id,
        device=torch.device("cpu"),
        temperature=0.8,
        settings=ScoreSettings(score_batch_size=2),
    )


def _by_hand(model, prompt, response, temperature):
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + response])).logits[0].float() / temperature
    log_probs = torch.log_softmax(logits, dim=-1)
    return torch.stack([log_probs[len(prompt) + i - 1, token] for i, token in enumerate(response)])


def test_token_logprobs_of_padded_rows_equal_a_plain_forward_per_row(scorer):
    prompt_ids, prompt_mask = left_pad(PROMPTS, scorer.pad_token_id, scorer.device)
    response_ids, response_mask = right_pad(RESPONSES, scorer.pad_token_id, scorer.device)
    wide = torch.cat([response_ids, torch.zeros(3, 2, dtype=torch.long)], dim=1)  # wider than any response
    wide_mask = torch.cat([response_mask, torch.zeros(3, 2, dtype=torch.long)], dim=1)
    scored = scorer.token_logprobs(prompt_ids, prompt_mask, wide, wide_mask)
    assert scored.shape == (3, 5) and scored.requires_grad
    for row, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES, strict=True)):
        expected = _by_hand(scorer.weights.model, prompt, response, 0.8)
        assert torch.allclose(scored[row, : len(response)].detach(), expected, atol=1e-5)
        assert scored[row, len(response) :].abs().sum() == 0


def test_score_takes_lists_or_a_padded_tensor_and_keeps_the_input_order(scorer):
    from_lists = scorer.score(PROMPTS, RESPONSES)
    response_ids, response_mask = right_pad(RESPONSES, scorer.pad_token_id, scorer.device)
    from_tensor = scorer.score(PROMPTS, response_ids, response_mask=response_mask)
    assert not from_lists.requires_grad and torch.equal(from_lists, from_tensor)
    for row, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES, strict=True)):
        assert torch.allclose(
            from_lists[row, : len(response)], _by_hand(scorer.weights.model, prompt, response, 0.8), atol=1e-5
        )


def test_a_conversation_s_turns_are_read_off_one_pass_with_the_same_log_probs(scorer):
    first_prompt, first_response = [11, 12], [13, 14]
    second_prompt = first_prompt + first_response + [15, 16]
    prompts, responses = [first_prompt, second_prompt, [31, 32]], [first_response, [17, 18, 19], [61]]
    scored = scorer.score(prompts, responses)
    for row, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        alone = scorer.score([prompt], [response])  # a single row: the batched path
        assert torch.allclose(scored[row, : len(response)], alone[0], atol=1e-5)


def test_reusing_kept_prompt_kv_gives_the_scores_of_a_full_pass(scorer, tiny_pieces):
    weights, codec, caches = tiny_pieces
    kept = [[11, 12, 13], [21, 22, 23, 24]]
    prompts = [kept[0] + [90, 91], kept[1] + [92]]  # privileged text after the kept prompt
    Sampler(weights.model, codec, caches, SamplingSettings()).cache_prompts(kept)  # as the rollout's prefill keeps it
    assert [caches.prompts.longest_prefix(row, ids)[0] for row, ids in zip(prompts, kept, strict=True)] == [3, 4]
    try:
        reused = scorer.score(prompts, RESPONSES[:2], reuse_from=kept)
    finally:
        caches.prompts.clear()
    assert torch.allclose(reused, scorer.score(prompts, RESPONSES[:2]), atol=1e-5)


def test_misuse_is_refused(scorer):
    with pytest.raises(ValueError, match="1 reuse_from prompts for 3 prompts"):
        scorer.score(PROMPTS, RESPONSES, reuse_from=[[1]])
    with pytest.raises(ValueError, match="cannot score with the reference model"):
        scorer.score(PROMPTS, RESPONSES, reuse_from=PROMPTS, reference=True)
    with pytest.raises(RuntimeError, match="keeps no reference model"):
        scorer.score(PROMPTS, RESPONSES, reference=True)
    assert not scorer.trunk_applies()  # no LoRA on top layers: no frozen trunk
    assert scorer.score([], []).shape == (0, 0)
