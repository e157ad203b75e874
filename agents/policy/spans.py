"""Teacher-forced log-probs of token spans inside whole sequences, in one forward pass per batch.

A *sequence* is every token a row's model input holds (prompt, response, and in a conversation
every earlier turn); a *span* ``[start, end)`` names tokens whose log-probs are wanted (a turn's
response). One left-padded forward over the sequences gives the final hidden states; the LM
head runs only at the positions that predict span tokens, so a conversation of eight turns is
scored in one pass and the logits of its prompt positions are never formed. The forward is the
whole model, or, given the rows' kept trunk hidden states (:mod:`agents.policy.trunk`), only
the adapted top layers. Gradients flow when grad is enabled.

Rows whose tokens are the start of another row's prompt (a conversation's earlier turns) need
no pass of their own: :func:`one_pass_groups` finds them. Sequences that merely start alike (one
prompt, several sampled responses) can share one input row (``packs``): the common start is fed
once and each sequence's own tokens follow it under a block mask (:func:`packed_attention_mask`).

Example:
    >>> one_pass_groups([[1, 2], [1, 2, 3, 4], [7]], [[3], [5], [8]])
    [[1, 0], [2]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from agents.policy.logprobs import selective_logprobs
from agents.policy.prompt_cache import common_start_length
from agents.policy.trunk import decoder_and_head, top_layers_forward

Span = tuple[int, int]
"""``[start, end)`` token indices of a sequence."""


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


def packed_attention_mask(segments: torch.Tensor, implementation: str, dtype: torch.dtype) -> torch.Tensor:
    """The ``[R, 1, W, W]`` mask of packed rows: a column sees the earlier columns of its own segment and the
    shared prefix (segment 0) before it; padding (segment -1) is seen by nothing and sees only itself.

    In the attention implementation's format: booleans for ``"sdpa"``, additive floats for ``"eager"``.

    >>> packed_attention_mask(torch.tensor([[-1, 0, 1, 2]]), "sdpa", torch.float32)[0, 0].int().tolist()
    [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 1, 0], [0, 1, 0, 1]]
    """
    width = segments.shape[1]
    columns = torch.arange(width, device=segments.device)
    earlier = columns[None, :] <= columns[:, None]  # [query, key]
    query, key = segments[:, :, None], segments[:, None, :]
    allowed = earlier & (key >= 0) & ((key == 0) | (key == query))
    allowed |= torch.eye(width, dtype=torch.bool, device=segments.device) & (query < 0)  # no empty softmax row
    if implementation == "sdpa":
        return allowed[:, None]
    if implementation == "eager":
        return torch.zeros(allowed.shape, dtype=dtype, device=segments.device).masked_fill(
            ~allowed, torch.finfo(dtype).min
        )[:, None]
    raise ValueError(f"packed sequences need sdpa or eager attention, the model uses {implementation!r}")


@dataclass(frozen=True)
class _Layout:
    """Where the fed tokens of packed sequences sit in the left-padded input (see :func:`span_logprobs`)."""

    width: int
    rows: list[int]
    """Per sequence, its input row."""
    columns: list[list[int]]
    """Per sequence, the column of each of its fed tokens."""
    segments: list[list[int]]
    """Per input row, per column: -1 padding, 0 the shared prefix, ``j + 1`` the pack's ``j``-th member's own tokens."""


def _layout(sequences: Sequence[Sequence[int]], needed: Sequence[int], packs: Sequence[Sequence[int]]) -> _Layout:
    rows = [0] * len(sequences)
    columns: list[list[int]] = [[] for _ in sequences]
    segments: list[list[int]] = []
    for row, pack in enumerate(packs):
        shared = min(common_start_length([sequences[member] for member in pack]), *(needed[member] for member in pack))
        row_segments = [0] * shared
        for branch, member in enumerate(pack):
            start = len(row_segments)
            rows[member] = row
            columns[member] = list(range(shared)) + list(range(start, start + needed[member] - shared))
            row_segments += [branch + 1] * (needed[member] - shared)
        segments.append(row_segments)
    width = max((len(row_segments) for row_segments in segments), default=0)
    for row, row_segments in enumerate(segments):
        padding = width - len(row_segments)
        segments[row] = [-1] * padding + row_segments
        for member in packs[row]:
            columns[member] = [padding + column for column in columns[member]]
    return _Layout(width, rows, columns, segments)


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
    packs: Sequence[Sequence[int]] | None = None,
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
        packs: Sequences fed in one input row each (every sequence in exactly one pack; None:
            a row per sequence). A pack's common start (e.g. the prompt that several sampled
            responses share) is fed once, from its first member, and each member's remaining
            tokens follow it, seeing that prefix and their own earlier tokens only (a block
            mask; positions as in the member's own sequence), so every log-prob equals its
            own row's to float precision while the prefix's compute is shared. Needs the
            model's attention to be ``"sdpa"`` or ``"eager"``.

    Raises:
        ValueError: for a span outside its sequence, too few kept states, or packs that do
            not cover every sequence once.
    """
    if len(spans) != len(sequences):
        raise ValueError(f"got {len(spans)} span lists for {len(sequences)} sequences")
    if trunk_hiddens is not None and (len(trunk_hiddens) != len(sequences) or first_layer is None):
        raise ValueError("trunk_hiddens needs one tensor per sequence and first_layer")
    packs = [[row] for row in range(len(sequences))] if packs is None else [list(pack) for pack in packs]
    if sorted(member for pack in packs for member in pack) != list(range(len(sequences))) or not all(packs):
        raise ValueError(f"packs must hold each of the {len(sequences)} sequences once, got {packs}")
    # Tokens after the last scored one change nothing before it: feed up to its predecessor.
    needed = [max((end for _, end in row), default=1) - 1 for row in spans]
    needed = [max(length, 1) for length in needed]
    for row, (sequence, length) in enumerate(zip(sequences, needed, strict=True)):
        if any(not 1 <= start <= end <= len(sequence) for start, end in spans[row]):
            raise ValueError(f"sequence {row}: spans {list(spans[row])} are not inside its {len(sequence)} tokens")
        if trunk_hiddens is not None and trunk_hiddens[row].shape[0] < length:
            raise ValueError(f"sequence {row}: {trunk_hiddens[row].shape[0]} kept trunk states, {length} needed")
    layout = _layout(sequences, needed, packs)
    segments = torch.tensor(layout.segments, dtype=torch.long).reshape(len(packs), layout.width)
    positions = torch.zeros(len(packs), layout.width, dtype=torch.long)
    for member in reversed(range(len(sequences))):  # a shared prefix keeps its first member's tokens and states
        positions[layout.rows[member], layout.columns[member]] = torch.arange(needed[member])
    if all(len(pack) == 1 for pack in packs):
        mask = (segments >= 0).long().to(device)  # plain left-padded rows
    else:
        decoder, head = decoder_and_head(model)
        implementation, dtype = decoder.config._attn_implementation, next(head.parameters()).dtype
        mask = packed_attention_mask(segments, implementation, dtype).to(device)
    if trunk_hiddens is not None:
        assert first_layer is not None
        dim = trunk_hiddens[0].shape[-1]
        states = torch.zeros(len(packs), layout.width, dim, dtype=trunk_hiddens[0].dtype)
        for member in reversed(range(len(sequences))):
            states[layout.rows[member], layout.columns[member]] = trunk_hiddens[member][: needed[member]]
        hidden = top_layers_forward(model, first_layer, states.to(device), mask, positions.to(device))
    else:
        ids = torch.full((len(packs), layout.width), pad_token_id, dtype=torch.long)
        for member in reversed(range(len(sequences))):
            fed = torch.as_tensor(list(sequences[member][: needed[member]]), dtype=torch.long)
            ids[layout.rows[member], layout.columns[member]] = fed
        decoder, _ = decoder_and_head(model)
        output = decoder(
            input_ids=ids.to(device), attention_mask=mask, position_ids=positions.to(device), use_cache=False
        )
        hidden = output.last_hidden_state
    rows: list[int] = []
    columns: list[int] = []
    labels: list[int] = []
    sizes: list[int] = []
    for member, sequence in enumerate(sequences):
        for start, end in spans[member]:
            rows.extend([layout.rows[member]] * (end - start))
            columns.extend(layout.columns[member][index - 1] for index in range(start, end))
            labels.extend(int(token) for token in sequence[start:end])
            sizes.append(end - start)
    _, head = decoder_and_head(model)
    picked = hidden[
        torch.tensor(rows, dtype=torch.long, device=device), torch.tensor(columns, dtype=torch.long, device=device)
    ]
    logits = head(picked)
    scored = selective_logprobs(
        logits, torch.tensor(labels, dtype=torch.long, device=device), temperature=temperature, chunk_size=chunk_size
    )
    pieces = iter(torch.split(scored, sizes))
    return [[next(pieces) for _ in row] for row in spans]
