import pytest
import torch

from agents.algorithms.privileged.shift import insert_privileged_text
from agents.policy import LoraOptions, SamplingSettings, TransformersPolicy, WeightSettings

FIRST = ["Task: say hi.", "Task: a much longer first prompt, so that rows are left-padded.", "Task: say hi."]
SECOND = ["You see a door.", "Nothing happens.", "ok"]
THIRD = {2: "A third turn for member two", 0: "Third."}


def _play(policy, **generate):
    """Three members: all play turns 1-2, members 2 and 0 (in that order) play turn 3; turns per member."""
    conversation = policy.conversations()
    first = conversation.generate([0, 1, 2], FIRST, **generate)
    second = conversation.generate([0, 1, 2], SECOND, **generate)
    third = conversation.generate(list(THIRD), list(THIRD.values()), **generate)
    return {0: [first[0], second[0], third[1]], 1: [first[1], second[1]], 2: [first[2], second[2], third[0]]}


@pytest.fixture()
def lora_policy(tiny_model_path):
    torch.manual_seed(0)
    policy = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(lora=LoraOptions(rank=2, alpha=4, top_layers=1)),
        sampling=SamplingSettings(max_new_tokens=6),
        seed=0,
    )
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0.0, 0.5)
    return policy


def _spans(turns):
    return [(len(g.prompt_ids), len(g.prompt_ids) + len(g.response_ids)) for g in turns]


def test_each_turn_adds_to_the_conversation_and_its_prompt_text_renders_the_same_tokens(tiny_policy):
    turns = _play(tiny_policy)
    for member, played in turns.items():
        assert played[0].prompt == FIRST[member] and played[0].prompt_ids == tiny_policy.prompt_ids([FIRST[member]])[0]
        for before, after in zip(played, played[1:], strict=False):
            head = before.prompt_ids + before.response_ids
            assert after.prompt_ids[: len(head)] == head
            added = tiny_policy.tokenizer.decode(after.prompt_ids[len(head) :])
            assert added.startswith("<|im_end|>\n<|im_start|>user\n") and "Task:" not in added
        for generation in played:
            assert tiny_policy.prompt_ids([generation.prompt])[0] == generation.prompt_ids
    assert SECOND[1] in tiny_policy.tokenizer.decode(turns[1][1].prompt_ids)


def test_sampled_log_probs_equal_one_pass_over_the_conversation_and_each_turn_scored_alone(lora_policy):
    with lora_policy.keeping_trunk_hiddens():
        turns = _play(lora_policy)
    for played in turns.values():
        last = played[-1]
        sequence = last.prompt_ids + last.response_ids
        with torch.no_grad():
            [whole] = lora_policy.sequence_logprobs([sequence], [_spans(played)])
            [on_trunk] = lora_policy.sequence_logprobs([sequence], [_spans(played)], trunk_hiddens=[last.trunk_hiddens])
        together = lora_policy.score([g.prompt for g in played], [g.response_ids for g in played])  # one chain
        for row, generation in enumerate(played):
            sampled = torch.tensor(generation.logprobs)
            [alone] = lora_policy.score([generation.prompt], [generation.response_ids])
            assert torch.allclose(whole[row], sampled, atol=1e-4)
            assert torch.allclose(on_trunk[row], sampled, atol=1e-4)
            assert torch.allclose(alone, sampled, atol=1e-4)
            assert torch.allclose(together[row, : len(sampled)], sampled, atol=1e-4)
            assert generation.trunk_hiddens.shape[0] == len(generation.prompt_ids) + len(sampled) - 1
            assert torch.allclose(generation.trunk_hiddens, last.trunk_hiddens[: generation.trunk_hiddens.shape[0]])


def test_privileged_text_and_contexts_go_into_the_conversation(tiny_policy):
    played = _play(tiny_policy)[0]
    prompt, response = played[-1].prompt, played[-1].response_ids
    hinted = insert_privileged_text(prompt, "Hint: wave.", task="say hi.")
    conversation = played[-1].prompt_ids
    first_ids = tiny_policy.prompt_ids([FIRST[0]])[0]
    with_hint = tiny_policy.prompt_ids(["Task: say hi.\nHint: wave."])[0] + conversation[len(first_ids) :]
    assert tiny_policy.prompt_ids([hinted])[0] == with_hint
    as_context = tiny_policy.prompt_ids([f"Hint: wave.\n\n{FIRST[0]}"])[0] + conversation[len(first_ids) :]
    assert tiny_policy.prompt_ids([prompt], ["Hint: wave."])[0] == as_context
    with torch.no_grad():
        [[expected]] = tiny_policy.sequence_logprobs(
            [with_hint + response], [[(len(with_hint), len(with_hint) + len(response))]]
        )
    assert torch.allclose(tiny_policy.score([hinted], [response])[0], expected, atol=1e-4)


def test_kept_conversation_kv_serves_privileged_rescoring(tiny_policy):
    with tiny_policy.keeping_prompt_caches() as kept:
        turns = _play(tiny_policy)
    rows = [g for played in turns.values() for g in played]
    assert len(kept) == len({tuple(g.prompt_ids) for g in rows})  # members 0 and 2 share their first prompt
    originals = [g.prompt for g in rows]
    hinted = [insert_privileged_text(p, "Hint: wave.", placement="prompt_end") for p in originals]
    responses = [g.response_ids for g in rows]
    reused = tiny_policy.score(hinted, responses, reuse_from=originals)
    assert torch.allclose(reused, tiny_policy.score(hinted, responses), atol=1e-4)
    tiny_policy.clear_prompt_caches()


def test_a_response_that_ends_the_message_is_not_closed_twice(tiny_policy):
    end = tiny_policy.tokenizer.convert_tokens_to_ids("<|im_end|>")
    closed = tiny_policy.tokenizer.decode(tiny_policy.next_turn_ids([5, end], "hi"))
    assert closed.startswith("\n<|im_start|>user\nhi<|im_end|>")
    assert tiny_policy.tokenizer.decode(tiny_policy.next_turn_ids([5], "hi")).startswith("<|im_end|>\n<|im_start|>user")


def test_members_must_be_playing(tiny_policy):
    conversation = tiny_policy.conversations()
    conversation.generate([0, 1], FIRST[:2])
    with pytest.raises(ValueError, match="not playing"):
        conversation.generate([0, 5], SECOND[:2])
    with pytest.raises(ValueError, match="messages"):
        conversation.generate([0], SECOND[:2])
