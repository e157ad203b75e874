"""Batched sampling with our own KV-cached decode loop: decode settings, stop strings, per-token log-probs.

The loop draws every token from ``softmax(logits / T)`` (top-p truncated when ``top_p < 1``) and
records the log-prob of the *untruncated* temperature-scaled distribution, from the very logits
the token was drawn from (as TRL and verl do), so a teacher-forced score of the response
(:mod:`agents.policy.scorer`) agrees with it to float precision. A decoder
(:mod:`agents.policy.decoding`) gives the next-token logits over a growing or a static cache;
prompts are left-padded, each distinct one prefilled once when the cache can repeat rows
(``share_prompts``), in passes of rows of similar length (``prefill_rows``). A row ends at an
eos id, when its decoded tail holds a stop string, or at the token limit. What the rollout
keeps for later passes goes to :mod:`agents.policy.caches`. With a
:class:`~agents.policy.speculation.PromptLookup` (growing caches only) the loop feeds a draft
copied from the context with each token and keeps what the model itself would have produced
(:mod:`agents.policy.speculation`: same greedy tokens, same sampling distribution).

Example:
    >>> SamplingSettings(temperature=0.0)
    Traceback (most recent call last):
    ...
    ValueError: SamplingSettings.temperature must be a finite number > 0, got 0.0
    >>> sample_top_p(torch.tensor([[0.5, 0.3, 0.2]]), 0.5, torch.Generator().manual_seed(0)).tolist()
    [0]
"""

from __future__ import annotations

import contextlib
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import torch

from agentenvs.core.checks import Bounds, Checked, check_value
from agents.policy.caches import RolloutCaches
from agents.policy.codec import ChatCodec
from agents.policy.decoding import Decoder, DecodeSettings, DynamicDecoder, length_passes, make_decoder
from agents.policy.generation import Generation
from agents.policy.logprobs import Temperature
from agents.policy.padding import left_pad
from agents.policy.prompt_cache import common_start_length
from agents.policy.speculation import PromptLookup, verify_drafts
from agents.policy.trunk import TrunkRecorder

TopP = Annotated[float, Bounds(0, 1, min_inclusive=False)]
"""A nucleus-sampling threshold in (0, 1]."""


@dataclass(frozen=True)
class SamplingSettings:
    """What a sample is drawn from and when it ends (the numbers checked from their annotations;
    ``stop`` is any sequence of strings, ``"\\n"`` included).

    Attributes:
        temperature: Sampling temperature (log-probs are of ``softmax(logits / T)``).
        top_p: Nucleus sampling threshold.
        max_new_tokens: Longest response.
        stop: Strings that end a response (kept in it).
    """

    temperature: Temperature = 1.0
    top_p: TopP = 1.0
    max_new_tokens: Annotated[int, Bounds(1)] = 128
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for name in ("temperature", "top_p", "max_new_tokens"):
            annotation = typing.get_type_hints(type(self), include_extras=True)[name]
            object.__setattr__(self, name, check_value(owner, name, getattr(self, name), annotation))
        object.__setattr__(self, "stop", tuple(self.stop))


