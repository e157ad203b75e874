"""The PI pass inside TRL: teacher-forced log-probs with the model TRL trains, without gradients.

ORSD and TASPO call ``context.score(prompts, responses, ...)`` (the
:class:`~agents.policy.protocol.Policy` method) with each row's prompt *text*, PI inserted or
not. In TRL a row's prompt text is the content of the message its turn answers
(:mod:`agents.integrations.trl.episodes`), so :class:`TRLScorer` maps it back to tokens: the
row's exact context when the text is unchanged, else the tokens before that message plus the
message re-rendered with the new content by TRL's own chat template (for the prompt) or tool
rendering (for a tool result), so PI lands where it would in a prompt TRL built. Rows are
recognised by their original text (``reuse_from``, which the rules pass with
``reuse_prompt_cache``) and their response, or its start (TASPO scores a turn up to its action's
end); text that is no row (a verifier's or analyzer's prompt) is rendered as one user message.
Two turns with the same message text and the same response but different histories are one row
to the rules (their PI dedup keys on text), as per-turn prompts are in our trainer.

Each process scores only its own rows: a row of another process (gathered so the rules see the
whole group) gets log-probs 0 and costs nothing; its advantages are that process's to compute.
The forward is :func:`agents.policy.spans.span_logprobs`, the one our trainer's policy uses, on
the unwrapped model (PEFT adapter on; ``reference=True`` turns it off, or uses TRL's frozen
reference model).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from agents.integrations.trl.episodes import RowContext
from agents.policy.padding import right_pad
from agents.policy.spans import span_logprobs

RowKey = tuple[str, tuple[int, ...]]
"""A row's prompt text and response tokens."""


@dataclass
class TextGeneration:
    """One sampled text (what rules read of :meth:`TRLScorer.generate`)."""

    prompt: str
    text: str


class TRLScorer:
    """The part of our :class:`~agents.policy.protocol.Policy` that credit rules call, on TRL's model.

    Args:
        model: The unwrapped model TRL trains.
        tokenizer: Its tokenizer.
        rows: This process's rows: key -> (original text, context).
        remote: Keys of rows other processes score.
        render_user: A lone user message with the generation header, as tokens.
        temperature: Divides the logits (TRL's ``temperature``, as its log-probs do).
        batch_size: Sequences per forward pass.
        reference: The frozen reference model as a context manager, or None where there is none.
        seed: Seeds :meth:`generate`'s sampling (equal on every process, so they agree).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        *,
        rows: Mapping[RowKey, RowContext],
        remote: set[RowKey],
        render_user: Callable[[str], list[int]],
        temperature: float = 1.0,
        batch_size: int = 8,
        reference: Callable[[], contextlib.AbstractContextManager[torch.nn.Module]] | None = None,
        seed: int = 0,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.rows = dict(rows)
        self.remote = remote
        self.render_user = render_user
        self.temperature = float(temperature)
        self.batch_size = int(batch_size)
        self.reference = reference
        self.has_reference = reference is not None
        self.seed = int(seed)
        self.device = next(model.parameters()).device
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_token_id = int(pad)
        self.generator = torch.Generator().manual_seed(self.seed)

    def context_ids(self, prompt: str, response: tuple[int, ...], original: str | None) -> list[int] | None:
        """The tokens before ``response`` for ``prompt`` (None: another process's row).

        A row is found by its original text and a response that starts with ``response`` (TASPO
        scores a turn only up to its action's end); this process's rows first.
        """
        text = prompt if original is None else original
        context = self.rows.get((text, response))
        if context is None:
            context = next((c for (t, r), c in self.rows.items() if t == text and r[: len(response)] == response), None)
        if context is not None:
            return context.with_content(prompt, text)
        if any(t == text and r[: len(response)] == response for t, r in self.remote):
            return None
        return self.render_user(prompt)

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
        """``[B, T]`` log-probs of the response tokens after each prompt's context (0 at padding and
        on other processes' rows).

        Raises:
            ValueError: for ``contexts`` (rules place PI in the prompt text) or mismatched sizes;
            RuntimeError: for ``reference=True`` without a reference model.
        """
        if contexts is not None and any(context for context in contexts):
            raise ValueError("TRLScorer.score places PI in the prompt text; contexts must be None")
        if isinstance(responses, torch.Tensor):
            ids = responses.long().cpu()
            mask = torch.ones_like(ids) if response_mask is None else response_mask.long().cpu()
        else:
            ids, mask = right_pad([list(r) for r in responses], self.pad_token_id, torch.device("cpu"))
        if ids.shape[0] != len(prompts) or (reuse_from is not None and len(reuse_from) != len(prompts)):
            raise ValueError(f"{len(prompts)} prompts for {ids.shape[0]} responses")
        result = torch.zeros(ids.shape, dtype=torch.float32)
        jobs: list[tuple[int, list[int], list[int]]] = []
        for row, prompt in enumerate(prompts):
            response = [int(t) for t in ids[row][mask[row].bool()].tolist()]
            context = self.context_ids(prompt, tuple(response), None if reuse_from is None else reuse_from[row])
            if context is not None and response:
                jobs.append((row, context, response))
        jobs.sort(key=lambda job: len(job[1]) + len(job[2]), reverse=True)  # similar lengths share a pass
        with self._model(reference) as model:
            for start in range(0, len(jobs), self.batch_size):
                chunk = jobs[start : start + self.batch_size]
                pieces = span_logprobs(
                    model,
                    [context + response for _, context, response in chunk],
                    [[(len(context), len(context) + len(response))] for _, context, response in chunk],
                    pad_token_id=self.pad_token_id,
                    device=self.device,
                    temperature=self.temperature,
                )
                for (row, _, response), [piece] in zip(chunk, pieces, strict=True):
                    result[row, : len(response)] = piece.float().cpu()
        return result

    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int | None = None,
        greedy: bool = False,
        stop: Sequence[str] | None = None,
    ) -> list[TextGeneration]:
        """One response per prompt (a lone user message), for rules whose proposer or analyzer is the policy."""
        generations = []
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            for prompt in prompts:
                ids = torch.tensor([self.render_user(prompt)], device=self.device)
                output = self.model.generate(  # type: ignore[operator]
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens or 128,
                    do_sample=not greedy,
                    temperature=self.temperature if not greedy else None,
                    pad_token_id=self.pad_token_id,
                )
                text = str(self.tokenizer.decode(output[0, ids.shape[1] :], skip_special_tokens=True))
                generations.append(TextGeneration(prompt, text))
        return generations

    @contextlib.contextmanager
    def _model(self, reference: bool) -> Iterator[torch.nn.Module]:
        if not reference:
            yield self.model
            return
        if self.reference is None:
            raise RuntimeError("this credit option scores with the reference model; train with beta > 0 or PEFT")
        with self.reference() as model:
            yield model
