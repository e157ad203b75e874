"""Multi-turn sampling over one KV cache: each turn feeds only the tokens it adds.

:class:`ConversationRollout` holds one growing chat per member (an env of a collection) in one
batched, growing cache. The first call prefills the members' first prompts (each distinct one
once: a group's members share theirs); each later call appends, per member still playing, the
previous response's last token and the next user turn (:meth:`ChatCodec.next_turn_ids`),
then samples. Members that stop playing are dropped from the cache. Inside a row, the padding
of each appended chunk and the steps after the row's response ended stay in the cache as
masked-out columns; positions count real tokens only, so every row sees exactly its own
conversation, as a teacher-forced pass over the conversation's tokens does (tested).

Each :class:`~agents.policy.generation.Generation` returned carries the conversation so
far as its prompt: text (:func:`agents.policy.chat.conversation_text`, which ``prompt_ids``
renders back to the same tokens) and ids, plus, while the policy keeps them, the trunk states of
every token before the response's last.

Example:
    >>> rollout = policy.conversations()                                           # doctest: +SKIP
    >>> first = rollout.generate([0, 1], ["Task A", "Task B"])                     # doctest: +SKIP
    >>> second = rollout.generate([1], ["You see a door."])                        # doctest: +SKIP
    >>> second[0].prompt_ids[: len(first[1].prompt_ids)] == first[1].prompt_ids   # doctest: +SKIP
    True
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import torch

from agents.policy.chat import ConversationTurn, conversation_text
from agents.policy.decoding import DynamicDecoder
from agents.policy.generation import Generation
from agents.policy.sampler import Sampler


class ConversationRollout:
    """One growing chat per member, sampled turn by turn (see the module docstring).

    Args:
        sampler: The policy's sampler (its sampling settings, prompt sharing, chat rendering and
            what its rollout caches keep apply).
    """

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self.decoder = DynamicDecoder(sampler.model)  # a growing cache: rows are dropped and chunks appended
        self.recorder = sampler.caches.trunk_recorder(sampler.model)
        self.members: list[int] = []
        """The member of each cache row."""
        self.ids: dict[int, list[int]] = {}
        """Each member's conversation tokens so far (the last response's last token not yet fed)."""
        self.first_messages: dict[int, str] = {}
        self.turns: dict[int, list[ConversationTurn]] = {}
        self.last: dict[int, tuple[list[int], str]] = {}

    @torch.no_grad()
    def generate(
        self,
        members: Sequence[int],
        messages: Sequence[str],
        *,
        max_new_tokens: int | None = None,
        greedy: bool = False,
        stop: Sequence[str] | None = None,
    ) -> list[Generation]:
        """Adds each member's next user message and samples its response.

        Args:
            members: Who plays this turn: on the first call, every member (new); later, some or
                all of the previous call's members (the others are dropped for good).
            messages: Per member, the user message: the first prompt on the first call, the
                next observation's turn text afterwards.
            max_new_tokens: Overrides the policy's limit.
            greedy: Take the most likely token instead of sampling.
            stop: Overrides the policy's stop strings.

        Raises:
            ValueError: for a member that is not playing, or new members after the first call.
        """
        if len(messages) != len(members):
            raise ValueError(f"got {len(messages)} messages for {len(members)} members")
        if not members:
            return []
        sampler, codec = self.sampler, self.sampler.codec
        limit, stops = sampler.limits(max_new_tokens, stop)
        with self.recorder if self.recorder is not None else contextlib.nullcontext():
            if not self.members:
                prompt_ids = codec.prompt_ids(messages)
                for member, message, ids in zip(members, messages, prompt_ids, strict=True):
                    self.ids[member], self.first_messages[member], self.turns[member] = ids, message, []
                self.members = list(members)
                logits = sampler.prefill(self.decoder, prompt_ids, limit, self.recorder)
            else:
                logits = self._extend(members, messages)
            sampler.caches.keep_prompt_kv(
                [self.ids[m] for m in self.members], self.decoder.cache, mask=self.decoder.attention_mask
            )
            contexts = [self.ids[m] for m in self.members]
            responses, logprobs, reasons = sampler.sample(self.decoder, logits, limit, greedy, stops, contexts=contexts)
        hiddens: list[torch.Tensor | None] = [None] * len(members)
        if self.recorder is not None:
            lengths = [len(self.ids[m]) + len(r) - 1 for m, r in zip(self.members, responses, strict=True)]
            hiddens = list(self.recorder.rows(self.decoder.attention_mask, lengths))
        generations = []
        for member, response, token_logprobs, reason, kept in zip(
            self.members, responses, logprobs, reasons, hiddens, strict=True
        ):
            text, offsets = codec.text_with_offsets(response)
            prompt = conversation_text(self.first_messages[member], self.turns[member])
            generations.append(
                Generation(prompt, list(self.ids[member]), response, text, token_logprobs, offsets, reason, kept)
            )
            self.ids[member] = self.ids[member] + response
            self.last[member] = (response, text)
        return generations

    def _extend(self, members: Sequence[int], messages: Sequence[str]) -> torch.Tensor:
        """Drops members no longer playing, appends each one's next turn; the logits of its last token."""
        codec = self.sampler.codec
        unknown = sorted(set(members) - set(self.members))
        if unknown:
            raise ValueError(f"members {unknown} are not playing in this conversation rollout")
        if list(members) != self.members:
            index = torch.tensor([self.members.index(m) for m in members], dtype=torch.long)
            self.decoder.select_rows(index)
            if self.recorder is not None:
                self.recorder.select_rows(index)
            self.members = list(members)
        chunks = []
        for member, message in zip(members, messages, strict=True):
            response, text = self.last[member]
            added = codec.next_turn_ids(response, message)
            self.turns[member].append(ConversationTurn(list(response), text, message))
            # The response's last token was sampled but never fed: it opens this chunk.
            self.ids[member] = self.ids[member] + added
            chunks.append(response[-1:] + added)
        width = max(len(chunk) for chunk in chunks)
        input_ids = torch.full((len(chunks), width), codec.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(chunks), width), dtype=torch.long)
        for row, chunk in enumerate(chunks):
            input_ids[row, width - len(chunk) :] = torch.tensor(chunk, dtype=torch.long)
            mask[row, width - len(chunk) :] = 1
        return self.decoder.extend(input_ids.to(self.sampler.device), mask.to(self.sampler.device))
