import pytest
import torch

from agents.policy.spans import one_pass_groups, packed_attention_mask, span_logprobs
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


PACKED_SEQUENCES = [[11, 12, 13, 14, 15], [11, 12, 13, 21, 22, 23], [11, 12, 30], [40, 41, 42]]
PACKED_SPANS = [[(3, 5)], [(3, 6)], [(2, 3), (1, 2)], [(1, 3)]]


def _trunk_states(model, sequences, layer):
    """Each sequence's states entering ``layer``, from a plain forward of that sequence alone."""
    with torch.no_grad():
        return [
            model(input_ids=torch.tensor([s]), output_hidden_states=True).hidden_states[layer][0] for s in sequences
        ]


@pytest.fixture(params=["sdpa", "eager"])
def attention(request, model):
    before = model.config._attn_implementation
    model.set_attn_implementation(request.param)
    yield request.param
    model.set_attn_implementation(before)


@pytest.mark.parametrize("on_trunk", [False, True])
def test_packed_sequences_score_as_their_own_rows_with_the_same_gradients(model, attention, on_trunk):
    # Sequences 0-2 start alike (11, 12, ...): one input row, their common start fed once.
    kept = _trunk_states(model, PACKED_SEQUENCES, layer=1) if on_trunk else None
    arguments = {"pad_token_id": 0, "device": torch.device("cpu"), "temperature": 0.7, "trunk_hiddens": kept}
    if on_trunk:
        arguments["first_layer"] = 1
    results, gradients = [], []
    for packs in (None, [[0, 1, 2], [3]]):
        model.zero_grad()
        scored = span_logprobs(model, PACKED_SEQUENCES, PACKED_SPANS, packs=packs, **arguments)
        torch.stack([piece.sum() for row in scored for piece in row]).sum().backward()
        results.append([piece.detach() for row in scored for piece in row])
        gradients.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    for alone, packed in zip(*results, strict=True):
        assert torch.allclose(alone, packed, atol=1e-5)
    assert len(gradients[0]) == len(gradients[1]) > 0
    for alone, packed in zip(*gradients, strict=True):
        assert torch.allclose(alone, packed, atol=1e-5)
    model.zero_grad()
    sequence, [span, _] = PACKED_SEQUENCES[2], PACKED_SPANS[2]
    assert torch.allclose(results[1][2], _by_hand(model, sequence, span, 0.7), atol=1e-5)


def test_a_packed_member_sees_the_shared_start_and_its_own_tokens_only(model):
    # Packing [1, 2, 3] with [1, 2, 9, 9, 9]: whatever the second member holds, the first scores alike.
    cpu = torch.device("cpu")
    with torch.no_grad():
        [[alone]] = span_logprobs(model, [[1, 2, 3]], [[(1, 3)]], pad_token_id=0, device=cpu)
        packed = span_logprobs(
            model, [[1, 2, 3], [1, 2, 9, 9, 9]], [[(1, 3)], [(3, 5)]], pad_token_id=0, device=cpu, packs=[[1, 0]]
        )
    assert torch.allclose(packed[0][0], alone, atol=1e-5)


@pytest.mark.parametrize("packs", [[[0]], [[0, 1], [1]], [[0, 1], []]])
def test_span_logprobs_refuse_packs_that_do_not_cover_each_sequence_once(model, packs):
    with pytest.raises(ValueError, match="each of the 2 sequences once"):
        span_logprobs(
            model, [[5, 6], [5, 7]], [[(1, 2)], [(1, 2)]], pad_token_id=0, device=torch.device("cpu"), packs=packs
        )


def test_packed_attention_mask_refuses_other_attention_kernels():
    with pytest.raises(ValueError, match="sdpa or eager"):
        packed_attention_mask(torch.tensor([[0, 1]]), "flash_attention_2", torch.float32)
