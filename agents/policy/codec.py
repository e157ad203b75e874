"""Text to the token ids a policy feeds, and sampled ids back to text: tokenising and chat rendering.

:class:`ChatCodec` applies the model's chat template to a prompt (with an optional system
message, privileged context before the prompt and a response prefix after it), renders a
conversation prompt (:func:`agents.policy.chat.conversation_text`) back to the exact tokens that
were fed, gives the tokens a conversation adds after a response (:class:`~agents.policy.chat.ChatFrame`),
and decodes a response with each token's character range.

Example:
    >>> codec = ChatCodec(tokenizer, eos_ids, ChatSettings(response_prefix="<think></think>"))  # doctest: +SKIP
    >>> codec.prompt_ids(["Say hi."], contexts=["Hint: wave."])              # doctest: +SKIP
    [[151644, 872, 198, ...]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents.policy.chat import ChatFrame, parse_conversation_text


def eos_token_ids(tokenizer: Any, model: Any) -> set[int]:
    """The ids that end a response: the model's generation config's eos ids and the tokenizer's."""
    ids = set()
    for source in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(source, int):
            ids.add(source)
        elif source is not None:
            ids.update(int(i) for i in source)
    return ids


@dataclass(frozen=True)
class ChatSettings:
    """How prompts are rendered around the chat template.

    Attributes:
        system_prompt: A system message put before every prompt (None: the template's default).
        context_separator: Put between privileged context and the prompt.
        enable_thinking: Passed to chat templates that know it (Qwen3).
        response_prefix: Text that starts every response: its tokens end every prompt and its
            text starts every decoded response.
    """

    system_prompt: str | None = None
    context_separator: str = "\n\n"
    enable_thinking: bool = False
    response_prefix: str = ""


class ChatCodec:
    """A tokenizer and a chat template as the policy uses them (see the module docstring).

    Args:
        tokenizer: A Hugging Face tokenizer with a chat template and a pad token.
        eos_token_ids: Ids that end a response (:func:`eos_token_ids`).
        settings: The system prompt, context separator, thinking switch and response prefix
            (:class:`ChatSettings`).
    """

    def __init__(
        self,
        tokenizer: Any,
        eos_token_ids: set[int],
        settings: ChatSettings | None = None,
    ) -> None:
        settings = settings or ChatSettings()
        response_prefix = settings.response_prefix
        self.tokenizer = tokenizer
        self.eos_token_ids = eos_token_ids
        self.system_prompt = settings.system_prompt
        self.context_separator = settings.context_separator
        self.enable_thinking = settings.enable_thinking
        self.response_prefix = response_prefix
        self.prefix_ids: list[int] = (
            tokenizer.encode(response_prefix, add_special_tokens=False) if response_prefix else []
        )
        self.pad_token_id = int(tokenizer.pad_token_id)
        self._chat_frame: ChatFrame | None = None

    def prompt_ids(self, prompts: Sequence[str], contexts: Sequence[str | None] | None = None) -> list[list[int]]:
        """Chat-templated token ids of each prompt, with ``contexts[i]`` (if any) put before it.

        A conversation prompt (:func:`agents.policy.chat.conversation_text`) becomes the whole
        conversation: the first message (with the context before it) chat-templated, then each
        response's sampled ids and the tokens of the next user turn.
        """
        if contexts is not None and len(contexts) != len(prompts):
            raise ValueError(f"got {len(contexts)} contexts for {len(prompts)} prompts")
        result = []
        for index, prompt in enumerate(prompts):
            context = None if contexts is None else contexts[index]
            first, turns = parse_conversation_text(prompt)
            ids = self.first_prompt_ids(first if not context else f"{context}{self.context_separator}{first}")
            for turn in turns:
                ids += turn.response_ids + self.next_turn_ids(turn.response_ids, turn.user_message)
            result.append(ids)
        return result

    def first_prompt_ids(self, content: str) -> list[int]:
        """One user message chat-templated (after the system message, if any), ready for the reply."""
        messages = [{"role": "user", "content": content}]
        if self.system_prompt is not None:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        ids: Any = self.tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=True, enable_thinking=self.enable_thinking
        )
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return [int(token) for token in ids] + self.prefix_ids

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
        return [int(t) for t in self.tokenizer.encode(text, add_special_tokens=False)] + self.prefix_ids

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

    def stop_window(self, stops: Sequence[str]) -> int:
        """How many trailing response tokens to decode to see any of ``stops`` (its tokens and 2 more)."""
        return max((len(self.tokenizer.encode(s, add_special_tokens=False)) for s in stops), default=0) + 2

    def ends_with_stop(self, response_ids: Sequence[int], stops: Sequence[str], window: int) -> bool:
        """Whether the decoded last ``window`` tokens of a response hold one of ``stops``."""
        tail = self.tokenizer.decode(list(response_ids[-window:]), skip_special_tokens=True)
        return any(s in tail for s in stops)
