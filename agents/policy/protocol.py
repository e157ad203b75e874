"""The policy contract: what the collector, the trainer and the credit rules call.

:class:`~agents.policy.transformers_policy.TransformersPolicy` is the built-in backend; any
object with these members can take its place (a served model for evaluation needs only
:meth:`Policy.generate`; training needs all of them).

- :meth:`Policy.generate` samples one response per prompt (the collector);
- :meth:`Policy.score` gives teacher-forced log-probs without gradients, optionally with
  privileged text inserted (credit rules);
- :meth:`Policy.token_logprobs` gives the same on token tensors with gradients (the update),
  and :meth:`Policy.sequence_logprobs` on spans of whole sequences (every turn of a
  conversation in one pass), both on kept trunk states where the rows have them;
- :meth:`Policy.conversations` samples multi-turn chats over one KV cache (conversation mode);
- the parameter and state methods let the trainer optimise and checkpoint it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import torch


@runtime_checkable
class Generation(Protocol):
    """One sampled response, as :meth:`Policy.generate` returns it."""

    prompt: str
    prompt_ids: list[int]
    response_ids: list[int]
    text: str
    logprobs: list[float]
    trunk_hiddens: torch.Tensor | None
    """The frozen trunk's states of the prompt and response tokens, inside
    :meth:`Policy.keeping_trunk_hiddens` (None otherwise, or where a policy keeps none)."""

    def token_span(self, char_start: int, char_end: int) -> tuple[int, int]:
        """Response-token indices ``[start, end)`` covering characters ``[char_start, char_end)`` of ``text``."""
        ...


class ConversationSampler(Protocol):
    """Samples one growing chat per member, turn by turn (``Policy.conversations()``)."""

    def generate(
        self,
        members: Sequence[int],
        messages: Sequence[str],
        *,
        max_new_tokens: int | None = None,
        greedy: bool = False,
        stop: Sequence[str] | None = None,
    ) -> Sequence[Generation]:
        """Adds each member's next user message and samples its response."""
        ...


@runtime_checkable
class Policy(Protocol):
    """A language model that generates responses and scores given ones (see the module docstring)."""

    tokenizer: Any
    """The tokenizer (``encode(text, add_special_tokens=False)`` is what rules use)."""
    device: torch.device
    generator: torch.Generator
    """The sampling generator (the trainer checkpoints and reseeds it)."""
    pad_token_id: int
    has_reference: bool
    """Whether :meth:`reference_model` and ``score(reference=True)`` are available."""

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int | None = None,
        greedy: bool = False,
        stop: Sequence[str] | None = None,
    ) -> Sequence[Generation]:
        """Samples one response per prompt, in one batch."""
        ...

    def score(
        self,
        prompts: Sequence[str],
        responses: Sequence[Sequence[int]] | torch.Tensor,
        contexts: Sequence[str | None] | None = None,
        *,
        response_mask: torch.Tensor | None = None,
        reference: bool = False,
        reuse_from: Sequence[str] | None = None,
    ) -> torch.Tensor:
        """``[B, T]`` teacher-forced log-probs of ``responses`` after ``prompts``, no gradients."""
        ...

    def token_logprobs(
        self,
        prompt_ids: torch.Tensor,
        prompt_mask: torch.Tensor,
        response_ids: torch.Tensor,
        response_mask: torch.Tensor,
        *,
        model: torch.nn.Module | None = None,
        trunk_hiddens: Sequence[torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """``[B, T]`` log-probs on token tensors, with gradients when grad is enabled."""
        ...

    def sequence_logprobs(
        self,
        sequences: Sequence[Sequence[int]],
        spans: Sequence[Sequence[tuple[int, int]]],
        *,
        trunk_hiddens: Sequence[torch.Tensor] | None = None,
        model: torch.nn.Module | None = None,
        packs: Sequence[Sequence[int]] | None = None,
    ) -> list[list[torch.Tensor]]:
        """Per sequence, per ``[start, end)`` span, its tokens' log-probs, one forward for all spans
        (``packs``: sequences that share an input row, their common start fed once)."""
        ...

    def conversations(self) -> ConversationSampler:
        """A new multi-turn sampler (conversation mode)."""
        ...

    def keeping_trunk_hiddens(self, enabled: bool = True) -> contextlib.AbstractContextManager[Any]:
        """Within the block, generations carry the frozen trunk's hidden states of their tokens."""
        ...

    def keeping_prompt_caches(self, enabled: bool = True) -> contextlib.AbstractContextManager[Any]:
        """Within the block, :meth:`generate` keeps each prompt's KV for ``score(reuse_from=...)``."""
        ...

    def clear_prompt_caches(self) -> None:
        """Frees the KV kept by :meth:`keeping_prompt_caches`."""
        ...

    def reference_model(self) -> contextlib.AbstractContextManager[torch.nn.Module]:
        """The frozen reference model, for KL and for ``verifier="reference"``."""
        ...

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """What the optimizer updates."""
        ...

    def trainable_state_dict(self) -> dict[str, torch.Tensor]:
        """The trainable weights by name (what a checkpoint restores)."""
        ...

    def load_trainable_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restores :meth:`trainable_state_dict` output."""
        ...

    def save_pretrained(self, folder: str | os.PathLike[str]) -> None:
        """Saves the model (or adapter) and tokenizer in Hugging Face format."""
        ...