def sample_top_p(probs: torch.Tensor, top_p: float, generator: torch.Generator) -> torch.Tensor:
    """Samples from the smallest set of tokens whose probability reaches ``top_p``."""
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs
        sorted_probs = sorted_probs.masked_fill(before >= top_p, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def shared_prefix_length(rows: Sequence[Sequence[int]], minimum: int) -> int:
    """How many leading tokens all ``rows`` share, leaving each at least one of its own; 0 when
    that is under ``minimum``, ``minimum`` is 0, or there are fewer than two rows.

    >>> shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3]], minimum=2)
    2
    >>> shared_prefix_length([[1, 2, 3, 4], [1, 2, 9]], minimum=3)
    0
    """
    if minimum == 0 or len(rows) < 2:
        return 0
    length = min(common_start_length(rows), min(len(row) for row in rows) - 1)
    return length if length >= minimum else 0


@dataclass(frozen=True)
class PrefillSettings(Checked):
    """How the sampling loop feeds a batch's prompts: levers of speed only (the same tokens and
    log-probs, up to float rounding, whichever are chosen), checked from the annotations.

    Attributes:
        share_prompts: Prefill each distinct prompt of a batch once and copy its cache to the
            rows that share it (a group's members share their first prompt), and feed it once in
            the trainer's update too. The prefill part needs a growing cache (a static one keeps its rows).
        prefill_rows: Prefill at most this many prompts a pass, grouped by length, and join their
            caches, so short prompts compute little padding beside long ones (growing caches of
            full-attention models; 0: one pass). On 2 CPU cores passes of 4 were the fastest (an
            evaluation's 32 prompts: 0.53x one pass's time, 0.59x in passes of 2, 0.62x of 8).
        shared_prefix: Prefill the start that every prompt of a batch shares once when it is at
            least this many tokens (0: never): each row's cache and mask then begin with those
            columns, its own tokens left-padded after them. On the quick start's WebShop turns that
            is the chat template's system turn and the env's fixed text, ~30 of ~250 tokens.
        prompt_lookup_num_tokens: Draft tokens per decoding step copied from the context
            (:mod:`agents.policy.speculation`; 0: off). Needs a growing cache.
    """

    share_prompts: bool = True
    prefill_rows: Annotated[int, Bounds(0)] = 4
    shared_prefix: Annotated[int, Bounds(0)] = 16
    prompt_lookup_num_tokens: Annotated[int, Bounds(0)] = 0


class Sampler:
    """Samples responses to prompts, a batch at a time (see the module docstring).

    Args:
        model: The causal LM (a peft model works too).
        codec: Renders prompts to ids and responses to text.
        caches: What the rollout keeps (prompt KV, trunk states) while switched on.
        settings: Temperature, top-p, the token limit and stop strings.
        decode: Which decoder to build (:class:`~agents.policy.decoding.DecodeSettings`).
        prefill: How prompts are fed (:class:`PrefillSettings`).
        seed: Seeds :attr:`generator`.
        device: Where the model runs.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        codec: ChatCodec,
        caches: RolloutCaches,
        settings: SamplingSettings,
        *,
        decode: DecodeSettings | None = None,
        prefill: PrefillSettings | None = None,
        seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        self.model = model
        self.codec = codec
        self.caches = caches
        self.settings = settings
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device)
        """The sampling generator (checkpointed and reseeded by the trainer)."""
        self.generator.manual_seed(seed)
        self.decoder: Decoder = make_decoder(model, decode)
        prefill = prefill or PrefillSettings()
        lookup = prefill.prompt_lookup_num_tokens
        if lookup and not isinstance(self.decoder, DynamicDecoder):
            raise ValueError("prompt lookup needs decode='dynamic' (drafts rejected in a step stay as masked columns)")
        # The levers stay plain attributes: benchmarks and tests switch them on a built sampler.
        self.share_prompts = prefill.share_prompts
        self.prefill_rows = prefill.prefill_rows
        self.shared_prefix = prefill.shared_prefix
        self.prompt_lookup = PromptLookup(lookup) if lookup else None

    def limits(self, max_new_tokens: int | None, stop: Sequence[str] | None) -> tuple[int, tuple[str, ...]]:
        """A call's token limit and stop strings: its overrides, else the settings'."""
        limit = self.settings.max_new_tokens if max_new_tokens is None else int(max_new_tokens)
        return limit, self.settings.stop if stop is None else tuple(stop)

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
            max_new_tokens: Overrides the settings' limit.
            greedy: Take the most likely token instead of sampling.
            stop: Overrides the settings' stop strings.
        """
        if not prompts:
            return []
        prompt_ids = self.codec.prompt_ids(prompts)
        limit, stops = self.limits(max_new_tokens, stop)
        recorder = self.caches.trunk_recorder(self.model)
        with recorder if recorder is not None else contextlib.nullcontext():
            logits = self.prefill(self.decoder, prompt_ids, limit, recorder)
            responses, logprobs, reasons = self.sample(self.decoder, logits, limit, greedy, stops, contexts=prompt_ids)
        hiddens: list[torch.Tensor | None] = [None] * len(prompts)
        if recorder is not None:
            lengths = [len(p) + len(r) - 1 for p, r in zip(prompt_ids, responses, strict=True)]
            hiddens = list(recorder.rows(self.decoder.attention_mask, lengths))
        generations = []
        for prompt, ids, response, token_logprobs, reason, kept in zip(
            prompts, prompt_ids, responses, logprobs, reasons, hiddens, strict=True
        ):
            text, offsets = self.codec.text_with_offsets(response)
            generations.append(Generation(prompt, ids, response, text, token_logprobs, offsets, reason, kept))
        return generations

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
        shared = shared_prefix_length(rows, self.shared_prefix) if decoder.joins_passes else 0
        input_ids, attention_mask = left_pad([ids[shared:] for ids in rows], self.codec.pad_token_id, self.device)
        passes = length_passes(attention_mask, self.prefill_rows) if decoder.joins_passes else []
        if shared and not passes:
            passes = [torch.arange(len(rows))]
        logits = decoder.prefill(input_ids, attention_mask, limit, passes, prefix=rows[0][:shared])
        if passes and recorder is not None:
            recorder.join_passes(passes, decoder.attention_mask, shared)
        self.caches.keep_prompt_kv(rows, decoder.cache, mask=decoder.attention_mask)
        if len(rows) < len(prompt_ids):
            index = torch.tensor(inverse, dtype=torch.long, device=self.device)
            decoder.select_rows(index)
            if recorder is not None:
                recorder.select_rows(index)
            logits = logits[index]
        return logits

    def sample(
        self,
        decoder: Decoder,
        logits: torch.Tensor,
        limit: int,
        greedy: bool,
        stops: tuple[str, ...],
        *,
        contexts: Sequence[Sequence[int]] | None = None,
    ) -> tuple[list[list[int]], list[list[float]], list[str]]:
        """The sampling loop from the first logits: each row's tokens, their log-probs and why it ended.

        A row's last token is never fed (nothing reads its output), so the decoder ends holding
        every prompt token and every response token but the last, per row. ``contexts`` (each
        row's tokens before its response) turn on :attr:`prompt_lookup`'s drafts.
        """
        if self.prompt_lookup is not None and contexts is not None and isinstance(decoder, DynamicDecoder):
            return self._sample_with_drafts(decoder, logits, limit, greedy, stops, contexts, self.prompt_lookup)
        batch = logits.shape[0]
        responses: list[list[int]] = [[] for _ in range(batch)]
        logprobs: list[list[float]] = [[] for _ in range(batch)]
        reasons = ["length"] * batch
        active = torch.ones(batch, dtype=torch.bool, device=self.device)
        eos = torch.tensor(sorted(self.codec.eos_token_ids), device=self.device)
        stop_window = self.codec.stop_window(stops)
        pad_token_id = self.codec.pad_token_id
        for index in range(limit):
            scaled = logits.float() / self.settings.temperature
            log_probs = torch.log_softmax(scaled, dim=-1)
            if greedy:
                tokens = scaled.argmax(dim=-1)
            else:
                tokens = sample_top_p(log_probs.exp(), self.settings.top_p, self.generator)
            token_logprobs = log_probs.gather(-1, tokens[:, None]).squeeze(-1)
            tokens = torch.where(active, tokens, torch.full_like(tokens, pad_token_id))
            hit_eos = torch.isin(tokens, eos) & active
            tokens_list, logprob_list = tokens.tolist(), token_logprobs.tolist()
            for row in active.nonzero().flatten().tolist():
                responses[row].append(tokens_list[row])
                logprobs[row].append(logprob_list[row])
                if hit_eos[row]:
                    reasons[row] = "eos"
                elif stops and self.codec.ends_with_stop(responses[row], stops, stop_window):
                    reasons[row] = "stop"
            active &= torch.tensor([reason == "length" for reason in reasons], device=self.device)
            if not bool(active.any()) or index == limit - 1:
                break
            logits = decoder.step(tokens, active)
        return responses, logprobs, reasons

    def _sample_with_drafts(
        self,
        decoder: DynamicDecoder,
        logits: torch.Tensor,
        limit: int,
        greedy: bool,
        stops: tuple[str, ...],
        contexts: Sequence[Sequence[int]],
        lookup: PromptLookup,
    ) -> tuple[list[list[int]], list[list[float]], list[str]]:
        """:meth:`sample` with prompt-lookup drafts (:mod:`agents.policy.speculation`).

        Each step feeds every running row's pending token and its draft (right-padded, padding
        masked) in one forward pass, keeps the accepted prefix and one more token, and masks
        out the columns of rejected draft tokens and of a row's last token.
        """
        batch = logits.shape[0]
        responses: list[list[int]] = [[] for _ in range(batch)]
        logprobs: list[list[float]] = [[] for _ in range(batch)]
        reasons = ["length"] * batch
        running = [True] * batch
        eos = set(self.codec.eos_token_ids)
        stop_window = self.codec.stop_window(stops)
        pad_token_id = self.codec.pad_token_id

        def emit(row: int, token: int, logprob: float) -> bool:
            """Appends a token; whether the row goes on."""
            responses[row].append(token)
            logprobs[row].append(logprob)
            if token in eos:
                reasons[row] = "eos"
            elif stops and self.codec.ends_with_stop(responses[row], stops, stop_window):
                reasons[row] = "stop"
            running[row] = reasons[row] == "length" and len(responses[row]) < limit
            return running[row]

        log_probs = torch.log_softmax(logits.float() / self.settings.temperature, dim=-1)
        first = (
            log_probs.argmax(dim=-1) if greedy else sample_top_p(log_probs.exp(), self.settings.top_p, self.generator)
        )
        first_logprobs = log_probs.gather(-1, first[:, None]).squeeze(-1).tolist()
        for row, token in enumerate(first.tolist()):
            emit(row, token, first_logprobs[row])
        while any(running):
            rows = [row for row in range(batch) if running[row]]
            drafts = {
                row: lookup.draft([*contexts[row], *responses[row]], limit - len(responses[row]) - 1) for row in rows
            }
            width = 1 + max(len(d) for d in drafts.values())
            chunk = torch.full((batch, width), pad_token_id, dtype=torch.long)
            mask = torch.zeros((batch, width), dtype=torch.long)
            draft_tokens = torch.full((batch, width - 1), -1, dtype=torch.long)
            for row in rows:
                pending_and_draft = [responses[row][-1], *drafts[row]]
                chunk[row, : len(pending_and_draft)] = torch.tensor(pending_and_draft)
                mask[row, : len(pending_and_draft)] = 1
                draft_tokens[row, : len(drafts[row])] = torch.tensor(drafts[row], dtype=torch.long)
            chunk_logits = decoder.feed(chunk.to(self.device), mask.to(self.device), logits_to_keep=width)
            log_probs = torch.log_softmax(chunk_logits.float() / self.settings.temperature, dim=-1)
            kept, following = verify_drafts(
                log_probs,
                draft_tokens.to(self.device),
                greedy=greedy,
                top_p=self.settings.top_p,
                generator=self.generator,
            )
            # Each draft token's log-prob at its own position, and the following token's at position `kept`.
            draft_logprobs = log_probs[:, :-1].gather(-1, draft_tokens.clamp(min=0).to(self.device)[..., None])
            following_logprobs = log_probs[torch.arange(batch, device=self.device), kept, following]
            kept_list, following_list = kept.tolist(), following.tolist()
            draft_list, following_logprob_list = draft_logprobs.squeeze(-1).tolist(), following_logprobs.tolist()
            keep = torch.zeros((batch, width), dtype=torch.long)
            for row in rows:
                accepted = kept_list[row]
                emitted = zip(
                    [*drafts[row][:accepted], following_list[row]],
                    [*draft_list[row][:accepted], following_logprob_list[row]],
                    strict=True,
                )
                fed = 1  # the pending token stays; an accepted draft token stays unless it ends the row
                for token, logprob in emitted:
                    if not emit(row, token, logprob):
                        break
                    fed += 1
                keep[row, : min(fed, 1 + accepted)] = 1
            decoder.forget(keep.to(self.device))
        return responses, logprobs, reasons

    @torch.no_grad()
    def cache_prompts(self, prompt_ids: list[list[int]]) -> None:
        """Runs and keeps the prompts' KV as a rollout would (for batches this sampler did not make)."""
        input_ids, attention_mask = left_pad(prompt_ids, self.codec.pad_token_id, self.device)
        self.decoder.prefill(input_ids, attention_mask, 1)
        self.caches.prompts.keep(prompt_ids, self.decoder.cache, input_ids.shape[1])
