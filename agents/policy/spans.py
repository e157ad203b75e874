"""Teacher-forced log-probs of token spans inside whole sequences, in one forward pass per batch.

A *sequence* is every token a row's model input holds (prompt, response, and in a conversation
every earlier turn); a *span* ``[start, end)`` names tokens whose log-probs are wanted (a turn's
response). One left-padded forward over the sequences gives the final hidden states; the LM
head runs only at the positions that predict span tokens, so a conversation of eight turns is
scored in one pass and the logits of its prompt positions are never formed. The forward is the
whole model, or, given the rows' kept trunk hidden states (:mod:`agents.policy.trunk`), only
the adapted top layers. Gradients flow when grad is enabled.

Rows whose tokens are the start of another row's prompt (a conversation's earlier turns) need
no pass of their own: :func:`one_pass_groups` finds them.

Example:
    >>> predicting_positions(padding=2, span=(3, 5))
    [4, 5]
    >>> one_pass_groups([[1, 2], [1, 2, 3, 4], [7]], [[3], [5], [8]])
    [[1, 0], [2]]
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from agents.policy.decoding import positions_from_mask
from agents.policy.logprobs import selective_logprobs
from agents.policy.trunk import decoder_and_head, top_layers_forward

Span = tuple[int, int]
"""``[start, end)`` token indices of a sequence."""


def predicting_positions(padding: int, span: Span) -> list[int]:
    """Positions whose outputs predict ``span``'s tokens in a sequence left-padded by ``padding``."""
    return [padding + index - 1 for index in range(span[0], span[1])]


def one_pass_groups(prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]) -> list[list[int]]:
    """Rows grouped so that one forward pass over each group's first row scores every row of the group.

    A group's first row holds every other row's prompt and response as the start of its prompt
    (a conversation's last turn and its earlier turns). Longest rows first; a row joins the
    first group whose first row's prompt begins with the row's prompt and response, else starts
    a group. Per-turn prompts give one row per group. (Not ``RolloutBatch.prefix_chains``,
    which chains a trajectory's turns first turn first.)
    """
    sequences = [list(prompt) + list(response) for prompt, response in zip(prompts, responses, strict=True)]
    groups: list[list[int]] = []
    for row in sorted(range(len(sequences)), key=lambda r: -len(sequences[r])):
        sequence = sequences[row]
        for group in groups:
            head = prompts[group[0]]
            if len(head) >= len(sequence) and list(head[: len(sequence)]) == sequence:
                group.append(row)
                break
        else:
            groups.append([row])
    return groups


def span_logprobs(
    model: torch.nn.Module,
    sequences: Sequence[Sequence[int]],
    spans: Sequence[Sequence[Span]],
    *,
    pad_token_id: int,
    device: torch.device,
    temperature: float = 1.0,
    chunk_size: int = 1024,
    trunk_hiddens: Sequence[torch.Tensor] | None = None,
    first_layer: int | None = None,
) -> list[list[torch.Tensor]]:
    """Per sequence, per span, the ``[end - start]`` log-probs ``log softmax(logits / T)`` of its tokens.

    Args:
        model: The causal LM (peft or not).
        sequences: Token ids of each sequence.
        spans: Per sequence, the spans to score (each inside the sequence, not at index 0).
        pad_token_id: Fills the padding (masked out).
        device: Where the forward runs.
        temperature: Divides the logits.
        chunk_size: Rows per chunk of the log-softmax.
        trunk_hiddens: Per sequence, the kept ``[n, D]`` states entering ``first_layer`` of its
            first ``n`` tokens (at least up to the last scored token's predecessor); the
            forward then runs only the layers from ``first_layer`` on.
        first_layer: Where ``trunk_hiddens`` were recorded.

    Raises:
        ValueError: for a span outside its sequence or too few kept states.
    """
    if len(spans) != len(sequences):
        raise ValueError(f"got {len(spans)} span lists for {len(sequences)} sequences")
    if trunk_hiddens is not None and (len(trunk_hiddens) != len(sequences) or first_layer is None):
        raise ValueError("trunk_hiddens needs one tensor per sequence and first_layer")
    # Tokens after the last scored one change nothing before it: feed up to its predecessor.
    needed = [max((end for _, end in row), default=1) - 1 for row in spans]
    needed = [max(length, 1) for length in needed]
    for row, (sequence, length) in enumerate(zip(sequences, needed, strict=True)):
        if any(not 1 <= start <= end <= len(sequence) for start, end in spans[row]):
            raise ValueError(f"sequence {row}: spans {list(spans[row])} are not inside its {len(sequence)} tokens")
        if trunk_hiddens is not None and trunk_hiddens[row].shape[0] < length:
            raise ValueError(f"sequence {row}: {trunk_hiddens[row].shape[0]} kept trunk states, {length} needed")
    width = max(needed, default=0)
    mask = torch.zeros(len(sequences), width, dtype=torch.long)
    for row, length in enumerate(needed):
        mask[row, width - length :] = 1
    mask = mask.to(device)
    if trunk_hiddens is not None:
        assert first_layer is not None
        dim = trunk_hiddens[0].shape[-1]
        states = torch.zeros(len(sequences), width, dim, dtype=trunk_hiddens[0].dtype)
        for row, (kept, length) in enumerate(zip(trunk_hiddens, needed, strict=True)):
            states[row, width - length :] = kept[:length]
        hidden = top_layers_forward(model, first_layer, states.to(device), mask)
    else:
        ids = torch.full((len(sequences), width), pad_token_id, dtype=torch.long)
        for row, (sequence, length) in enumerate(zip(sequences, needed, strict=True)):
            ids[row, width - length :] = torch.as_tensor(list(sequence[:length]), dtype=torch.long)
        decoder, _ = decoder_and_head(model)
        output = decoder(
            input_ids=ids.to(device), attention_mask=mask, position_ids=positions_from_mask(mask), use_cache=False
        )
        hidden = output.last_hidden_state
    rows: list[int] = []
    positions: list[int] = []
    labels: list[int] = []
    sizes: list[int] = []
    for row, (sequence, length) in enumerate(zip(sequences, needed, strict=True)):
        for span in spans[row]:
            found = predicting_positions(width - length, span)
            rows.extend([row] * len(found))
            positions.extend(found)
            labels.extend(int(token) for token in sequence[span[0] : span[1]])
            sizes.append(len(found))
    _, head = decoder_and_head(model)
    picked = hidden[torch.tensor(rows, dtype=torch.long, device=device), torch.tensor(positions, device=device)]
    logits = head(picked)
    scored = selective_logprobs(
        logits, torch.tensor(labels, dtype=torch.long, device=device), temperature=temperature, chunk_size=chunk_size
    )
    pieces = iter(torch.split(scored, sizes))
    return [[next(pieces) for _ in row] for row in spans]
