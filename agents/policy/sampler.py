"""Batched sampling with our own KV-cached decode loop: decode settings, stop strings, per-token log-probs.

The loop draws every token from ``softmax(logits / T)`` (top-p truncated when ``top_p < 1``) and
records the log-prob of the *untruncated* temperature-scaled distribution, from the very logits
the token was drawn from (as TRL and verl do), so a teacher-forced score of the response
(:mod:`agents.policy.scorer`) agrees with it to float precision. A decoder
(:mod:`agents.policy.decoding`) gives the next-token logits over a growing or a static cache;
prompts are left-padded, each distinct one prefilled once when the cache can repeat rows
(``share_prompts``). A row ends at an eos id, when its decoded tail holds a stop string, or at
the token limit. What the rollout keeps for later passes goes to :mod:`agents.policy.caches`.

Example:
    >>> SamplingSettings(temperature=0.0)
    Traceback (most recent call last):
    ...
    ValueError: temperature must be > 0, got 0.0
    >>> sample_top_p(torch.tensor([[0.5, 0.3, 0.2]]), 0.5, torch.Generator().manual_seed(0)).tolist()
    [0]
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from agents.policy.caches import RolloutCaches
from agents.policy.codec import ChatCodec
from agents.policy.decoding import Decoder, DecodeSettings, make_decoder
from agents.policy.generation import Generation
from agents.policy.padding import left_pad
from agents.policy.trunk import TrunkRecorder


@dataclass(frozen=True)
class SamplingSettings:
    """What a sample is drawn from and when it ends; checked once, here.

    Attributes:
        temperature: Sampling temperature (log-probs are of ``softmax(logits / T)``).
        top_p: Nucleus sampling threshold.
        max_new_tokens: Longest response.
        stop: Strings that end a response (kept in it).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 128
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        object.__setattr__(self, "temperature", float(self.temperature))
        object.__setattr__(self, "top_p", float(self.top_p))
        object.__setattr__(self, "max_new_tokens", int(self.max_new_tokens))
        object.__setattr__(self, "stop", tuple(self.stop))


def sample_top_p(probs: torch.Tensor, top_p: float, generator: torch.Generator) -> torch.Tensor:
    """Samples from the smallest set of tokens whose probability reaches ``top_p``."""
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs
        sorted_probs = sorted_probs.masked_fill(before >= top_p, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


class Sampler:
    """Samples responses to prompts, a batch at a time (see the module docstring).

    Args:
        model: The causal LM (a peft model works too).
        codec: Renders prompts to ids and responses to text.
        caches: What the rollout keeps (prompt KV, trunk states) while switched on.
        settings: Temperature, top-p, the token limit and stop strings.
        decode: Which decoder to build (:class:`~agents.policy.decoding.DecodeSettings`).
        share_prompts: Prefill each distinct prompt of a batch once (growing caches only).
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
        share_prompts: bool = True,
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
        self.share_prompts = bool(share_prompts)

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
            responses, logprobs, reasons = self.sample(self.decoder, logits, limit, greedy, stops)
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
        input_ids, attention_mask = left_pad(rows, self.codec.pad_token_id, self.device)
        logits = decoder.prefill(input_ids, attention_mask, limit)
        self.caches.keep_prompt_kv(rows, decoder.cache, width=input_ids.shape[1])
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

    @torch.no_grad()
    def cache_prompts(self, prompt_ids: list[list[int]]) -> None:
        """Runs and keeps the prompts' KV as a rollout would (for batches this sampler did not make)."""
        input_ids, attention_mask = left_pad(prompt_ids, self.codec.pad_token_id, self.device)
        self.decoder.prefill(input_ids, attention_mask, 1)
        self.caches.prompts.keep(prompt_ids, self.decoder.cache, input_ids.shape[1])
