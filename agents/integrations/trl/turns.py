"""Where the turns of a TRL completion lie, and where each turn's action lies inside it.

With tools, TRL's completion is every token after the prompt: the model's segments and, between
them, the tool results it appended (``tool_mask`` 0). A *turn* is one maximal run of model tokens
(``tool_mask`` 1); its action is the argument of the ``act`` call the model wrote in it, located
as exact token offsets: the argument's characters in the turn's decoded text (as the model wrote
it, JSON-escaped inside the call), then the tokens that overlap them.

Example:
    >>> model_runs([1, 1, 0, 0, 1, 1, 1], 7)
    [(0, 2), (4, 7)]
    >>> action_char_span('<tool_call>{"name": "act", "arguments": {"action": "go to desk 1"}}</tool_call>',
    ...                  "go to desk 1")
    (52, 64)
    >>> tokens_overlapping([(0, 3), (3, 7), (7, 9)], (4, 8))
    (1, 3)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def model_runs(tool_mask: Sequence[int] | None, length: int) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of model tokens among a completion's first ``length`` tokens.

    ``tool_mask`` None (no tools): the whole completion is one run (none when it is empty).
    """
    if length < 0:
        raise ValueError(f"length must be >= 0, got {length}")
    if tool_mask is None:
        return [(0, length)] if length else []
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for index in range(length):
        if tool_mask[index] and start is None:
            start = index
        elif not tool_mask[index] and start is not None:
            runs.append((start, index))
            start = None
    if start is not None:
        runs.append((start, length))
    return runs


def decoded_with_offsets(tokenizer: Any, ids: Sequence[int]) -> tuple[str, list[tuple[int, int]]]:
    """The tokens' text (special tokens kept) and each token's ``[start, end)`` characters in it."""
    ids = [int(token) for token in ids]
    text = str(tokenizer.decode(ids, skip_special_tokens=False))
    offsets: list[tuple[int, int]] = []
    previous = 0
    for index in range(1, len(ids) + 1):
        length = len(str(tokenizer.decode(ids[:index], skip_special_tokens=False)))
        length = max(previous, min(length, len(text)))
        offsets.append((previous, length))
        previous = length
    return text, offsets


def action_char_span(text: str, action: str) -> tuple[int, int] | None:
    """Characters of ``action`` as written in ``text``: the last occurrence of its JSON-escaped form
    (how a tool call carries it), else of the action itself; None when neither occurs."""
    if not action:
        return None
    escaped = json.dumps(action, ensure_ascii=False)[1:-1]
    for written in (escaped, action):
        found = text.rfind(written)
        if found >= 0:
            return found, found + len(written)
    return None


def tokens_overlapping(offsets: Sequence[tuple[int, int]], span: tuple[int, int]) -> tuple[int, int] | None:
    """``[first, last + 1)`` of the tokens whose characters overlap ``span`` (None if none do)."""
    start, end = span
    hits = [index for index, (first, last) in enumerate(offsets) if first < end and last > start]
    return (hits[0], hits[-1] + 1) if hits else None


def action_token_span(tokenizer: Any, ids: Sequence[int], action: str) -> tuple[int, int] | None:
    """Token offsets ``[start, end)`` within ``ids`` (one turn) of ``action``; None where it is not found."""
    text, offsets = decoded_with_offsets(tokenizer, ids)
    characters = action_char_span(text, action)
    return None if characters is None else tokens_overlapping(offsets, characters)
