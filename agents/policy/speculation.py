"""Prompt-lookup speculative decoding: drafts copied from the context, checked in one forward pass.

An agent's action often copies what its prompt shows: a product id, an option value, an
object's name. :class:`PromptLookup` drafts the tokens that followed the latest earlier
occurrence of the context's last n-gram (as ``transformers``' ``prompt_lookup_num_tokens``
does, preferring the most recent match); the sampler feeds the pending token and the draft in
one forward pass and keeps the longest prefix of the draft the model itself would have
produced (:func:`verify_drafts`), plus one token from the first position it did not accept.

It changes nothing but the speed:

- **Greedy**: a draft token is kept when it is the argmax at its position, so the tokens are
  the greedy tokens (up to float ties: a chunk's logits may differ from one-token steps' in
  the last bits).
- **Sampling**: the standard speculative-sampling rule with a deterministic draft (q = one
  token): keep draft token ``d`` with probability ``p(d)``; on a rejection sample from ``p``
  with ``d`` removed, renormalised. Every token is then distributed exactly as ``p`` (the
  temperature-scaled, top-p truncated distribution the plain loop samples from); only the
  random numbers drawn differ, so the samples are other samples of the same distribution.

Every kept token's log-prob is read from the logits of its own position, as in the plain
loop, so teacher-forced scores still match it. Rejected draft tokens stay in the KV cache as
masked-out columns that no later token attends to.

Example:
    >>> PromptLookup(num_tokens=3, max_ngram=2).draft([5, 6, 7, 8, 9, 5, 6], limit=10)
    [7, 8, 9]
    >>> PromptLookup(num_tokens=3, max_ngram=2).draft([1, 2, 1, 2, 1, 2], limit=10)  # whole drafts win
    [1, 2, 1]
    >>> PromptLookup(num_tokens=3).draft([1, 2, 3], limit=10)  # no earlier occurrence: no draft
    []
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class PromptLookup:
    """Drafts by copying from the context.

    Attributes:
        num_tokens: Draft tokens per step (at most).
        max_ngram: The longest context suffix matched (shorter ones are tried next, down to 1).
    """

    num_tokens: int = 8
    max_ngram: int = 3

    def __post_init__(self) -> None:
        for name in ("num_tokens", "max_ngram"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"PromptLookup.{name} must be an integer >= 1, got {value!r}")

    def draft(self, context: Sequence[int], limit: int) -> list[int]:
        """Up to ``min(num_tokens, limit)`` tokens that followed an earlier occurrence of the
        context's last n-gram (the longest n that occurs): the latest occurrence followed by a
        whole draft, else the earliest; [] when none occurs."""
        limit = min(limit, self.num_tokens)
        if limit <= 0 or len(context) < 2:
            return []
        tokens = np.asarray(context, dtype=np.int64)
        for n in range(min(self.max_ngram, len(tokens) - 1), 0, -1):
            windows = np.lib.stride_tricks.sliding_window_view(tokens[:-1], n)  # every n-gram but the last
            follows = np.flatnonzero((windows == tokens[-n:]).all(axis=1)) + n
            if len(follows):
                # The latest match with a whole draft after it; else the earliest (the longest draft).
                whole = follows[follows + limit <= len(tokens)]
                follow = int(whole[-1] if len(whole) else follows[0])
                return tokens[follow : follow + limit].tolist()
        return []


def target_probs(log_probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """The distribution the sampler draws from: ``exp(log_probs)``, top-p truncated and renormalised."""
    probs = log_probs.exp()
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs
        sorted_probs = sorted_probs.masked_fill(before >= top_p, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def verify_drafts(
    log_probs: torch.Tensor,
    drafts: torch.Tensor,
    *,
    greedy: bool,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """How many draft tokens each row keeps, and the token that follows them.

    Args:
        log_probs: ``[B, n, V]`` temperature-scaled log-probs; position ``j`` is the distribution
            after the pending token and the first ``j`` draft tokens.
        drafts: ``[B, n - 1]`` draft tokens, ``-1`` past a row's draft.
        greedy: Keep a draft token when it is the argmax; else the speculative-sampling rule.
        top_p: The sampler's nucleus threshold (sampling only).
        generator: The sampler's random generator (sampling only).

    Returns:
        ``kept`` ``[B]`` (draft tokens accepted, a prefix) and ``following`` ``[B]`` (greedy:
        the argmax after them; sampling: a draw from the residual distribution after a
        rejection, from the full one after a fully accepted draft).
    """
    batch, width = drafts.shape
    rows = torch.arange(batch, device=log_probs.device)
    real = drafts >= 0
    safe = drafts.clamp(min=0)
    if greedy:
        choice = log_probs.argmax(dim=-1)  # [B, n]
        accepted = (choice[:, :width] == drafts) & real
        kept = accepted.long().cumprod(dim=1).sum(dim=1)
        return kept, choice[rows, kept]
    probs = target_probs(log_probs, top_p)  # [B, n, V]
    p_draft = probs[:, :width].gather(-1, safe[..., None]).squeeze(-1)
    uniform = torch.rand(batch, width, generator=generator, device=log_probs.device)
    accepted = (uniform < p_draft) & real
    kept = accepted.long().cumprod(dim=1).sum(dim=1)
    final = probs[rows, kept].clone()  # [B, V]
    rejected = kept < real.sum(dim=1)
    if bool(rejected.any()):
        rejected_rows = rows[rejected]
        final[rejected_rows, safe[rejected_rows, kept[rejected]]] = 0.0
    return kept, torch.multinomial(final, 1, generator=generator).squeeze(-1)
