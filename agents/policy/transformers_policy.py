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
    >>> policy = TransformersPolicy("tiny-random-qwen3", max_new_tokens=4, seed=0)  # doctest: +SKIP
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
from agents.policy.codec import ChatCodec, eos_token_ids
from agents.policy.conversation import ConversationRollout
from agents.policy.decoding import Decode, Decoder, DecodeSettings
from agents.policy.generation import Generation, char_span_to_token_span
from agents.policy.models import resolve_model
from agents.policy.prompt_cache import PromptCacheStore
from agents.policy.sampler import Sampler, SamplingSettings
from agents.policy.scorer import Scorer
from agents.policy.spans import Span
from agents.policy.speculation import PromptLookup
from agents.policy.trunk_precision import TrunkDtype
from agents.policy.weights import LoraOptions, PolicyWeights, torch_dtype

__all__ = ["Generation", "LoraOptions", "TransformersPolicy", "char_span_to_token_span"]  # their old home


class TransformersPolicy:
    """A local causal LM (built-in name or model folder) behind generate/score.

    Args:
        model: ``"smollm2-135m"``, ``"tiny-random-qwen3"`` or a local model folder.
        dtype: Parameter dtype (``"float32"`` on CPU).
        trunk_dtype: Run the frozen trunk (the layers under LoRA's top layers) in bf16:
            ``"bfloat16"``, ``"auto"`` (where the device has bf16 units) or None (``dtype``);
            see :mod:`agents.policy.trunk_precision`.
        device: Torch device.
        lora: Train a LoRA adapter instead of all weights (None: full fine-tuning).
        reference: Keep a reference model for KL: with LoRA it is the base model
            (adapter disabled); without, a frozen copy is made.
        temperature: Sampling temperature (log-probs are of ``softmax(logits / T)``).
        top_p: Nucleus sampling threshold.
        max_new_tokens: Longest response.
        stop: Strings that end a response (kept in it).
        system_prompt: A system message put before every prompt (None: the template's default).
        context_separator: Put between privileged context and the prompt in :meth:`score`.
        enable_thinking: Passed to chat templates that know it (Qwen3).
        response_prefix: Text that starts every response (appended to the prompt, like
            Qwen3's empty think block); it is part of :attr:`Generation.text`, not of
            the sampled tokens.
        logprob_chunk_size: Rows per chunk of the chunked log-softmax.
        score_batch_size: Rows per forward pass in :meth:`score`.
        cache_dir: Where built-in models are cached.
        seed: Seeds the sampling generator.
        attn_implementation: Transformers attention backend.
        decode: ``"dynamic"`` (growing KV cache) or ``"static"`` (preallocated cache, fixed
            shapes per step; same tokens and log-probs).
        compile_decode: Compile the static decode step with ``torch.compile``
            (``reduce-overhead``: CUDA graphs on GPU). Needs ``decode="static"``.
        decode_bucket: Static cache widths are rounded up to a multiple of this.
        share_prompts: Prefill each distinct prompt of a batch once and copy its cache to the
            rows that share it (a group's members share their first prompt), and feed it once
            in the trainer's update too (:meth:`~agents.training.trainer.Trainer.batch_logprobs`);
            same tokens and log-probs. The prefill part needs ``decode="dynamic"`` (a static
            cache keeps its rows).
        prefill_rows: Prefill at most this many prompts a pass, grouped by length, and join
            their caches (``decode="dynamic"``, full-attention models; 0: one pass). Less padding
            computed; the same tokens and log-probs up to float rounding.
        shared_prefix: Prefill the start that every prompt of a batch shares once (the chat
            template's system turn, the env's fixed text) when it is at least this many tokens
            (0: never); growing caches of full-attention models.
        prompt_lookup_num_tokens: Draft tokens per decoding step copied from the context
            (prompt-lookup speculative decoding, :mod:`agents.policy.speculation`; 0: off).
            Same greedy tokens, same sampling distribution. Needs ``decode="dynamic"``.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = "tiny-random-qwen3",
        *,
        dtype: str = "float32",
        trunk_dtype: TrunkDtype | None = None,
        device: str = "cpu",
        lora: LoraOptions | None = None,
        reference: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int = 128,
        stop: Sequence[str] = (),
        system_prompt: str | None = None,
        context_separator: str = "\n\n",
        enable_thinking: bool = False,
        response_prefix: str = "",
        logprob_chunk_size: int = 1024,
        score_batch_size: int = 16,
        cache_dir: str | os.PathLike[str] | None = None,
        seed: int = 0,
        attn_implementation: str = "sdpa",
        decode: Decode = "dynamic",
        compile_decode: bool = False,
        decode_bucket: int = 64,
        share_prompts: bool = True,
        prefill_rows: int = 4,
        shared_prefix: int = 16,
        prompt_lookup_num_tokens: int = 0,
    ) -> None:
        from transformers import AutoTokenizer

        sampling = SamplingSettings(temperature, top_p, max_new_tokens, tuple(stop))
        decode_settings = DecodeSettings(decode, compile_decode, decode_bucket)
        parameter_dtype = torch_dtype(dtype)
        self.model_path = resolve_model(model, cache_dir)
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.weights = PolicyWeights.load(
            self.model_path,
            dtype=parameter_dtype,
            trunk_dtype=trunk_dtype,
            device=self.device,
            attn_implementation=attn_implementation,
            lora=lora,
            reference=reference,
        )
        self.codec = ChatCodec(
            self.tokenizer,
            eos_token_ids(self.tokenizer, self.weights.model),
            system_prompt=system_prompt,
            context_separator=context_separator,
            enable_thinking=enable_thinking,
            response_prefix=response_prefix,
        )
        self.caches = RolloutCaches(self.weights.trunk_layer)
        self.sampler = Sampler(
            self.weights.model,
            self.codec,
            self.caches,
            sampling,
            decode=decode_settings,
            share_prompts=share_prompts,
            prefill_rows=prefill_rows,
            shared_prefix=shared_prefix,
            prompt_lookup=PromptLookup(prompt_lookup_num_tokens) if prompt_lookup_num_tokens else None,
            seed=seed,
            device=self.device,
        )
        self.scorer = Scorer(
            self.weights,
            self.caches,
            pad_token_id=self.codec.pad_token_id,
            device=self.device,
            temperature=sampling.temperature,
            logprob_chunk_size=logprob_chunk_size,
            score_batch_size=score_batch_size,
        )
        # Read-only views of the pieces that callers read (none of them is ever replaced).
        self.model: Any = self.weights.model
        self.lora = lora
        self.has_reference = self.weights.has_reference
        self.trunk_layer = self.weights.trunk_layer
        """The first adapted layer when LoRA adapts the top layers only (the layers below are a frozen trunk)."""
        self.trunk_dtype = self.weights.trunk_dtype
        """The dtype the frozen trunk runs in (``trunk_dtype`` resolved; the parameter dtype without a trunk)."""
        self.pad_token_id = self.codec.pad_token_id
        self.response_prefix = response_prefix
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
