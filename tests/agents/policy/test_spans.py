import pytest
import torch

from agents.policy.spans import one_pass_groups, predicting_positions, span_logprobs
from agents.policy.weights import PolicyWeights


def test_one_pass_groups_join_a_conversation_s_turns_under_its_last_turn():
    prompts = [[1, 2], [1, 2, 3, 4], [7], [1, 2, 3, 4, 5, 6]]
    responses = [[3], [5], [8], [9]]
    # Row 3's prompt starts with rows 1 and 0 (prompt + response); row 2 shares nothing.
    assert one_pass_groups(prompts, responses) == [[3, 1, 0], [2]]


def test_one_pass_groups_keep_per_turn_rows_and_mere_prompt_matches_apart():
    # Same prompt, different responses: neither row's sequence starts the other's prompt.
    assert one_pass_groups([[1, 2], [1, 2]], [[3], [4]]) == [[0], [1]]
    # Row 0's prompt + response is longer than row 1's whole prompt: no group.
    assert one_pass_groups([[1], [1, 2]], [[2, 3], [4]]) == [[0], [1]]
    assert one_pass_groups([], []) == []


def test_predicting_positions_are_one_before_each_token_after_the_padding():
    assert predicting_positions(padding=0, span=(1, 3)) == [0, 1]
    assert predicting_positions(padding=3, span=(2, 4)) == [4, 5]
    assert predicting_positions(padding=1, span=(2, 2)) == []


@pytest.fixture(scope="module")
def model(tiny_model_path):
    return PolicyWeights.load(tiny_model_path).model


def _by_hand(model, sequence, span, temperature):
    """log softmax(logits / T) of the span's tokens from a plain forward over the whole sequence."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([sequence])).logits[0].float() / temperature
    log_probs = torch.log_softmax(logits, dim=-1)
    return torch.stack([log_probs[i - 1, sequence[i]] for i in range(*span)])


def test_span_logprobs_equal_a_plain_forward_for_every_span_of_padded_sequences(model):
    sequences = [[11, 12, 13, 14, 15, 16], [21, 22, 23]]
    spans = [[(1, 3), (4, 6)], [(2, 3)]]
    with torch.no_grad():
        scored = span_logprobs(
            model, sequences, spans, pad_token_id=0, device=torch.device("cpu"), temperature=0.7, chunk_size=2
        )
    assert [[len(piece) for piece in row] for row in scored] == [[2, 2], [1]]
    for sequence, row_spans, pieces in zip(sequences, spans, scored, strict=True):
        for span, piece in zip(row_spans, pieces, strict=True):
            assert torch.allclose(piece, _by_hand(model, sequence, span, 0.7), atol=1e-5)


def test_span_logprobs_carry_gradients_when_grad_is_on(model):
    [[piece]] = span_logprobs(model, [[5, 6, 7]], [[(1, 3)]], pad_token_id=0, device=torch.device("cpu"))
    assert piece.requires_grad


@pytest.mark.parametrize(
    ("spans", "message"),
    [([[(0, 2)]], "not inside"), ([[(2, 9)]], "not inside"), ([[(1, 2)], [(1, 2)]], "span lists")],
)
def test_span_logprobs_refuse_spans_outside_their_sequence(model, spans, message):
    with pytest.raises(ValueError, match=message):
        span_logprobs(model, [[5, 6, 7]], spans, pad_token_id=0, device=torch.device("cpu"))


def test_span_logprobs_refuse_trunk_states_without_a_layer_or_too_few_of_them(model):
    with pytest.raises(ValueError, match="first_layer"):
        span_logprobs(
            model,
            [[5, 6, 7]],
            [[(1, 3)]],
            pad_token_id=0,
            device=torch.device("cpu"),
            trunk_hiddens=[torch.zeros(2, 64)],
        )
    with pytest.raises(ValueError, match="1 kept trunk states, 2 needed"):
        span_logprobs(
            model,
            [[5, 6, 7]],
            [[(1, 3)]],
            pad_token_id=0,
            device=torch.device("cpu"),
            trunk_hiddens=[torch.zeros(1, 64)],
            first_layer=1,
        )
