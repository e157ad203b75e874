"""The rollout's prompt KV cache, kept so a later scoring pass need not recompute the prompt.

ORSD and TASPO score the sampled responses again with privileged text (PI) in the prompt.
The prompt before the PI is the one the policy already ran at rollout, with the same weights
(credit runs before the update), so its keys and values can be reused: only the tokens from
the first difference on (the PI, the end of the chat turn, the response) are computed.
With the PI at the prompt's end, that is all of the prompt.

- :class:`PromptCacheStore` keeps, per prompt (its token ids), each layer's keys and values of
  the prompt's real tokens, cut out of the batched cache right after the rollout's prefill (or,
  in a conversation, after each turn's new tokens; nested turns share memory).
- :func:`stacked_past` puts several rows' kept prefixes into one left-padded cache and mask,
  so rows of different prefix lengths are scored in one forward pass.

Memory: 2 · layers · kv_heads · head_dim · bytes per kept token (~46 KB for SmolLM2-135M in
float32, ~110 KB for a 1.7B Qwen3 in bfloat16), for every training prompt of a step; the
trainer empties the store once credit is done.

Example:
    >>> common_prefix_length([1, 2, 3, 4], [1, 2, 9])
    2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

LayerKV = tuple[torch.Tensor, torch.Tensor]
"""One layer's keys and values of one prompt: ``[kv_heads, tokens, head_dim]`` each."""


def common_prefix_length(first: Sequence[int], second: Sequence[int]) -> int:
    """How many leading tokens two id sequences share."""
    length = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        length += 1
    return length


def common_start_length(rows: Sequence[Sequence[int]]) -> int:
    """How many leading tokens all of ``rows`` share (0 for no rows).

    >>> common_start_length([[1, 2, 3], [1, 2, 4], [1, 2]])
    2
    """
    if not rows:
        return 0
    return min(common_prefix_length(rows[0], row) for row in rows)


def cache_layers(cache: Any) -> list[LayerKV]:
    """Each layer's ``(keys, values)`` ``[B, kv_heads, positions, head_dim]`` of a transformers cache."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache, strict=True))  # older transformers


class PromptCacheStore:
    """Kept prompt KV per prompt token sequence (see the module docstring)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, ...], list[LayerKV]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        """Forgets every kept prompt (frees the memory)."""
        self._kept.clear()

    def keep(
        self,
        prompt_ids: Sequence[Sequence[int]],
        cache: Any,
        width: int | None = None,
        *,
        mask: torch.Tensor | None = None,
    ) -> None:
        """Keeps each row's prompt KV from a batched cache just after the prompts were fed.

        Args:
            prompt_ids: The rows' prompt token ids.
            cache: The cache holding them.
            width: After a left-padded prefill: the padded prompt width (row ``i`` fills
                positions ``[width - len, width)``).
            mask: Instead of ``width``: ``[B, W]`` 1 at the cache positions of each row's real
                tokens (a conversation's cache, with masked-out columns between turns).

        A kept prompt that extends an earlier kept one (the next turn of a conversation) takes
        over its memory: the shorter one becomes a view of the longer one's keys and values.
        """
        if (width is None) == (mask is None):
            raise ValueError("keep takes the prompts' padded width or their cache mask, one of them")
        layers = cache_layers(cache)
        for row, ids in enumerate(prompt_ids):
            key = tuple(int(token) for token in ids)
            if key in self._kept or not key:
                continue
            if mask is not None:
                positions = mask[row].bool().nonzero().flatten().to(layers[0][0].device)
                if len(positions) != len(key):
                    raise ValueError(
                        f"row {row}: {len(positions)} masked-in cache positions for {len(key)} prompt tokens"
                    )
                kept = [(keys[row][:, positions].clone(), values[row][:, positions].clone()) for keys, values in layers]
            else:
                assert width is not None
                start = width - len(key)
                kept = [
                    (keys[row, :, start:width].clone(), values[row, :, start:width].clone()) for keys, values in layers
                ]
            for shorter in [k for k in self._kept if len(k) < len(key) and key[: len(k)] == k]:
                self._kept[shorter] = [(keys[:, : len(shorter)], values[:, : len(shorter)]) for keys, values in kept]
            self._kept[key] = kept

    def longest_prefix(self, prompt_ids: Sequence[int], kept_prompt_ids: Sequence[int]) -> tuple[int, list[LayerKV]]:
        """The kept KV of ``kept_prompt_ids`` that ``prompt_ids`` can reuse, and its length.

        At most ``len(prompt_ids) - 1`` tokens are reused, so that at least one token is fed
        (its logits predict the response's first token). ``(0, [])`` when nothing is kept.
        """
        kept = self._kept.get(tuple(int(token) for token in kept_prompt_ids))
        if kept is None:
            return 0, []
        length = min(common_prefix_length(prompt_ids, kept_prompt_ids), len(prompt_ids) - 1)
        if length <= 0:
            return 0, []
        return length, [(keys[:, :length], values[:, :length]) for keys, values in kept]


def stacked_past(
    pasts: Sequence[list[LayerKV]], lengths: Sequence[int], *, config: Any, device: torch.device
) -> tuple[Any, torch.Tensor]:
    """One left-padded ``DynamicCache`` holding every row's reused prefix, and its ``[B, P]`` mask.

    Rows with no reused prefix (length 0) get an all-zero mask row. ``P`` is the longest prefix.
    """
    from transformers import DynamicCache

    width = max(lengths, default=0)
    mask = torch.zeros(len(lengths), width, dtype=torch.long, device=device)
    template = next((past for past in pasts if past), None)
    if template is None:
        raise ValueError("stacked_past needs at least one row with a reused prefix")
    layers = []
    for layer, (keys, values) in enumerate(template):
        heads, _, dim = keys.shape
        stacked_keys = keys.new_zeros(len(lengths), heads, width, dim)
        stacked_values = values.new_zeros(len(lengths), heads, width, values.shape[-1])
        for row, (past, length) in enumerate(zip(pasts, lengths, strict=True)):
            if length:
                stacked_keys[row, :, width - length :] = past[layer][0]
                stacked_values[row, :, width - length :] = past[layer][1]
        layers.append((stacked_keys.to(device), stacked_values.to(device)))
    for row, length in enumerate(lengths):
        if length:
            mask[row, width - length :] = 1
    return DynamicCache(ddp_cache_data=layers, config=config), mask
