"""What a rollout keeps for later passes: each prompt's KV, and the frozen trunk's hidden states.

Both are off by default and switched on for a block (the trainer's collection step):

- inside :meth:`RolloutCaches.keeping_prompt_caches`, every prompt the sampler prefills has its
  keys and values kept in :attr:`RolloutCaches.prompts` (:mod:`agents.policy.prompt_cache`), so a
  later scoring pass with privileged text recomputes only the tokens after the shared prefix;
- inside :meth:`RolloutCaches.keeping_trunk_hiddens`, the sampler records the hidden states
  entering the first adapted layer (:mod:`agents.policy.trunk`), so a later pass runs only the
  adapted top layers.

Example:
    >>> caches = RolloutCaches(trunk_layer=None)
    >>> with caches.keeping_prompt_caches() as store:
    ...     caches.keeps_prompts, len(store)
    (True, 0)
    >>> caches.keeps_prompts
    False
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from agents.policy.prompt_cache import PromptCacheStore
from agents.policy.trunk import TrunkRecorder, decoder_and_head


class RolloutCaches:
    """The prompt KV store and the trunk-recording switch (see the module docstring).

    Args:
        trunk_layer: The first adapted layer when LoRA adapts the top layers only (None: no
            frozen trunk, so there are no trunk states to keep).
    """

    def __init__(self, trunk_layer: int | None) -> None:
        self.trunk_layer = trunk_layer
        self.prompts = PromptCacheStore()
        """Prompt KV kept inside :meth:`keeping_prompt_caches`, for ``score(reuse_from=...)``."""
        self.keeps_prompts = False
        self.keeps_trunk = False

    @contextlib.contextmanager
    def keeping_prompt_caches(self, enabled: bool = True) -> Iterator[PromptCacheStore]:
        """Within this block, every prefill keeps its prompts' KV in :attr:`prompts`."""
        previous, self.keeps_prompts = self.keeps_prompts, enabled
        try:
            yield self.prompts
        finally:
            self.keeps_prompts = previous

    @contextlib.contextmanager
    def keeping_trunk_hiddens(self, enabled: bool = True) -> Iterator[None]:
        """Within this block, sampling records the trunk's hidden states (:meth:`trunk_recorder`).

        Raises:
            ValueError: when the policy has no frozen trunk (LoRA on the top layers only).
        """
        if enabled and self.trunk_layer is None:
            raise ValueError("keeping trunk hidden states needs LoRA on the top layers only (lora.top_layers)")
        previous, self.keeps_trunk = self.keeps_trunk, enabled
        try:
            yield
        finally:
            self.keeps_trunk = previous

    def keep_prompt_kv(
        self, prompt_ids: list[list[int]], cache: Any, *, width: int | None = None, mask: torch.Tensor | None = None
    ) -> None:
        """Inside :meth:`keeping_prompt_caches`, keeps the prompts' KV just fed (see ``PromptCacheStore.keep``)."""
        if self.keeps_prompts:
            self.prompts.keep(prompt_ids, cache, width, mask=mask)

    def trunk_recorder(self, model: torch.nn.Module) -> TrunkRecorder | None:
        """A recorder on ``model``'s first adapted layer inside :meth:`keeping_trunk_hiddens`, else None."""
        if not self.keeps_trunk or self.trunk_layer is None:
            return None
        decoder, _ = decoder_and_head(model)
        return TrunkRecorder(decoder.layers[self.trunk_layer])
