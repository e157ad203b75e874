"""Teacher-forced log-probs of given responses: the update's pass (with gradients) and the credit rules' (without).

- :meth:`Scorer.token_logprobs`: right-padded responses after left-padded prompts, one forward
  that keeps only the response positions' logits (``logits_to_keep``); optionally after a kept
  prompt KV (``past``) or, with a frozen trunk, on kept trunk states (top layers only).
- :meth:`Scorer.sequence_logprobs`: spans of whole sequences in one pass (every turn of a
  conversation at once, :mod:`agents.policy.spans`).
- :meth:`Scorer.score`: token rows without gradients, rows of similar length batched together;
  a conversation's turns are read off one pass over its last turn
  (:func:`~agents.policy.spans.one_pass_groups`), and with ``reuse_from`` the prompt tokens a
  row shares with a prompt kept at rollout (:mod:`agents.policy.caches`) are not recomputed
  (the privileged-information pass of ORSD and TASPO).

Log-probs are those of ``softmax(logits / T)``, the distribution the sampler
(:mod:`agents.policy.sampler`) records, so the two agree to float precision.

Example:
    >>> scorer = Scorer(weights, caches, pad_token_id=0, device=torch.device("cpu"))  # doctest: +SKIP
    >>> scorer.score([[1, 2, 3]], [[4, 5]]).shape                                      # doctest: +SKIP
    torch.Size([1, 2])
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import torch

from agentenvs.core.checks import Bounds, Checked
from agents.policy.caches import RolloutCaches
from agents.policy.decoding import cache_keyword, positions_from_mask
from agents.policy.logprobs import selective_logprobs
from agents.policy.padding import left_pad, right_pad
from agents.policy.prompt_cache import stacked_past
from agents.policy.spans import Span, one_pass_groups, span_logprobs
from agents.policy.weights import PolicyWeights


@dataclass(frozen=True)
class ScoreSettings(Checked):
    """How teacher-forced scoring is batched (memory against passes; the same log-probs), checked
    from the annotations.

    Attributes:
        logprob_chunk_size: Rows per chunk of the chunked log-softmax.
        score_batch_size: Rows per forward pass in :meth:`Scorer.score`.
    """

    logprob_chunk_size: Annotated[int, Bounds(1)] = 1024
    score_batch_size: Annotated[int, Bounds(1)] = 16


class Scorer:
    """Teacher-forced log-probs under the policy's model or its reference (see the module docstring).

    Args:
        weights: The model, its reference and its trunk layer.
        caches: Where the rollout's prompt KV is kept (read by ``score(reuse_from=...)``).
        pad_token_id: Fills padding (masked out).
        device: Where the model runs.
        temperature: The sampling temperature the log-probs are of.
        settings: Chunk and batch sizes (:class:`ScoreSettings`).
    """

    def __init__(
        self,
        weights: PolicyWeights,
        caches: RolloutCaches,
        *,
        pad_token_id: int,
        device: torch.device,
        temperature: float = 1.0,
        settings: ScoreSettings | None = None,
    ) -> None:
        settings = settings or ScoreSettings()
        self.weights = weights
        self.caches = caches
        self.pad_token_id = pad_token_id
        self.device = device
        self.temperature = temperature
        self.logprob_chunk_size = settings.logprob_chunk_size
        self.score_batch_size = settings.score_batch_size

    def trunk_applies(self, model: torch.nn.Module | None = None) -> bool:
        """Whether kept trunk states hold for ``model``: the policy's own (adapter on or off), with a frozen trunk."""
        return self.weights.trunk_layer is not None and (model is None or model is self.weights.model)

    def token_logprobs(
        self,
        prompt_ids: torch.Tensor,
        prompt_mask: torch.Tensor,
        response_ids: torch.Tensor,
        response_mask: torch.Tensor,
        *,
        model: torch.nn.Module | None = None,
        past: tuple[Any, torch.Tensor] | None = None,
        trunk_hiddens: Sequence[torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Teacher-forced log-probs ``[B, T]`` of right-padded responses after left-padded prompts.

        Keeps gradients when called with grad enabled (the update path). Padding
        positions hold 0. ``past``: a left-padded cache of tokens that come before
        ``prompt_ids`` and its ``[B, P]`` mask (see :mod:`agents.policy.prompt_cache`).
        ``trunk_hiddens``: per row, the kept trunk states of its prompt and response
        (:attr:`Generation.trunk_hiddens`); only the adapted top layers then run.
        """
        model = self.weights.model if model is None else model
        if trunk_hiddens is not None and self.trunk_applies(model):
            if past is not None:
                raise ValueError("token_logprobs takes past or trunk_hiddens, not both")
            sequences, spans = [], []
            for row in range(prompt_ids.shape[0]):
                prompt = prompt_ids[row][prompt_mask[row].bool()].tolist()
                response = response_ids[row][response_mask[row].bool()].tolist()
                sequences.append(prompt + response)
                spans.append([(len(prompt), len(prompt) + len(response))])
            pieces = self.sequence_logprobs(sequences, spans, trunk_hiddens=trunk_hiddens, model=model)
            result = torch.zeros(response_ids.shape, dtype=torch.float32, device=self.device)
            for row, [piece] in enumerate(pieces):
                result[row, : len(piece)] = piece
            return result
        # Drop prompt columns that are padding in every row (micro-batches are often shorter).
        keep = prompt_mask.any(dim=0)
        first = int(keep.nonzero()[0]) if bool(keep.any()) else prompt_mask.shape[1] - 1
        prompt_ids, prompt_mask = prompt_ids[:, first:], prompt_mask[:, first:]
        full_width = response_ids.shape[1]
        width = int(response_mask.sum(dim=1).max()) if response_mask.numel() else 0
        width = max(width, 1)
        response_ids, response_mask = response_ids[:, :width], response_mask[:, :width]
        input_ids = torch.cat([prompt_ids, response_ids], dim=1).to(self.device)
        attention_mask = torch.cat([prompt_mask, response_mask], dim=1).to(self.device).long()
        cache_arguments: dict[str, Any] = {"use_cache": False}
        if past is not None:
            cache, past_mask = past
            attention_mask = torch.cat([past_mask.to(self.device).long(), attention_mask], dim=1)
            cache_arguments = {"use_cache": True, cache_keyword(model): cache}
        position_ids = positions_from_mask(attention_mask)[:, attention_mask.shape[1] - input_ids.shape[1] :]
        output = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            logits_to_keep=width + 1,
            **cache_arguments,
        )
        logits = output.logits[:, :-1, :]
        logprobs = selective_logprobs(
            logits, response_ids.to(self.device), temperature=self.temperature, chunk_size=self.logprob_chunk_size
        )
        logprobs = logprobs * response_mask.to(self.device)
        if width < full_width:
            padding = torch.zeros(logprobs.shape[0], full_width - width, device=self.device)
            return torch.cat([logprobs, padding], dim=1)
        return logprobs

    def sequence_logprobs(
        self,
        sequences: Sequence[Sequence[int]],
        spans: Sequence[Sequence[Span]],
        *,
        trunk_hiddens: Sequence[torch.Tensor] | None = None,
        model: torch.nn.Module | None = None,
        packs: Sequence[Sequence[int]] | None = None,
    ) -> list[list[torch.Tensor]]:
        """Per sequence, per ``[start, end)`` span, the teacher-forced log-probs of its tokens, in one pass.

        ``packs``: sequences that share an input row (:func:`~agents.policy.spans.span_logprobs`).
        With ``trunk_hiddens`` (per sequence, kept states of at least its tokens before the last
        scored one) and a model they hold for (:meth:`trunk_applies`), only the top layers run;
        otherwise the whole model does. Gradients flow when grad is enabled.
        """
        model = self.weights.model if model is None else model
        use_trunk = trunk_hiddens is not None and self.trunk_applies(model)
        return span_logprobs(
            model,
            sequences,
            spans,
            pad_token_id=self.pad_token_id,
            device=self.device,
            temperature=self.temperature,
            chunk_size=self.logprob_chunk_size,
            trunk_hiddens=trunk_hiddens if use_trunk else None,
            first_layer=self.weights.trunk_layer if use_trunk else None,
            packs=packs,
        )

    @torch.no_grad()
    def score(
        self,
        prompt_rows: list[list[int]],
        responses: Sequence[Sequence[int]] | torch.Tensor,
        *,
        response_mask: torch.Tensor | None = None,
        reference: bool = False,
        reuse_from: list[list[int]] | None = None,
    ) -> torch.Tensor:
        """Teacher-forced log-probs of response tokens after prompt tokens, no gradients.

        Args:
            prompt_rows: Each row's prompt ids (chat-templated).
            responses: Token ids per row: lists, or a right-padded ``[B, T]`` tensor with ``response_mask``.
            response_mask: ``[B, T]`` validity of a padded ``responses`` tensor.
            reference: Score with the reference model (adapter disabled / frozen copy).
            reuse_from: Per row, the ids of a prompt whose KV was kept at rollout; the tokens
                row ``i``'s prompt shares with it are not recomputed.

        Returns:
            ``[B, T]`` float32 log-probs, 0 at padding (``T`` = longest response).
        """
        if isinstance(responses, torch.Tensor):
            response_ids = responses.long()
            mask = torch.ones_like(response_ids) if response_mask is None else response_mask.long()
        else:
            response_ids, mask = right_pad([list(r) for r in responses], self.pad_token_id, self.device)
        if reuse_from is None:
            response_rows = [ids[row_mask.bool()].tolist() for ids, row_mask in zip(response_ids, mask, strict=True)]
            groups = one_pass_groups(prompt_rows, response_rows)
            if any(len(group) > 1 for group in groups):  # a conversation's turns: one pass per group
                return self._score_groups(groups, prompt_rows, response_rows, response_ids.shape[1], reference)
        reused: list[tuple[int, list[Any]]] = [(0, [])] * len(prompt_rows)
        if reuse_from is not None:
            if len(reuse_from) != len(prompt_rows):
                raise ValueError(f"got {len(reuse_from)} reuse_from prompts for {len(prompt_rows)} prompts")
            if reference:
                raise ValueError("reuse_from reuses the policy's own KV; it cannot score with the reference model")
            reused = [
                self.caches.prompts.longest_prefix(row, kept) for row, kept in zip(prompt_rows, reuse_from, strict=True)
            ]
            prompt_rows = [row[length:] for row, (length, _) in zip(prompt_rows, reused, strict=True)]
        # Rows of similar length share a forward pass, so little compute goes to padding.
        lengths = torch.tensor([len(p) for p in prompt_rows]) + mask.sum(dim=1).cpu()
        order = torch.argsort(lengths, descending=True, stable=True)
        prompt_ids, prompt_mask = left_pad([prompt_rows[i] for i in order.tolist()], self.pad_token_id, self.device)
        order_on_device = order.to(response_ids.device)
        response_ids, mask = response_ids[order_on_device], mask[order_on_device]
        reused = [reused[i] for i in order.tolist()]
        pieces = []
        with self._model(reference) as model:
            for start in range(0, len(prompt_rows), self.score_batch_size):
                rows = slice(start, start + self.score_batch_size)
                chunk = reused[rows]
                past = None
                if any(length for length, _ in chunk):
                    past = stacked_past(
                        [kv for _, kv in chunk],
                        [length for length, _ in chunk],
                        config=model.config,
                        device=self.device,
                    )
                pieces.append(
                    self.token_logprobs(
                        prompt_ids[rows], prompt_mask[rows], response_ids[rows], mask[rows], model=model, past=past
                    )
                )
        if not pieces:
            return torch.zeros(0, 0)
        scored = torch.cat(pieces, dim=0)
        return scored[torch.argsort(order).to(scored.device)]

    def _model(self, reference: bool) -> contextlib.AbstractContextManager[Any]:
        return self.weights.reference_model() if reference else contextlib.nullcontext(self.weights.model)

    def _score_groups(
        self,
        groups: list[list[int]],
        prompt_rows: list[list[int]],
        response_rows: list[list[int]],
        width: int,
        reference: bool,
    ) -> torch.Tensor:
        """:meth:`score` over one-pass groups: each group's first row is fed once and every row reads its span."""
        result = torch.zeros(len(prompt_rows), width, dtype=torch.float32, device=self.device)
        with self._model(reference) as model:
            for start in range(0, len(groups), self.score_batch_size):
                batch = groups[start : start + self.score_batch_size]
                sequences = [prompt_rows[group[0]] + response_rows[group[0]] for group in batch]
                spans = [
                    [(len(prompt_rows[row]), len(prompt_rows[row]) + len(response_rows[row])) for row in group]
                    for group in batch
                ]
                scored = self.sequence_logprobs(sequences, spans, model=model)
                for group, pieces in zip(batch, scored, strict=True):
                    for row, piece in zip(group, pieces, strict=True):
                        result[row, : len(piece)] = piece
        return result
