import pytest

from agents.algorithms.privileged.shift import insert_privileged_text
from agents.policy.chat import ChatFrame, ConversationTurn, conversation_text, parse_conversation_text

TURNS = [
    ConversationTurn([5, 6], "look\nround", "You see a pen.\nAdmissible actions: ['take pen']"),
    ConversationTurn([7], "take pen", "You hold a pen."),
]
FIRST = "You are an agent.\nTask: find a pen.\nCurrent observation (step 1): a room."


def test_conversation_text_round_trips_and_is_plain_without_later_turns():
    assert conversation_text(FIRST, []) == FIRST
    assert parse_conversation_text(FIRST) == (FIRST, [])
    text = conversation_text(FIRST, TURNS)
    assert text.count("\n") == FIRST.count("\n") + 1  # the later turns sit on one line
    assert parse_conversation_text(text) == (FIRST, TURNS)


def test_privileged_text_lands_in_the_first_or_the_last_user_message():
    text = conversation_text(FIRST, TURNS)
    after_task = parse_conversation_text(insert_privileged_text(text, "Hint: desk.", task="find a pen."))
    assert after_task == (
        "You are an agent.\nTask: find a pen.\nHint: desk.\nCurrent observation (step 1): a room.",
        TURNS,
    )
    start = parse_conversation_text(insert_privileged_text(text, "Hint: desk.", placement="prompt_start"))
    assert start[0] == f"Hint: desk.\n{FIRST}" and start[1] == TURNS
    first, turns = parse_conversation_text(insert_privileged_text(text, "Hint: desk.", placement="prompt_end"))
    assert first == FIRST and turns[:1] == TURNS[:1] and turns[1].user_message == "You hold a pen.\nHint: desk."
    # A task found only in a later turn (or not at all) puts the text at the end, never inside the turns.
    assert parse_conversation_text(insert_privileged_text(text, "Hint.", task="hold a pen"))[1][1].user_message == (
        "You hold a pen.\nHint."
    )


def test_unreadable_turns_are_an_error():
    with pytest.raises(ValueError, match="not readable"):
        parse_conversation_text(FIRST + "\n\x1e[{broken")


def test_chat_frame_of_a_chatml_template(tiny_policy):
    frame = ChatFrame.from_tokenizer(tiny_policy.tokenizer, system_prompt=None, enable_thinking=False)
    assert frame.assistant_close == "<|im_end|>\n"
    assert (frame.user_open, frame.user_close) == ("<|im_start|>user\n", "<|im_end|>\n")
    assert frame.assistant_open.startswith("<|im_start|>assistant\n")
    assert frame.next_turn_text("hi", closed_by="<|im_end|>").startswith("\n<|im_start|>user\nhi<|im_end|>")


def test_chat_frame_refuses_a_template_that_rewrites_history(tiny_policy):
    class Rewriting:
        def apply_chat_template(self, messages, **kwargs):
            return "|".join(m["content"] for m in reversed(messages))

    with pytest.raises(ValueError, match="message by message"):
        ChatFrame.from_tokenizer(Rewriting(), system_prompt=None, enable_thinking=False)
