"""The frozen trunk: keep the hidden states entering the first adapted layer, rerun only the top layers.

With LoRA on the top N decoder layers only (``LoraOptions.top_layers``), the layers below carry
no adapter and get no gradient: for a given token sequence their output is the same at rollout
and in every later pass while the base weights stay frozen. So the rollout keeps, for every real
token it feeds (prefill, KV-cached decode steps, conversation turns alike), the hidden state
entering the first adapted layer (:class:`TrunkRecorder`, a forward pre-hook on that layer), and
a later teacher-forced pass runs only the top N layers and the final norm on those hidden states
(:func:`top_layers_forward`), with the model's own rotary module, causal + padding mask and
decoder layers. The LM head is then applied to the positions that are scored only
(:mod:`agents.policy.spans`). The result equals the full forward to float precision, and so do
the adapter's gradients (tested); the reference model of a LoRA policy (the adapter switched off)
shares the trunk too.

Memory: ``hidden_size`` values per kept token (576 for SmolLM2-135M: 2.3 KB in float32, ~90 MB
for a step of 64 turns of 600 tokens), kept on the CPU until the batch is dropped; the prompt KV
of :mod:`agents.policy.prompt_cache` costs 20× that per token. Compute saved per scoring pass:
the ``L - N`` lower layers (24 of SmolLM2's 30 with N = 6), forward and backward.

Example:
    >>> trunk_layer(num_layers=30, top_layers=6)
    24
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from agents.policy.decoding import positions_from_mask


def trunk_layer(num_layers: int, top_layers: int | None) -> int | None:
    """Index of the first adapted layer (None: every layer is adapted, no trunk to keep)."""
    if top_layers is None or top_layers >= num_layers:
        return None
    return num_layers - top_layers


def decoder_and_head(model: torch.nn.Module) -> tuple[Any, torch.nn.Module]:
    """The decoder stack (``layers``, ``rotary_emb``, ``norm``) and LM head of a causal LM (peft or not).

    Raises:
        ValueError: for a model without one rotary module, a final norm and a plain LM head
            (Llama, Qwen, Mistral and their kin have them).
    """
    unwrap: Any = getattr(model, "get_base_model", None)  # a peft wrapper
    causal: Any = unwrap() if unwrap is not None else model
    decoder = causal.get_decoder()
    head = causal.get_output_embeddings()
    config = causal.config
    plain = all(hasattr(decoder, name) for name in ("layers", "rotary_emb", "norm")) and head is not None
    if not plain or getattr(config, "final_logit_softcapping", None) or getattr(config, "logit_scale", None):
        raise ValueError(
            f"{type(causal).__name__} is not a decoder with layers, one rotary_emb, a final norm and a plain LM head"
        )
    return decoder, head


class _TrunkReached(Exception):
    """Raised by a stopping :class:`TrunkRecorder` once it holds the states: the layers above are not run."""


class TrunkRecorder:
    """Records the hidden states entering one decoder layer, on every forward inside the block.

    Each forward adds one ``[B, n, D]`` tensor (its ``n`` new tokens); together they line up
    with the columns of the decoder's attention mask, so :meth:`rows` can cut out each row's
    real tokens. :meth:`select_rows` follows the decoder when it drops or repeats rows.

    Args:
        layer: The first adapted decoder layer.
        stop: End each forward inside the block at ``layer``, once its input is recorded (the
            block ends there, without error): for a pass that wants the trunk states only, so
            the adapted layers, the final norm and the head are not run.
    """

    def __init__(self, layer: torch.nn.Module, *, stop: bool = False) -> None:
        self.layer = layer
        self.stop = stop
        self.captured: list[torch.Tensor] = []
        self._handle: Any = None

    def __enter__(self) -> TrunkRecorder:
        self._handle = self.layer.register_forward_pre_hook(self._record, with_kwargs=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> bool:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        return kind is _TrunkReached  # a stopping recorder's own early exit, nothing else, is swallowed

    def _record(self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        hidden = args[0] if args else kwargs["hidden_states"]
        self.captured.append(hidden.detach())
        if self.stop:
            raise _TrunkReached

    def _joined(self) -> torch.Tensor:
        if len(self.captured) > 1:
            self.captured = [torch.cat(self.captured, dim=1)]
        return self.captured[0]

    def join_passes(self, passes: Sequence[torch.Tensor], attention_mask: torch.Tensor, shared: int = 0) -> None:
        """Joins the states the last forwards recorded (a prefill in passes,
        :func:`~agents.policy.decoding.length_passes`, after a ``shared`` prefix's own forward
        when ``shared > 0``) into one ``[B, W, D]`` batch lined up with ``attention_mask``
        (the prefix's columns first, then the left-padded rest; zeros on padding), as the
        decoder joins its cache."""
        count = len(passes) + (1 if shared else 0)
        parts, self.captured = self.captured[-count:], self.captured[:-count]
        batch, width = attention_mask.shape
        joined = parts[-1].new_zeros(batch, width, parts[-1].shape[-1])
        if shared:
            joined[:, :shared] = parts.pop(0)[0]
        for rows, part in zip(passes, parts, strict=True):
            joined[rows.to(joined.device), width - part.shape[1] :] = part
        self.captured.append(joined)

    def select_rows(self, index: torch.Tensor) -> None:
        """Keeps (or repeats) rows ``index`` of everything recorded, as the decoder's cache does."""
        if self.captured:
            self.captured = [self._joined()[index.to(self.captured[0].device)]]

    def rows(self, attention_mask: torch.Tensor, lengths: Sequence[int] | None = None) -> list[torch.Tensor]:
        """Each row's recorded hidden states of real tokens (mask 1), in order, on the CPU.

        Args:
            attention_mask: ``[B, W]`` the decoder's mask over every column fed so far.
            lengths: Keep only the first ``lengths[i]`` real tokens of row ``i``.
        """
        if not self.captured:
            return [torch.zeros(0, 0) for _ in range(attention_mask.shape[0])]
        hidden = self._joined()
        mask = attention_mask[:, : hidden.shape[1]].bool().to(hidden.device)
        kept = []
        for row in range(hidden.shape[0]):
            real = hidden[row][mask[row]]
            if lengths is not None:
                real = real[: lengths[row]]
            kept.append(real.cpu().clone())
        return kept


def top_layers_forward(
    model: torch.nn.Module,
    first_layer: int,
    hidden_states: torch.Tensor,
    attention_mask: torch.Tensor,
    position_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """The final-norm output of layers ``first_layer..L-1`` run on kept trunk hidden states.

    Args:
        model: The causal LM (peft or not) whose trunk produced ``hidden_states``.
        first_layer: The first adapted layer (where the states were recorded).
        hidden_states: ``[B, W, D]`` left-padded kept states (any value at padding).
        attention_mask: ``[B, W]`` 1 on real tokens, or a ready ``[B, 1, W, W]`` mask in the
            attention implementation's format (packed rows, :func:`~agents.policy.spans.packed_attention_mask`).
        position_ids: ``[B, W]`` positions (None: counted from a 2D mask's real tokens).

    Returns:
        ``[B, W, D]`` hidden states after the last layer and the final norm, as the full
        model computes them for the same tokens (its LM head input).
    """
    from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

    decoder, _ = decoder_and_head(model)
    config = decoder.config
    if position_ids is None and attention_mask.dim() != 2:
        raise ValueError("a 4D attention mask needs position_ids")
    positions = positions_from_mask(attention_mask) if position_ids is None else position_ids
    arguments = {
        "config": config,
        "inputs_embeds": hidden_states,
        "attention_mask": attention_mask,
        "cache": None,
        "position_ids": positions,
    }
    layer_types = list(getattr(config, "layer_types", None) or ["full_attention"] * config.num_hidden_layers)
    masks = {"full_attention": create_causal_mask(**arguments)}
    if "sliding_attention" in layer_types[first_layer:]:
        masks["sliding_attention"] = create_sliding_window_causal_mask(**arguments)
    position_embeddings = decoder.rotary_emb(hidden_states, position_ids=positions)
    hidden = hidden_states
    for index in range(first_layer, config.num_hidden_layers):
        hidden = decoder.layers[index](
            hidden,
            attention_mask=masks[layer_types[index]],
            position_embeddings=position_embeddings,
            position_ids=positions,
        )
    return decoder.norm(hidden)
