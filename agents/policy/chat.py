"""Conversations as tokens and as text: what a multi-turn rollout feeds, and how its prompts are written.

In conversation mode an episode is one chat that grows turn by turn: the first user message
(chat-templated like any prompt), the sampled response, the next user message, its response,
and so on. Nothing is re-rendered: after a response's sampled tokens come only the tokens that
close the assistant message, hold the next user message and open the next assistant message.
:class:`ChatFrame` reads those pieces off the model's own chat template once.

A turn's prompt must be text as well (credit rules rescore ``batch.prompts``, inserting
privileged text). :func:`conversation_text` writes the conversation before a turn as the first
user message, then :data:`CONVERSATION_MARK` and one JSON line with the later turns (each
response's exact sampled token ids, its text for people to read, the next user message);
:func:`parse_conversation_text` reads it back. Text inserted into the first message stays
there; text appended after the JSON joins the last user message.

Example:
    >>> text = conversation_text("Task: find a pen.", [ConversationTurn([5, 6], "look", "You see a pen.")])
    >>> parse_conversation_text(text + "\\nHint: take it.")[1][0].user_message
    'You see a pen.\\nHint: take it.'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

CONVERSATION_MARK = "\n\x1e"
"""Ends a conversation prompt's first message; the later turns follow as one JSON line."""

_PROBE_USER, _PROBE_ASSISTANT, _PROBE_NEXT = "USER_PROBE_1", "ASSISTANT_PROBE_2", "USER_PROBE_3"


@dataclass(frozen=True)
class ConversationTurn:
    """A later turn of a conversation prompt: the response before it and the user message it adds.

    Attributes:
        response_ids: The sampled response's token ids (exact, not re-tokenised).
        response: The response's text (for reading; the ids are what is fed).
        user_message: The next user message.
    """

    response_ids: list[int]
    response: str
    user_message: str


def conversation_text(first_message: str, turns: Sequence[ConversationTurn]) -> str:
    """The prompt text of a conversation: the first message alone when there are no later turns."""
    if not turns:
        return first_message
    payload = [
        {"response_ids": list(turn.response_ids), "response": turn.response, "user": turn.user_message}
        for turn in turns
    ]
    return first_message + CONVERSATION_MARK + json.dumps(payload, ensure_ascii=False)


def parse_conversation_text(text: str) -> tuple[str, list[ConversationTurn]]:
    """The first message and later turns of :func:`conversation_text` output (plain text: no turns).

    Raises:
        ValueError: when the turns after the mark are not the JSON it writes.
    """
    first, mark, rest = text.partition(CONVERSATION_MARK)
    if not mark:
        return text, []
    try:
        payload, end = json.JSONDecoder().raw_decode(rest)
        turns = [
            ConversationTurn([int(i) for i in t["response_ids"]], str(t["response"]), str(t["user"])) for t in payload
        ]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"a conversation prompt's turns are not readable after the mark: {error}") from None
    if not turns:
        raise ValueError("a conversation prompt has a mark but no turns")
    if rest[end:]:
        turns[-1] = replace(turns[-1], user_message=turns[-1].user_message + rest[end:])
    return first, turns


@dataclass(frozen=True)
class ChatFrame:
    """The chat-template text around messages, for appending turns to a conversation.

    Attributes:
        assistant_close: After an assistant message's content (e.g. ``<|im_end|>\\n``).
        user_open: Before a user message's content (e.g. ``<|im_start|>user\\n``).
        user_close: After a user message's content.
        assistant_open: The generation prompt that opens the next assistant message.
    """

    assistant_close: str
    user_open: str
    user_close: str
    assistant_open: str

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, *, system_prompt: str | None, enable_thinking: bool) -> ChatFrame:
        """Reads the pieces off ``tokenizer``'s chat template by rendering a probe conversation.

        Raises:
            ValueError: when the template does not render a conversation as its earlier
                messages followed by the new ones (nothing to append to).
        """

        def render(messages: list[dict[str, str]], generation_prompt: bool) -> str:
            head = [] if system_prompt is None else [{"role": "system", "content": system_prompt}]
            text: Any = tokenizer.apply_chat_template(
                head + messages,
                tokenize=False,
                add_generation_prompt=generation_prompt,
                enable_thinking=enable_thinking,
            )
            return str(text)

        first = [{"role": "user", "content": _PROBE_USER}]
        answered = [*first, {"role": "assistant", "content": _PROBE_ASSISTANT}]
        followed = [*answered, {"role": "user", "content": _PROBE_NEXT}]
        with_answer, with_next = render(answered, False), render(followed, False)
        prompted = render(followed, True)
        if (
            not with_next.startswith(with_answer)
            or not prompted.startswith(with_next)
            or _PROBE_ASSISTANT not in with_answer
        ):
            raise ValueError("the chat template does not extend a conversation message by message")
        user_block = with_next[len(with_answer) :]
        if _PROBE_NEXT not in user_block:
            raise ValueError("the chat template does not extend a conversation message by message")
        user_open, _, user_close = user_block.partition(_PROBE_NEXT)
        assistant_close = with_answer[with_answer.rindex(_PROBE_ASSISTANT) + len(_PROBE_ASSISTANT) :]
        return cls(assistant_close, user_open, user_close, prompted[len(with_next) :])

    def next_turn_text(self, user_message: str, *, closed_by: str = "") -> str:
        """What follows a response: the rest of the assistant close, the user message, the next opening.

        ``closed_by``: the text of the response's own last token when it was an end token
        (``<|im_end|>``): the part of the close it already wrote is not repeated.
        """
        close = self.assistant_close
        if closed_by and close.startswith(closed_by):
            close = close[len(closed_by) :]
        return f"{close}{self.user_open}{user_message}{self.user_close}{self.assistant_open}"
