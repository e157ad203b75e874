"""KV-cached one-token decode steps: a growing (dynamic) cache or a preallocated static one.

``TransformersPolicy`` samples with its own loop (so every sampled token's log-prob comes from
the logits it was drawn from); the loop asks a *decoder* for next-token logits:

- :class:`DynamicDecoder`: a growing cache, one position more per step (written in place into
  spare room, :mod:`agents.policy.growing_cache`). Shapes change every step; cheap to set up,
  right on CPU; it can also append a further chunk per row (a conversation's next turn).
- :class:`StaticDecoder`: a ``StaticCache`` preallocated to the prompt width plus the token
  limit (rounded up to ``bucket`` so calls of similar size reuse it), and one full-width
  attention mask updated in place. Every decode step then has the same shapes and the
  same buffers, which is what ``torch.compile(mode="reduce-overhead")`` needs to capture
  the step once as a CUDA graph and replay it (``compile=True``; on GPU). Without
  compilation it gives the same tokens and log-probs as the dynamic cache (tested).

Both take left-padded prompts and use explicit position ids (the count of real tokens
before each one), so padding never shifts a row's positions.

Example:
    >>> import torch
    >>> mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    >>> positions_from_mask(mask).tolist()
    [[0, 0, 1], [0, 1, 2]]
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

import torch
from transformers.cache_utils import DynamicCache

from agentenvs.core.checks import Bounds, Checked, require
from agents.policy.growing_cache import growing_cache

Decode = Literal["dynamic", "static"]
DECODERS: tuple[str, ...] = typing.get_args(Decode)


def check_compile_decode(owner: str, decode: str, compile_decode: bool) -> None:
    """The one rule between the two: ``compile_decode`` needs the static cache (``GRPOConfig`` and
    :class:`DecodeSettings` both call this, naming themselves)."""
    require(
        not (compile_decode and decode != "static"),
        owner,
        "compile_decode",
        "False unless decode='static' (the dynamic cache changes shape every step)",
        compile_decode,
    )


@dataclass(frozen=True)
class DecodeSettings(Checked):
    """How the sampling loop caches keys and values, checked from the annotations
    (:mod:`agentenvs.core.checks`) and :func:`check_compile_decode`.

    Attributes:
        decode: ``"dynamic"`` (growing cache) or ``"static"`` (preallocated, fixed shapes).
        compile_decode: ``torch.compile`` the static step (CUDA graphs on GPU).
        decode_bucket: Static cache widths are rounded up to a multiple of this.

    Example:
        >>> DecodeSettings("dynamic", compile_decode=True)
        Traceback (most recent call last):
        ...
        ValueError: DecodeSettings.compile_decode must be False unless decode='static' (the dynamic cache changes shape every step), got True
    """

    decode: Decode = "dynamic"
    compile_decode: bool = False
    decode_bucket: Annotated[int, Bounds(1)] = 64

    def check_relations(self) -> None:
        check_compile_decode(type(self).__name__, self.decode, self.compile_decode)


def positions_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids of a left-padded batch: real tokens count from 0, padding gets 0."""
    return (attention_mask.cumsum(-1) - 1).clamp(min=0)


def length_passes(attention_mask: torch.Tensor, rows_per_pass: int) -> list[torch.Tensor]:
    """Rows of a left-padded batch grouped by length into prefill passes of at most ``rows_per_pass``.

    Each pass then runs only the columns its longest row needs, so short prompts beside long
    ones compute little padding. ``[]`` (one pass of the whole batch) when the batch fits in
    one pass or ``rows_per_pass`` is 0.

    Example:
        >>> mask = torch.tensor([[0, 0, 1], [1, 1, 1], [0, 1, 1], [0, 0, 1]])
        >>> [rows.tolist() for rows in length_passes(mask, 2)]
        [[0, 3], [2, 1]]
    """
    if rows_per_pass < 0:
        raise ValueError(f"rows_per_pass must be >= 0, got {rows_per_pass}")
    if rows_per_pass == 0 or attention_mask.shape[0] <= rows_per_pass:
        return []
    order = torch.argsort(attention_mask.sum(dim=1), stable=True)
    return list(torch.split(order, rows_per_pass))


def cache_keyword(model: torch.nn.Module) -> str:
    """The name ``model.forward`` takes its KV cache under (``cache`` in recent transformers,
    ``past_key_values`` before)."""
    unwrap: Any = getattr(model, "get_base_model", None)  # a peft wrapper has one
    base = unwrap() if unwrap is not None else model
    parameters = inspect.signature(base.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def returned_cache(output: Any) -> Any:
    """The KV cache a forward pass returned, under either name."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


class Decoder(Protocol):
    """Next-token logits over a KV cache: ``prefill`` a prompt batch, then ``step`` token by token.

    ``cache`` is the transformers cache the last ``prefill``/``step`` filled; right after a
    prefill its first positions hold the (left-padded) prompts, which is what the policy keeps
    for :mod:`agents.policy.prompt_cache`.
    """

    cache: Any
    attention_mask: torch.Tensor
    """``[B, W]`` 1 on every real token fed so far (the columns line up with the cache's)."""
    selects_rows: bool
    """Whether :meth:`select_rows` works (a growing cache can drop and repeat rows; a static one cannot)."""
    joins_passes: bool
    """Whether :meth:`prefill` takes ``passes`` (a growing cache of full-attention layers)."""

    def prefill(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        limit: int,
        passes: Sequence[torch.Tensor] = (),
        prefix: Sequence[int] = (),
    ) -> torch.Tensor:
        """Runs the left-padded prompts; returns ``[B, V]`` logits for the first new token.

        ``passes`` (:func:`length_passes`): run these groups of rows one pass each, on the
        columns each needs, and join their caches as one left-padded batch (the growing cache
        only; empty: one pass). ``prefix``: tokens every prompt starts with, not in
        ``input_ids``: run once, and every row's cache and mask begin with them (the growing
        cache only, with ``passes``).
        """
        ...

    def step(self, tokens: torch.Tensor, active: torch.Tensor | None = None) -> torch.Tensor:
        """Feeds one token per row (``[B]``); returns ``[B, V]`` logits for the next one.

        ``active``: ``[B]`` bool, the rows whose token is real (others are masked out, so a
        later turn never attends to them); None: all.
        """
        ...

    def select_rows(self, index: torch.Tensor) -> None:
        """Keeps (or repeats) rows ``index`` of the cache and the mask."""
        ...


class DynamicDecoder:
    """Hugging Face's growing cache: the mask gains a column and the cache a position per step.

    Besides prefill and step it can :meth:`extend` the cache with a further left-padded chunk of
    tokens per row (the next turn of a conversation): padding and masked-out steps stay in the
    cache as columns no later token attends to, and positions count real tokens only. A prefill
    can run in passes of rows of similar length (:func:`length_passes`), each on the columns its
    longest prompt needs; their keys and values are joined into the one left-padded batch a
    single pass makes (zeros on the padding, which no token attends to).

    Args:
        model: The causal LM (a peft model works too).
        grow_in_place: Write each step's keys and values into spare room of the cache
            (:mod:`agents.policy.growing_cache`) instead of concatenating the whole cache every
            step; same values.
    """

    selects_rows = True

    def __init__(self, model: torch.nn.Module, *, grow_in_place: bool = True) -> None:
        self.model = model
        self.grow_in_place = grow_in_place
        self.cache_keyword = cache_keyword(model)
        self.cache: Any = None
        self.attention_mask = torch.empty(0)
        config: Any = getattr(model, "config", None)
        layer_types = getattr(config, "layer_types", None) or ["full_attention"]
        self.joins_passes = config is not None and set(layer_types) == {"full_attention"}
        """Whether :meth:`prefill` runs ``passes`` (every layer attends to all positions, so a layer's
        cache is its keys and values of every column; a sliding-window layer keeps fewer)."""

    def prefill(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        limit: int,
        passes: Sequence[torch.Tensor] = (),
        prefix: Sequence[int] = (),
    ) -> torch.Tensor:
        self.attention_mask = attention_mask
        if (passes or prefix) and not self.joins_passes:
            raise ValueError("this model has sliding-window layers: its prefill runs in one pass, prefix included")
        if prefix and not passes:
            raise ValueError("a shared prefix needs passes (one pass of every row: [torch.arange(batch)])")
        if not passes:
            self.cache, logits = self._prefill_pass(input_ids, attention_mask)
            return logits
        batch, width = input_ids.shape
        shared = len(prefix)
        head: Any = None
        if shared:
            head, _ = self._prefill_pass(
                torch.tensor([list(prefix)], device=input_ids.device), attention_mask.new_ones(1, shared)
            )
            self.attention_mask = torch.cat([attention_mask.new_ones(batch, shared), attention_mask], dim=1)

        def batch_sized(part: torch.Tensor) -> torch.Tensor:  # [b, ..., n, d] -> zeros [batch, ..., shared + width, d]
            return part.new_zeros(batch, *part.shape[1:-2], shared + width, part.shape[-1])

        logits = torch.empty(0)
        joined: list[tuple[torch.Tensor, torch.Tensor]] = []
        for rows in passes:
            rows = rows.to(input_ids.device)
            columns = int(attention_mask[rows].sum(dim=1).max())  # the pass's longest prompt
            cache, part = self._prefill_pass(
                input_ids[rows, width - columns :],
                torch.cat(
                    [self.attention_mask[rows, :shared], self.attention_mask[rows, shared + width - columns :]], 1
                ),
                head,
            )
            if not joined:  # the first pass: the batch's logits and every layer's keys and values, zero on padding
                logits = part.new_zeros(batch, part.shape[-1])
                joined = [(batch_sized(layer.keys), batch_sized(layer.values)) for layer in cache.layers]
            logits[rows] = part
            for (keys, values), layer in zip(joined, cache.layers, strict=True):
                keys[rows, ..., :shared, :] = layer.keys[..., :shared, :]
                values[rows, ..., :shared, :] = layer.values[..., :shared, :]
                keys[rows, ..., shared + width - columns :, :] = layer.keys[..., shared:, :]
                values[rows, ..., shared + width - columns :, :] = layer.values[..., shared:, :]
        config: Any = self.model.config
        self.cache = growing_cache(config) if self.grow_in_place else DynamicCache(config=config)
        for layer, (keys, values) in zip(self.cache.layers, joined, strict=True):
            layer.update(keys, values)
        return logits

    def _prefill_pass(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, head: Any = None
    ) -> tuple[Any, torch.Tensor]:
        """One forward over left-padded prompts: the cache and ``[B, V]`` next-token logits.

        ``head``: a one-row cache of tokens before every prompt (``attention_mask`` covers them
        too), copied for each row; None: from an empty cache.
        """
        config: Any = self.model.config
        cache: Any = growing_cache(config) if self.grow_in_place else DynamicCache(config=config)
        if head is not None:
            for layer, before in zip(cache.layers, head.layers, strict=True):
                rows = (input_ids.shape[0], *before.keys.shape[1:])
                layer.update(before.keys.expand(rows).contiguous(), before.values.expand(rows).contiguous())
        output = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=positions_from_mask(attention_mask)[:, attention_mask.shape[1] - input_ids.shape[1] :],
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_keyword: cache},
        )
        return returned_cache(output), output.logits[:, -1, :]

    def extend(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Feeds a left-padded ``[B, n]`` chunk after everything cached; ``[B, V]`` logits of its last column."""
        return self.feed(input_ids, attention_mask, logits_to_keep=1)[:, -1, :]

    def feed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, logits_to_keep: int) -> torch.Tensor:
        """Feeds a ``[B, n]`` chunk (mask 0 on padding, anywhere in it) after everything cached;
        ``[B, logits_to_keep, V]`` logits of its last columns."""
        self.attention_mask = torch.cat([self.attention_mask, attention_mask.to(self.attention_mask.dtype)], dim=1)
        positions = positions_from_mask(self.attention_mask)[:, -input_ids.shape[1] :]
        output = self.model(
            input_ids=input_ids,
            attention_mask=self.attention_mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=logits_to_keep,
            **{self.cache_keyword: self.cache},
        )
        self.cache = returned_cache(output)
        return output.logits

    def forget(self, keep: torch.Tensor) -> None:
        """Masks out cached columns no later token may attend to: ``keep`` ``[B, n]`` over the last
        ``n`` columns (0: forget; e.g. rejected draft tokens). Positions count kept tokens only."""
        width = keep.shape[1]
        self.attention_mask = self.attention_mask.clone()
        self.attention_mask[:, -width:] *= keep.to(self.attention_mask.dtype)

    def step(self, tokens: torch.Tensor, active: torch.Tensor | None = None) -> torch.Tensor:
        column = self.attention_mask.new_ones(len(tokens), 1) if active is None else active[:, None].long()
        self.attention_mask = torch.cat([self.attention_mask, column.to(self.attention_mask.dtype)], dim=1)
        positions = (self.attention_mask.sum(dim=1, keepdim=True) - 1).clamp(min=0)
        output = self.model(
            input_ids=tokens[:, None],
            attention_mask=self.attention_mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_keyword: self.cache},
        )
        self.cache = returned_cache(output)
        return output.logits[:, -1, :]

    def select_rows(self, index: torch.Tensor) -> None:
        index = index.to(self.attention_mask.device)
        self.cache.batch_select_indices(index)
        self.attention_mask = self.attention_mask[index]


class StaticDecoder:
    """A preallocated ``StaticCache`` and fixed-shape steps (compilable into a CUDA graph).

    Args:
        model: The causal LM (a peft model works too).
        bucket: Cache widths are rounded up to a multiple of this (>= 1, checked by
            :class:`DecodeSettings`), so that calls with slightly different prompt widths
            reuse one cache and one compiled graph.
        compile: Wrap the one-token step in ``torch.compile(mode="reduce-overhead")``
            (CUDA graphs on GPU; the prefill stays eager, its shape varies).
    """

    selects_rows = False
    joins_passes = False

    def __init__(self, model: torch.nn.Module, *, bucket: int = 64, compile: bool = False) -> None:
        self.model = model
        self.bucket = bucket
        self.cache_keyword = cache_keyword(model)
        self._step_forward = (
            torch.compile(model.forward, mode="reduce-overhead", fullgraph=False) if compile else model.forward
        )
        self.cache: Any = None
        self._cache_key: tuple | None = None
        self.attention_mask = torch.empty(0)
        self.positions = torch.empty(0)
        self.written = 0

    def cache_width(self, prompt_width: int, limit: int) -> int:
        """Positions the cache holds: prompt + limit, rounded up to the bucket."""
        return math.ceil((prompt_width + limit) / self.bucket) * self.bucket

    def _static_cache(self, batch: int, width: int, device: torch.device, dtype: torch.dtype) -> Any:
        from transformers import StaticCache

        key = (batch, width, device, dtype)
        if self.cache is not None and self._cache_key == key:
            self.cache.reset()  # same buffers (addresses a captured graph reads), zeroed
        else:
            config: Any = self.model.config
            self.cache = StaticCache(config=config, max_cache_len=width)
            self._cache_key = key
        return self.cache

    def prefill(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        limit: int,
        passes: Sequence[torch.Tensor] = (),
        prefix: Sequence[int] = (),
    ) -> torch.Tensor:
        if passes or prefix:
            raise ValueError(
                "a static cache prefills its batch in one pass (passes and prefixes need decode='dynamic')"
            )
        batch, prompt_width = input_ids.shape
        width = self.cache_width(prompt_width, limit)
        dtype = next(self.model.parameters()).dtype
        cache = self._static_cache(batch, width, input_ids.device, dtype)
        self.attention_mask = attention_mask.new_zeros(batch, width)
        self.attention_mask[:, :prompt_width] = attention_mask
        positions = positions_from_mask(attention_mask)
        self.positions = positions[:, -1:].clone()
        self.written = prompt_width
        output = self.model(
            input_ids=input_ids,
            attention_mask=self.attention_mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_keyword: cache},
        )
        return output.logits[:, -1, :]

    def step(self, tokens: torch.Tensor, active: torch.Tensor | None = None) -> torch.Tensor:
        if self.written >= self.attention_mask.shape[1]:
            raise RuntimeError(f"static cache of {self.attention_mask.shape[1]} positions is full")
        # The token fed now sits at cache position `written` (in place: a captured graph reads this buffer).
        self.attention_mask[:, self.written] = 1 if active is None else active.to(self.attention_mask.dtype)
        self.written += 1
        self.positions.add_(1)
        output = self._step_forward(
            input_ids=tokens[:, None],
            attention_mask=self.attention_mask,
            position_ids=self.positions,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_keyword: self.cache},
        )
        return output.logits[:, -1, :]

    def select_rows(self, index: torch.Tensor) -> None:
        raise NotImplementedError("a static cache keeps its batch size; use decode='dynamic'")


def make_decoder(model: torch.nn.Module, settings: DecodeSettings | None = None) -> Decoder:
    """The decoder ``settings`` ask for (default: dynamic) over ``model``."""
    settings = settings or DecodeSettings()
    if settings.decode == "static":
        return StaticDecoder(model, bucket=settings.decode_bucket, compile=settings.compile_decode)
    return DynamicDecoder(model)
