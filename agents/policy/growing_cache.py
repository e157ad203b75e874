"""A growing KV cache that writes new positions in place instead of concatenating every step.

Hugging Face's ``DynamicLayer`` appends a step's keys and values with ``torch.cat``, copying the
whole cache each decode step: at a conversation's length (thousands of positions) that copy
costs as much as the step's attention. :class:`GrowingLayer` keeps each layer's keys and values
in a buffer with spare room (capacity doubles when full) and exposes the filled part as a view,
so a step writes one column. Same values, same shapes as the dynamic cache; only the copies go.

Example:
    >>> import torch
    >>> layer = GrowingLayer()
    >>> _ = layer.update(torch.ones(1, 2, 3, 4), torch.ones(1, 2, 3, 4))
    >>> keys, _ = layer.update(torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4))
    >>> keys.shape[-2], layer.capacity >= 4
    (4, True)
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

MIN_CAPACITY = 64
"""Positions a layer's buffer holds at first (at least)."""


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys and values are views of buffers with spare positions."""

    def __init__(self) -> None:
        super().__init__()
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    @property
    def capacity(self) -> int:
        """Positions the buffers hold before they must grow."""
        return 0 if self._key_buffer is None else int(self._key_buffer.shape[-2])

    def _adopt(self, keys: torch.Tensor, values: torch.Tensor, capacity: int) -> None:
        """Makes buffers of ``capacity`` positions holding ``keys``/``values`` (copied) and views of them."""
        length = keys.shape[-2]
        self._key_buffer = keys.new_empty(*keys.shape[:-2], capacity, keys.shape[-1])
        self._value_buffer = values.new_empty(*values.shape[:-2], capacity, values.shape[-1])
        self._key_buffer[..., :length, :] = keys
        self._value_buffer[..., :length, :] = values
        self.keys, self.values = self._key_buffer[..., :length, :], self._value_buffer[..., :length, :]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized or self.keys is None or self.values is None or self._key_buffer is None:
            self.device, self.is_initialized = key_states.device, True
            self._adopt(key_states, value_states, max(MIN_CAPACITY, 2 * key_states.shape[-2]))
            return key_states, value_states
        length, added = self.keys.shape[-2], key_states.shape[-2]
        if length + added > self.capacity:
            self._adopt(self.keys, self.values, max(2 * self.capacity, length + added))
        assert self._key_buffer is not None and self._value_buffer is not None
        self._key_buffer[..., length : length + added, :] = key_states
        self._value_buffer[..., length : length + added, :] = value_states
        self.keys = self._key_buffer[..., : length + added, :]
        self.values = self._value_buffer[..., : length + added, :]
        return self.keys, self.values

    def reset(self) -> None:
        self._key_buffer = self._value_buffer = None
        super().reset()

    def _reindex(self, index: torch.Tensor | None = None, repeats: int = 1) -> None:
        if self.get_seq_length() > 0 and self.keys is not None and self.values is not None:
            if index is not None:
                index = index.to(self.keys.device)
                keys, values = self.keys[index], self.values[index]
            else:
                keys, values = self.keys.repeat_interleave(repeats, 0), self.values.repeat_interleave(repeats, 0)
            self._adopt(keys, values, self.capacity)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._reindex(index=indices)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self._reindex(index=beam_idx)

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._reindex(repeats=repeats)


def growing_cache(config: Any) -> DynamicCache:
    """A ``DynamicCache`` for ``config`` whose plain full-attention layers are :class:`GrowingLayer` s."""
    cache = DynamicCache(config=config)
    cache.layers = [GrowingLayer() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache
