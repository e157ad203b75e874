import pytest
from transformers import AutoTokenizer

from agents.policy.chat import ConversationTurn, conversation_text
from agents.policy.codec import ChatCodec, ChatSettings


@pytest.fixture(scope="module")
def tokenizer(tiny_model_path):
    return AutoTokenizer.from_pretrained(tiny_model_path)


def _text(codec, ids):
    return codec.tokenizer.decode(ids)


def test_a_prompt_is_chat_templated_with_its_system_message_context_and_response_prefix(tokenizer):
    codec = ChatCodec(
        tokenizer,
        {tokenizer.eos_token_id},
        ChatSettings(system_prompt="Be brief.", context_separator=" | ", response_prefix="<a>"),
    )
    [ids] = codec.prompt_ids(["Question?"], contexts=["Hint"])
    assert _text(codec, ids) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHint | Question?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n<a>"  # enable_thinking=False: an empty think block
    )
    assert codec.prompt_ids(["Question?"], contexts=[None]) == codec.prompt_ids(["Question?"])
    with pytest.raises(ValueError, match="1 contexts for 2 prompts"):
        codec.prompt_ids(["a", "b"], contexts=["x"])


def test_a_conversation_prompt_renders_to_its_turns_tokens_and_the_decoded_text_carries_offsets(tokenizer):
    codec = ChatCodec(tokenizer, {tokenizer.eos_token_id}, ChatSettings(response_prefix="<"))
    response = tokenizer.encode("go east", add_special_tokens=False)
    [ids] = codec.prompt_ids([conversation_text("Task.", [ConversationTurn(response, "go east", "You moved.")])])
    [first] = codec.prompt_ids(["Task."])
    assert ids == first + response + codec.next_turn_ids(response, "You moved.")
    assert _text(codec, ids).endswith(
        "<go east<|im_end|>\n<|im_start|>user\nYou moved.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<"
    )
    text, offsets = codec.text_with_offsets(response)
    assert text == "<go east" and offsets[0][0] == 1 and offsets[-1][1] == len(text)


def test_stop_strings_are_found_in_the_decoded_tail(tokenizer):
    codec = ChatCodec(tokenizer, {tokenizer.eos_token_id})
    ids = tokenizer.encode("look around. then go", add_special_tokens=False)
    window = codec.stop_window(["around."])
    assert window == len(tokenizer.encode("around.", add_special_tokens=False)) + 2
    assert codec.ends_with_stop(ids[:3], ["around."], window) and not codec.ends_with_stop(ids[:1], ["around."], window)
