"""A Hugging Face causal LM as a policy: batched sampling and teacher-forced scoring.

:class:`TransformersPolicy` is the :class:`~agents.policy.protocol.Policy` the trainer uses, put
together from pieces with one job each:

- :class:`~agents.policy.weights.PolicyWeights`: the model, a LoRA adapter, the reference model,
  the trainable state;
- :class:`~agents.policy.codec.ChatCodec`: prompts to chat-templated ids, responses to text;
- :class:`~agents.policy.sampler.Sampler`: our own KV-cached decode loop (so the log-prob of
  every sampled token comes from the same logits the sample was drawn from) over a growing or a
  static, compilable cache (:mod:`agents.policy.decoding`);
- :class:`~agents.policy.scorer.Scorer`: feeds ``prompt + response`` once and keeps only the
  response positions, with prompt-KV reuse for the privileged pass;
- :class:`~agents.policy.caches.RolloutCaches`: the prompt KV and trunk states a rollout keeps.

Sampling and scoring use the same left-padded prompts and explicit position ids, so a sampled
response and its teacher-forced score agree to float precision. Log-probs are those of the
temperature-scaled distribution ``softmax(logits / T)`` (not the top-p truncated one), as in
TRL and verl.

Example:
    >>> policy = TransformersPolicy("tiny-random-qwen3", sampling=SamplingSettings(max_new_tokens=4))  # doctest: +SKIP
    >>> [g] = policy.generate(["Say hi."])                                           # doctest: +SKIP
    >>> policy.score(["Say hi."], [g.response_ids]).shape                            # doctest: +SKIP
    torch.Size([1, 4])
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

import torch

from agents.policy.caches import RolloutCaches
from agents.policy.codec import ChatCodec, ChatSettings, eos_token_ids
from agents.policy.conversation import ConversationRollout
from agents.policy.decoding import Decoder, DecodeSettings
from agents.policy.generation import Generation
from agents.policy.models import resolve_model
from agents.policy.prompt_cache import PromptCacheStore
from agents.policy.sampler import PrefillSettings, Sampler, SamplingSettings
from agents.policy.scorer import Scorer, ScoreSettings
from agents.policy.spans import Span
from agents.policy.weights import PolicyWeights, WeightSettings

__all__ = ["TransformersPolicy"]


class TransformersPolicy:
    """A local causal LM (built-in name or model folder) behind generate/score.

    Each settings group is the constructor argument of the piece that uses it (None: its defaults).

    Args:
        model: ``"smollm2-135m"``, ``"tiny-random-qwen3"`` or a local model folder.
        weights: Dtypes, device, attention backend, LoRA and the reference model
            (:class:`~agents.policy.weights.WeightSettings`).
        sampling: Temperature, top-p, the token limit and stop strings
            (:class:`~agents.policy.sampler.SamplingSettings`; log-probs are of ``softmax(logits / T)``).
        chat: System prompt, context separator, thinking switch and response prefix
            (:class:`~agents.policy.codec.ChatSettings`).
        decoding: A growing or a static, compilable KV cache
            (:class:`~agents.policy.decoding.DecodeSettings`; same tokens and log-probs).
        prefill: How a batch's prompts are fed: shared prompts and prefixes, passes by length,
            prompt-lookup drafts (:class:`~agents.policy.sampler.PrefillSettings`; same tokens
            and log-probs).
        scoring: Chunk and batch sizes of teacher-forced scoring (:class:`~agents.policy.scorer.ScoreSettings`).
        seed: Seeds the sampling generator.
        cache_dir: Where built-in models are cached.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = "tiny-random-qwen3",
        *,
        weights: WeightSettings | None = None,
        sampling: SamplingSettings | None = None,
        chat: ChatSettings | None = None,
        decoding: DecodeSettings | None = None,
        prefill: PrefillSettings | None = None,
        scoring: ScoreSettings | None = None,
        seed: int = 0,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        from transformers import AutoTokenizer

        weights = weights or WeightSettings()
        sampling = sampling or SamplingSettings()
        chat = chat or ChatSettings()
        self.model_path = resolve_model(model, cache_dir)
        self.device = torch.device(weights.device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.weights = PolicyWeights.load(self.model_path, weights)
        self.codec = ChatCodec(self.tokenizer, eos_token_ids(self.tokenizer, self.weights.model), chat)
        self.caches = RolloutCaches(self.weights.trunk_layer)
        self.sampler = Sampler(
            self.weights.model,
            self.codec,
            self.caches,
            sampling,
            decode=decoding,
            prefill=prefill,
            seed=seed,
            device=self.device,
        )
        self.scorer = Scorer(
            self.weights,
            self.caches,
            pad_token_id=self.codec.pad_token_id,
            device=self.device,
            temperature=sampling.temperature,
            settings=scoring,
        )
        # Read-only views of the pieces that callers read (none of them is ever replaced).
        self.model: Any = self.weights.model
        self.lora = weights.lora
        self.has_reference = self.weights.has_reference
        self.trunk_layer = self.weights.trunk_layer
        """The first adapted layer when LoRA adapts the top layers only (the layers below are a frozen trunk)."""
        self.trunk_dtype = self.weights.trunk_dtype
        """The dtype the frozen trunk runs in (``trunk_dtype`` resolved; the parameter dtype without a trunk)."""
        self.pad_token_id = self.codec.pad_token_id
        self.response_prefix = chat.response_prefix
        self.prompt_caches: PromptCacheStore = self.caches.prompts
        """Prompt KV kept from rollouts (inside :meth:`keeping_prompt_caches`) for ``score(reuse_from=...)``."""

    # -- settings the pieces own (the settable ones can be swapped, as benchmarks and evaluation do) --
    @property
    def temperature(self) -> float:
        return self.sampler.settings.temperature

    @property
    def top_p(self) -> float:
        return self.sampler.settings.top_p

    @property
    def max_new_tokens(self) -> int:
        return self.sampler.settings.max_new_tokens

    @property
    def stop(self) -> tuple[str, ...]:
        return self.sampler.settings.stop

    @property
    def generator(self) -> torch.Generator:
        """The sampling generator (the trainer checkpoints and reseeds it; evaluation swaps it)."""
        return self.sampler.generator

    @generator.setter
    def generator(self, generator: torch.Generator) -> None:
        self.sampler.generator = generator

    @property
    def decoder(self) -> Decoder:
        """The decoder :meth:`generate` samples with (:mod:`agents.policy.decoding`)."""
        return self.sampler.decoder

    @decoder.setter
    def decoder(self, decoder: Decoder) -> None:
        self.sampler.decoder = decoder

    @property
    def share_prompts(self) -> bool:
        return self.sampler.share_prompts

    @share_prompts.setter
    def share_prompts(self, share: bool) -> None:
        self.sampler.share_prompts = bool(share)

    @property
    def eos_token_ids(self) -> set[int]:
        """Ids that end a response (a benchmark sets ``{-1}`` to decode exactly the token limit)."""
        return self.codec.eos_token_ids

    @eos_token_ids.setter
    def eos_token_ids(self, ids: set[int]) -> None:
        self.codec.eos_token_ids = ids

    # -- prompts and sampling -------------------------------------------------------------
    def prompt_ids(self, prompts: Sequence[str], contexts: Sequence[str | None] | None = None) -> list[list[int]]:
        """Chat-templated token ids of each prompt, with ``contexts[i]`` (if any) put before it (see ``ChatCodec``)."""
        return self.codec.prompt_ids(prompts, contexts)

    def next_turn_ids(self, response_ids: Sequence[int], user_message: str) -> list[int]:
        """The tokens a conversation adds after a response: close it, the user message, open the next reply."""
        return self.codec.next_turn_ids(response_ids, user_message)

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int | None = None,
        greedy: bool = False,
        stop: Sequence[str] | None = None,
    ) -> list[Generation]:
        """Samples one response per prompt, all prompts in one batch (see :meth:`Sampler.generate`)."""
        return self.sampler.generate(prompts, max_new_tokens=max_new_tokens, greedy=greedy, stop=stop)

    def conversations(self) -> ConversationRollout:
        """A multi-turn sampler: one growing chat per member over one KV cache (see :mod:`agents.policy.conversation`)."""
        return ConversationRollout(self.sampler)

    # -- what a rollout keeps ---------------------------------------------------------------
    def keeping_prompt_caches(self, enabled: bool = True) -> contextlib.AbstractContextManager[PromptCacheStore]:
        """Within this block, :meth:`generate` keeps every prompt's KV in :attr:`prompt_caches`."""
        return self.caches.keeping_prompt_caches(enabled)

    def keeping_trunk_hiddens(self, enabled: bool = True) -> contextlib.AbstractContextManager[None]:
        """Within this block every :class:`Generation` carries its ``trunk_hiddens`` (see :mod:`agents.policy.trunk`).

        Raises:
            ValueError: when the policy has no frozen trunk (LoRA on the top layers only).
        """
        return self.caches.keeping_trunk_hiddens(enabled)

    def clear_prompt_caches(self) -> None:
        """Frees the KV kept inside :meth:`keeping_prompt_caches`."""
        self.caches.prompts.clear()

    def cache_prompts(self, prompts: Sequence[str]) -> None:
        """Runs and keeps the prompts' KV as a rollout would (for batches not made by :meth:`generate`)."""
        self.sampler.cache_prompts(self.codec.prompt_ids(prompts))

    # -- scoring ----------------------------------------------------------------------------
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
        """Teacher-forced log-probs ``[B, T]`` of right-padded responses after left-padded prompts (see ``Scorer``)."""
        return self.scorer.token_logprobs(
            prompt_ids, prompt_mask, response_ids, response_mask, model=model, past=past, trunk_hiddens=trunk_hiddens
        )

    def sequence_logprobs(
        self,
        sequences: Sequence[Sequence[int]],
        spans: Sequence[Sequence[Span]],
        *,
        trunk_hiddens: Sequence[torch.Tensor] | None = None,
        model: torch.nn.Module | None = None,
        packs: Sequence[Sequence[int]] | None = None,
    ) -> list[list[torch.Tensor]]:
        """Per sequence, per ``[start, end)`` span, the teacher-forced log-probs of its tokens, in one pass
        (``packs``: see :func:`agents.policy.spans.span_logprobs`)."""
        return self.scorer.sequence_logprobs(sequences, spans, trunk_hiddens=trunk_hiddens, model=model, packs=packs)

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
        """Teacher-forced log-probs of given response tokens, optionally with extra prompt text.

        Args:
            prompts: User messages (as given to :meth:`generate`).
            responses: Token ids per prompt: lists, or a right-padded ``[B, T]`` tensor
                with ``response_mask``.
            contexts: Per prompt, text inserted before it (privileged information) or None.
            response_mask: ``[B, T]`` validity of a padded ``responses`` tensor.
            reference: Score with the reference model (adapter disabled / frozen copy).
            reuse_from: Per row, a prompt whose KV was kept at rollout (:meth:`keeping_prompt_caches`);
                the tokens row ``i``'s prompt shares with it are not recomputed. Same result
                while the policy is unchanged since the rollout.

        Returns:
            ``[B, T]`` float32 log-probs, 0 at padding (``T`` = longest response).
        """
        if len(responses) != len(prompts):
            raise ValueError(f"got {len(responses)} responses for {len(prompts)} prompts")
        prompt_rows = self.codec.prompt_ids(prompts, contexts)
        kept_rows = None if reuse_from is None else self.codec.prompt_ids(reuse_from)
        return self.scorer.score(
            prompt_rows, responses, response_mask=response_mask, reference=reference, reuse_from=kept_rows
        )

    # -- parameters and state ---------------------------------------------------------------
    def reference_model(self) -> contextlib.AbstractContextManager[torch.nn.Module]:
        """The frozen reference: the base model with the adapter off, or the frozen copy."""
        return self.weights.reference_model()

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters the optimizer updates (adapter only with LoRA)."""
        return self.weights.trainable_parameters()

    def trainable_state_dict(self) -> dict[str, torch.Tensor]:
        """The trainable weights by name (what a checkpoint must restore)."""
        return self.weights.trainable_state_dict()

    def load_trainable_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restores :meth:`trainable_state_dict` output (``KeyError`` naming mismatched weights)."""
        self.weights.load_trainable_state_dict(state)

    def save_pretrained(self, folder: str | os.PathLike[str]) -> None:
        """Saves the model (or the adapter) and the tokenizer in Hugging Face format."""
        self.model.save_pretrained(str(folder))
        self.tokenizer.save_pretrained(str(folder))
