"""A Hugging Face causal LM as a policy: batched sampling and teacher-forced scoring.

Sampling runs our own KV-cached decode loop (so the log-prob of every sampled
token comes from the same logits the sample was drawn from) over a growing or a
static, compilable cache (:mod:`agents.policy.decoding`); scoring feeds
``prompt + response`` once and keeps only the response positions
(``logits_to_keep``), turning them into log-probs a chunk of rows at a time.
Both use the same left-padded prompts and explicit position ids, so a sampled
response and its teacher-forced score agree to float precision.

Log-probs are those of the temperature-scaled distribution ``softmax(logits / T)``
(not the top-p truncated one), as in TRL and verl.

Example:
    >>> policy = TransformersPolicy("tiny-random-qwen3", max_new_tokens=4, seed=0)  # doctest: +SKIP
    >>> [g] = policy.generate(["Say hi."])                                           # doctest: +SKIP
    >>> policy.score(["Say hi."], [g.response_ids]).shape                            # doctest: +SKIP
    torch.Size([1, 4])
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from agents.policy.chat import ChatFrame, parse_conversation_text
from agents.policy.conversation import ConversationRollout
from agents.policy.decoding import Decoder, DecodeSettings, cache_keyword, make_decoder, positions_from_mask
from agents.policy.logprobs import selective_logprobs
from agents.policy.models import resolve_model
from agents.policy.prompt_cache import PromptCacheStore, stacked_past
from agents.policy.spans import Span, prefix_chains, span_logprobs
from agents.policy.trunk import TrunkRecorder, decoder_and_head, trunk_layer


@dataclass(frozen=True)
class LoraOptions:
    """LoRA adapter settings (peft).

    Attributes:
        rank: Adapter rank r.
        alpha: Scaling numerator (scale = alpha / r).
        dropout: Dropout on the adapter input (keep 0 for exact on-policy ratios).
        target_modules: Module names to adapt, or ``"all-linear"``.
        top_layers: Adapt only the last N transformer layers (None: all). The layers
            below then need no backward pass, which makes updates much cheaper on CPU.
    """

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: str | tuple[str, ...] = "all-linear"
    top_layers: int | None = None

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"lora.rank must be >= 1, got {self.rank}")
        if self.top_layers is not None and self.top_layers < 1:
            raise ValueError(f"lora.top_layers must be None or >= 1, got {self.top_layers}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"lora.dropout must be in [0, 1), got {self.dropout}")


@dataclass
class Generation:
    """One sampled response.

    Attributes:
        prompt: The prompt text (user message, before the chat template).
        prompt_ids: Chat-templated prompt token ids.
        response_ids: Sampled token ids (the stop/eos token included when hit).
        text: The response prefix (if any) and the response decoded without special tokens.
        logprobs: Log-prob of each sampled token under the sampling distribution.
        token_offsets: Character ``(start, end)`` of each sampled token in ``text``.
        finish_reason: ``"eos"``, ``"stop"`` (a stop string) or ``"length"``.
        trunk_hiddens: Inside :meth:`TransformersPolicy.keeping_trunk_hiddens`, the ``[P + R - 1, D]``
            states entering the first adapted layer of every prompt token and every response
            token but the last (what a teacher-forced pass over the top layers needs), on the CPU.
    """

    prompt: str
    prompt_ids: list[int]
    response_ids: list[int]
    text: str
    logprobs: list[float]
    token_offsets: list[tuple[int, int]] = field(default_factory=list)
    finish_reason: str = "length"
    trunk_hiddens: torch.Tensor | None = None

    def token_span(self, char_start: int, char_end: int) -> tuple[int, int]:
        """Indices ``[first, last + 1)`` of the response tokens overlapping ``text[char_start:char_end]``."""
        return char_span_to_token_span(self.token_offsets, char_start, char_end)


def char_span_to_token_span(offsets: Sequence[tuple[int, int]], char_start: int, char_end: int) -> tuple[int, int]:
    """The token range covering a character range, from per-token character offsets.

    >>> char_span_to_token_span([(0, 3), (3, 5), (5, 9)], 4, 7)
    (1, 3)
    """
    inside = [i for i, (start, end) in enumerate(offsets) if start < char_end and end > char_start]
    if not inside:
        # An empty span sits between tokens: point at the token where it starts.
        index = next((i for i, (start, _) in enumerate(offsets) if start >= char_start), len(offsets))
        return index, index
    return inside[0], inside[-1] + 1


class TransformersPolicy:
    """A local causal LM (built-in name or model folder) behind generate/score.

    Args:
        model: ``"smollm2-135m"``, ``"tiny-random-qwen3"`` or a local model folder.
        dtype: Parameter dtype (``"float32"`` on CPU).
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
            rows that share it (a group's members share their first prompt); same tokens and
            log-probs. Needs ``decode="dynamic"`` (a static cache keeps its rows).
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = "tiny-random-qwen3",
        *,
        dtype: str = "float32",
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
        decode: str = "dynamic",
        compile_decode: bool = False,
        decode_bucket: int = 64,
        share_prompts: bool = True,
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        decode_settings = DecodeSettings(decode, compile_decode, decode_bucket)
        if not hasattr(torch, dtype) or not isinstance(getattr(torch, dtype), torch.dtype):
            raise ValueError(f"dtype must name a torch dtype (e.g. 'float32'), got {dtype!r}")
        self.model_path = resolve_model(model, cache_dir)
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        base: Any = AutoModelForCausalLM.from_pretrained(
            self.model_path, dtype=getattr(torch, dtype), attn_implementation=attn_implementation
        )
        base = base.to(self.device)
        base.eval()  # no dropout: old and new log-probs must come from the same function
        self.lora = lora
        self._reference_copy: torch.nn.Module | None = None
        if lora is not None:
            from peft import LoraConfig, get_peft_model

            target = lora.target_modules if isinstance(lora.target_modules, str) else list(lora.target_modules)
            layers = None
            if lora.top_layers is not None:
                total = int(base.config.num_hidden_layers)
                layers = list(range(max(0, total - lora.top_layers), total))
                if target == "all-linear":  # peft wants explicit names with layers_to_transform
                    target = sorted(
                        {
                            name.rsplit(".", 1)[-1]
                            for name, module in base.named_modules()
                            if isinstance(module, torch.nn.Linear) and ".layers." in f".{name}"
                        }
                    )
            config = LoraConfig(
                r=lora.rank,
                lora_alpha=lora.alpha,
                lora_dropout=lora.dropout,
                target_modules=target,
                layers_to_transform=layers,
                layers_pattern="layers" if layers is not None else None,
            )
            self.model = get_peft_model(base, config)
            self.model.eval()
        else:
            self.model = base
            if reference:
                self._reference_copy = copy.deepcopy(base).requires_grad_(False)
        self.has_reference = reference or lora is not None
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_new_tokens = int(max_new_tokens)
        self.stop = tuple(stop)
        self.system_prompt = system_prompt
        self.context_separator = context_separator
        self.enable_thinking = enable_thinking
        self.response_prefix = response_prefix
        self._prefix_ids = self.tokenizer.encode(response_prefix, add_special_tokens=False) if response_prefix else []
        self.logprob_chunk_size = int(logprob_chunk_size)
        self.score_batch_size = int(score_batch_size)
        self.pad_token_id = int(self.tokenizer.pad_token_id)
        self.eos_token_ids = _eos_ids(self.tokenizer, base)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)
        self.decoder: Decoder = make_decoder(self.model, decode_settings)
        self.prompt_caches = PromptCacheStore()
        """Prompt KV kept from rollouts (inside :meth:`keeping_prompt_caches`) for ``score(reuse_from=...)``."""
        self._keep_prompt_caches = False
        self.share_prompts = bool(share_prompts)
        self.trunk_layer = trunk_layer(int(base.config.num_hidden_layers), lora.top_layers if lora else None)
        """The first adapted layer when LoRA adapts the top layers only (the layers below are a frozen trunk)."""
        self._keep_trunk_hiddens = False
        self._chat_frame: ChatFrame | None = None

    # -- prompts ------------------------------------------------------------------------
    def prompt_ids(self, prompts: Sequence[str], contexts: Sequence[str | None] | None = None) -> list[list[int]]:
        """Chat-templated token ids of each prompt, with ``contexts[i]`` (if any) put before it.

        A conversation prompt (:func:`agents.policy.chat.conversation_text`, what
        :meth:`conversations` records) becomes the whole conversation: the first message
        (with the context before it) chat-templated, then each response's sampled ids and the
        tokens of the next user turn.
        """
        if contexts is not None and len(contexts) != len(prompts):
            raise ValueError(f"got {len(contexts)} contexts for {len(prompts)} prompts")
        result = []
        for index, prompt in enumerate(prompts):
            context = None if contexts is None else contexts[index]
            first, turns = parse_conversation_text(prompt)
            ids = self._first_prompt_ids(first if not context else f"{context}{self.context_separator}{first}")
            for turn in turns:
                ids += turn.response_ids + self.next_turn_ids(turn.response_ids, turn.user_message)
            result.append(ids)
        return result

    def _first_prompt_ids(self, content: str) -> list[int]:
        messages = [{"role": "user", "content": content}]
        if self.system_prompt is not None:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        ids: Any = self.tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=True, enable_thinking=self.enable_thinking
        )
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return [int(token) for token in ids] + self._prefix_ids

    def next_turn_ids(self, response_ids: Sequence[int], user_message: str) -> list[int]:
        """The tokens a conversation adds after a response: close it, the user message, open the next reply."""
        if self._chat_frame is None:
            self._chat_frame = ChatFrame.from_tokenizer(
                self.tokenizer, system_prompt=self.system_prompt, enable_thinking=self.enable_thinking
            )
        closed_by = ""
        if response_ids and int(response_ids[-1]) in self.eos_token_ids:
            closed_by = str(self.tokenizer.decode([int(response_ids[-1])], skip_special_tokens=False))
        text = self._chat_frame.next_turn_text(user_message, closed_by=closed_by)
        return [int(t) for t in self.tokenizer.encode(text, add_special_tokens=False)] + self._prefix_ids

    # -- sampling -----------------------------------------------------------------------
    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int | None = None,
        greedy: bool = False,
        stop: Sequence[str] | None = None,
    ) -> list[Generation]:
        """Samples one response per prompt, all prompts in one batch.

        Args:
            prompts: User messages (the chat template is applied here).
            max_new_tokens: Overrides the policy's limit.
            greedy: Take the most likely token instead of sampling.
            stop: Overrides the policy's stop strings.
        """
        if not prompts:
            return []
        prompt_ids = self.prompt_ids(prompts)
        limit = self.max_new_tokens if max_new_tokens is None else int(max_new_tokens)
        stops = self.stop if stop is None else tuple(stop)
        recorder = self.trunk_recorder()
        with recorder if recorder is not None else contextlib.nullcontext():
            logits = self.prefill(self.decoder, prompt_ids, limit, recorder)
            responses, logprobs, reasons = self.sample(self.decoder, logits, limit, greedy, stops)
        hiddens: list[torch.Tensor | None] = [None] * len(prompts)
        if recorder is not None:
            lengths = [len(p) + len(r) - 1 for p, r in zip(prompt_ids, responses, strict=True)]
            hiddens = list(recorder.rows(self.decoder.attention_mask, lengths))
        generations = []
        for prompt, ids, response, token_logprobs, reason, kept in zip(
            prompts, prompt_ids, responses, logprobs, reasons, hiddens, strict=True
        ):
            text, offsets = self.text_with_offsets(response)
            generations.append(Generation(prompt, ids, response, text, token_logprobs, offsets, reason, kept))
        return generations

    def conversations(self) -> ConversationRollout:
        """A multi-turn sampler: one growing chat per member over one KV cache (see :mod:`agents.policy.conversation`)."""
        return ConversationRollout(self)

    def trunk_recorder(self) -> TrunkRecorder | None:
        """A recorder on the first adapted layer inside :meth:`keeping_trunk_hiddens`, else None."""
        if not self._keep_trunk_hiddens or self.trunk_layer is None:
            return None
        decoder, _ = decoder_and_head(self.model)
        return TrunkRecorder(decoder.layers[self.trunk_layer])

    def prefill(
        self, decoder: Decoder, prompt_ids: list[list[int]], limit: int, recorder: TrunkRecorder | None = None
    ) -> torch.Tensor:
        """Prefills left-padded prompts, each distinct one once (see ``share_prompts``); ``[B, V]`` first logits."""
        distinct: dict[tuple[int, ...], int] = {}
        if self.share_prompts and decoder.selects_rows:
            inverse = [distinct.setdefault(tuple(ids), len(distinct)) for ids in prompt_ids]
            rows = [list(ids) for ids in distinct]
        else:
            inverse, rows = list(range(len(prompt_ids))), prompt_ids
        input_ids, attention_mask = _left_pad(rows, self.pad_token_id, self.device)
        logits = decoder.prefill(input_ids, attention_mask, limit)
        self.keep_prompt_kv(rows, decoder.cache, width=input_ids.shape[1])
        if len(rows) < len(prompt_ids):
            index = torch.tensor(inverse, dtype=torch.long, device=self.device)
            decoder.select_rows(index)
            if recorder is not None:
                recorder.select_rows(index)
            logits = logits[index]
        return logits

    def sample(
        self, decoder: Decoder, logits: torch.Tensor, limit: int, greedy: bool, stops: tuple[str, ...]
    ) -> tuple[list[list[int]], list[list[float]], list[str]]:
        """The sampling loop from the first logits: each row's tokens, their log-probs and why it ended.

        A row's last token is never fed (nothing reads its output), so the decoder ends holding
        every prompt token and every response token but the last, per row.
        """
        batch = logits.shape[0]
        responses: list[list[int]] = [[] for _ in range(batch)]
        logprobs: list[list[float]] = [[] for _ in range(batch)]
        reasons = ["length"] * batch
        active = torch.ones(batch, dtype=torch.bool, device=self.device)
        eos = torch.tensor(sorted(self.eos_token_ids), device=self.device)
        stop_window = max((len(self.tokenizer.encode(s, add_special_tokens=False)) for s in stops), default=0) + 2
        for index in range(limit):
            scaled = logits.float() / self.temperature
            log_probs = torch.log_softmax(scaled, dim=-1)
            if greedy:
                tokens = scaled.argmax(dim=-1)
            else:
                tokens = _sample_top_p(log_probs.exp(), self.top_p, self.generator)
            token_logprobs = log_probs.gather(-1, tokens[:, None]).squeeze(-1)
            tokens = torch.where(active, tokens, torch.full_like(tokens, self.pad_token_id))
            hit_eos = torch.isin(tokens, eos) & active
            tokens_list, logprob_list = tokens.tolist(), token_logprobs.tolist()
            for row in active.nonzero().flatten().tolist():
                responses[row].append(tokens_list[row])
                logprobs[row].append(logprob_list[row])
                if hit_eos[row]:
                    reasons[row] = "eos"
                elif stops:
                    tail = self.tokenizer.decode(responses[row][-stop_window:], skip_special_tokens=True)
                    if any(s in tail for s in stops):
                        reasons[row] = "stop"
            active &= torch.tensor([reason == "length" for reason in reasons], device=self.device)
            if not bool(active.any()) or index == limit - 1:
                break
            logits = decoder.step(tokens, active)
        return responses, logprobs, reasons

    @contextlib.contextmanager
    def keeping_prompt_caches(self, enabled: bool = True) -> Iterator[PromptCacheStore]:
        """Within this block, :meth:`generate` keeps every prompt's KV in :attr:`prompt_caches`."""
        previous, self._keep_prompt_caches = self._keep_prompt_caches, enabled
        try:
            yield self.prompt_caches
        finally:
            self._keep_prompt_caches = previous

    @contextlib.contextmanager
    def keeping_trunk_hiddens(self, enabled: bool = True) -> Iterator[None]:
        """Within this block every :class:`Generation` carries its ``trunk_hiddens`` (see :mod:`agents.policy.trunk`).

        Raises:
            ValueError: when the policy has no frozen trunk (LoRA on the top layers only).
        """
        if enabled and self.trunk_layer is None:
            raise ValueError("keeping trunk hidden states needs LoRA on the top layers only (lora.top_layers)")
        previous, self._keep_trunk_hiddens = self._keep_trunk_hiddens, enabled
        try:
            yield
        finally:
            self._keep_trunk_hiddens = previous

    def keep_prompt_kv(
        self, prompt_ids: list[list[int]], cache: Any, *, width: int | None = None, mask: torch.Tensor | None = None
    ) -> None:
        """Inside :meth:`keeping_prompt_caches`, keeps the prompts' KV just fed (see ``PromptCacheStore.keep``)."""
        if self._keep_prompt_caches:
            self.prompt_caches.keep(prompt_ids, cache, width, mask=mask)

    def clear_prompt_caches(self) -> None:
        """Frees the KV kept inside :meth:`keeping_prompt_caches`."""
        self.prompt_caches.clear()

    @torch.no_grad()
    def cache_prompts(self, prompts: Sequence[str]) -> None:
        """Runs and keeps the prompts' KV as a rollout would (for batches not made by :meth:`generate`)."""
        prompt_ids = self.prompt_ids(prompts)
        input_ids, attention_mask = _left_pad(prompt_ids, self.pad_token_id, self.device)
        self.decoder.prefill(input_ids, attention_mask, 1)
        self.prompt_caches.keep(prompt_ids, self.decoder.cache, input_ids.shape[1])

    def text_with_offsets(self, response_ids: list[int]) -> tuple[str, list[tuple[int, int]]]:
        """The response prefix plus the decoded text, and each token's character range in it."""
        prefix = self.response_prefix
        text = str(self.tokenizer.decode(response_ids, skip_special_tokens=True))
        offsets, previous = [], 0
        for index in range(1, len(response_ids) + 1):
            length = len(self.tokenizer.decode(response_ids[:index], skip_special_tokens=True))
            length = max(previous, min(length, len(text)))
            offsets.append((len(prefix) + previous, len(prefix) + length))
            previous = length
        return prefix + text, offsets

    # -- scoring ------------------------------------------------------------------------
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
        model = self.model if model is None else model
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

    def trunk_applies(self, model: torch.nn.Module | None = None) -> bool:
        """Whether kept trunk states hold for ``model``: the policy's own (adapter on or off), with a frozen trunk."""
        return self.trunk_layer is not None and (model is None or model is self.model)

    def sequence_logprobs(
        self,
        sequences: Sequence[Sequence[int]],
        spans: Sequence[Sequence[Span]],
        *,
        trunk_hiddens: Sequence[torch.Tensor] | None = None,
        model: torch.nn.Module | None = None,
    ) -> list[list[torch.Tensor]]:
        """Per sequence, per ``[start, end)`` span, the teacher-forced log-probs of its tokens, in one pass.

        Every turn of a conversation is scored in one forward this way (its sequence is the
        last turn's prompt and response; a span per turn's response). With ``trunk_hiddens``
        (per sequence, kept states of at least its tokens before the last scored one) and a
        model they hold for (:meth:`trunk_applies`), only the top layers run; otherwise the
        whole model does. Gradients flow when grad is enabled (see :mod:`agents.policy.spans`).
        """
        model = self.model if model is None else model
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
            first_layer=self.trunk_layer if use_trunk else None,
        )

    @torch.no_grad()
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
        if isinstance(responses, torch.Tensor):
            response_ids = responses.long()
            mask = torch.ones_like(response_ids) if response_mask is None else response_mask.long()
        else:
            response_ids, mask = _right_pad([list(r) for r in responses], self.pad_token_id, self.device)
        prompt_rows = self.prompt_ids(prompts, contexts)
        if reuse_from is None:
            response_rows = [ids[row_mask.bool()].tolist() for ids, row_mask in zip(response_ids, mask, strict=True)]
            chains = prefix_chains(prompt_rows, response_rows)
            if any(len(chain) > 1 for chain in chains):  # a conversation's turns: one pass per chain
                return self._score_chains(chains, prompt_rows, response_rows, response_ids.shape[1], reference)
        reused: list[tuple[int, list[Any]]] = [(0, [])] * len(prompts)
        if reuse_from is not None:
            if len(reuse_from) != len(prompts):
                raise ValueError(f"got {len(reuse_from)} reuse_from prompts for {len(prompts)} prompts")
            if reference:
                raise ValueError("reuse_from reuses the policy's own KV; it cannot score with the reference model")
            reused = [
                self.prompt_caches.longest_prefix(row, kept)
                for row, kept in zip(prompt_rows, self.prompt_ids(reuse_from), strict=True)
            ]
            prompt_rows = [row[length:] for row, (length, _) in zip(prompt_rows, reused, strict=True)]
        # Rows of similar length share a forward pass, so little compute goes to padding.
        lengths = torch.tensor([len(p) for p in prompt_rows]) + mask.sum(dim=1).cpu()
        order = torch.argsort(lengths, descending=True, stable=True)
        prompt_ids, prompt_mask = _left_pad([prompt_rows[i] for i in order.tolist()], self.pad_token_id, self.device)
        order_on_device = order.to(response_ids.device)
        response_ids, mask = response_ids[order_on_device], mask[order_on_device]
        reused = [reused[i] for i in order.tolist()]
        pieces = []
        with self.reference_model() if reference else contextlib.nullcontext(self.model) as model:
            for start in range(0, len(prompts), self.score_batch_size):
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

    def _score_chains(
        self,
        chains: list[list[int]],
        prompt_rows: list[list[int]],
        response_rows: list[list[int]],
        width: int,
        reference: bool,
    ) -> torch.Tensor:
        """``score`` over prefix chains: each chain's longest row is fed once and every row reads its span."""
        result = torch.zeros(len(prompt_rows), width, dtype=torch.float32, device=self.device)
        with self.reference_model() if reference else contextlib.nullcontext(self.model) as model:
            for start in range(0, len(chains), self.score_batch_size):
                batch = chains[start : start + self.score_batch_size]
                sequences = [prompt_rows[chain[0]] + response_rows[chain[0]] for chain in batch]
                spans = [
                    [(len(prompt_rows[row]), len(prompt_rows[row]) + len(response_rows[row])) for row in chain]
                    for chain in batch
                ]
                scored = self.sequence_logprobs(sequences, spans, model=model)
                for chain, pieces in zip(batch, scored, strict=True):
                    for row, piece in zip(chain, pieces, strict=True):
                        result[row, : len(piece)] = piece
        return result

    @contextlib.contextmanager
    def reference_model(self) -> Iterator[torch.nn.Module]:
        """The frozen reference: the base model with the adapter off, or the frozen copy."""
        if self.lora is not None:
            with self.model.disable_adapter():
                yield self.model
        elif self._reference_copy is not None:
            yield self._reference_copy
        else:
            raise RuntimeError("this policy keeps no reference model; build it with reference=True or lora=...")

    # -- parameters and state -----------------------------------------------------------
    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters the optimizer updates (adapter only with LoRA)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def trainable_state_dict(self) -> dict[str, torch.Tensor]:
        """The trainable weights by name (what a checkpoint must restore)."""
        return {name: p.detach().clone() for name, p in self.model.named_parameters() if p.requires_grad}

    def load_trainable_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restores :meth:`trainable_state_dict` output.

        Raises:
            KeyError: naming missing or unexpected weights.
        """
        params = dict(self.model.named_parameters())
        expected = {name for name, p in params.items() if p.requires_grad}
        if set(state) != expected:
            missing, extra = sorted(expected - set(state))[:3], sorted(set(state) - expected)[:3]
            raise KeyError(f"checkpoint weights do not match the model (missing {missing}, unexpected {extra})")
        with torch.no_grad():
            for name, tensor in state.items():
                params[name].copy_(tensor)

    def save_pretrained(self, folder: str | os.PathLike[str]) -> None:
        """Saves the model (or the adapter) and the tokenizer in Hugging Face format."""
        self.model.save_pretrained(str(folder))
        self.tokenizer.save_pretrained(str(folder))


def _eos_ids(tokenizer, model) -> set[int]:
    ids = set()
    for source in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(source, int):
            ids.add(source)
        elif source is not None:
            ids.update(int(i) for i in source)
    return ids


def _left_pad(rows: list[list[int]], pad: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row) :] = torch.tensor(row)
            mask[i, width - len(row) :] = 1
    return ids.to(device), mask.to(device)


def _right_pad(rows: list[list[int]], pad: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids.to(device), mask.to(device)


def _sample_top_p(probs: torch.Tensor, top_p: float, generator: torch.Generator) -> torch.Tensor:
    """Samples from the smallest set of tokens whose probability reaches ``top_p``."""
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs
        sorted_probs = sorted_probs.masked_fill(before >= top_p, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
