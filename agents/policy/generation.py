"""What sampling returns: one :class:`Generation` per prompt, and where its tokens sit in its text.

The sampler (:mod:`agents.policy.sampler`) and the multi-turn rollout
(:mod:`agents.policy.conversation`) both build these; credit rules read a span of the text
back as a token range (:meth:`Generation.token_span`).

Example:
    >>> generation = Generation("Hi?", [1, 2], [7, 8], "hey you", [-0.5, -1.0], [(0, 3), (3, 7)])
    >>> generation.token_span(4, 7)
    (1, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch


@dataclass
class Generation:
    """One sampled response.

    Attributes:
        prompt: The prompt text (user message, before the chat template).
        prompt_ids: Chat-templated prompt token ids.
        response_ids: Sampled token ids (the stop/eos token included when hit).
        text: The response prefix (if any) and the response decoded without special tokens.
        logprobs: Log-prob of each sampled token under the sampling distribution.
        token_offsets: Character ``(start, end)`` of each sampled token in ``text``.
        finish_reason: ``"eos"``, ``"stop"`` (a stop string) or ``"length"``.
        trunk_hiddens: Inside ``TransformersPolicy.keeping_trunk_hiddens``, the ``[P + R - 1, D]``
            states entering the first adapted layer of every prompt token and every response
            token but the last (what a teacher-forced pass over the top layers needs), on the CPU.
    """

    prompt: str
    prompt_ids: list[int]
    response_ids: list[int]
    text: str
    logprobs: list[float]
    token_offsets: list[tuple[int, int]] = field(default_factory=list)
    finish_reason: str = "length"
    trunk_hiddens: torch.Tensor | None = None

    def token_span(self, char_start: int, char_end: int) -> tuple[int, int]:
        """Indices ``[first, last + 1)`` of the response tokens overlapping ``text[char_start:char_end]``."""
        return char_span_to_token_span(self.token_offsets, char_start, char_end)


def char_span_to_token_span(offsets: Sequence[tuple[int, int]], char_start: int, char_end: int) -> tuple[int, int]:
    """The token range covering a character range, from per-token character offsets.

    >>> char_span_to_token_span([(0, 3), (3, 5), (5, 9)], 4, 7)
    (1, 3)
    """
    inside = [i for i, (start, end) in enumerate(offsets) if start < char_end and end > char_start]
    if not inside:
        # An empty span sits between tokens: point at the token where it starts.
        index = next((i for i, (start, _) in enumerate(offsets) if start >= char_start), len(offsets))
        return index, index
    return inside[0], inside[-1] + 1
