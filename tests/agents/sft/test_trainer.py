"""The SFT loss counts response tokens only, and training fits the demonstrations."""

from __future__ import annotations

import pytest
import torch

from agents.policy import ChatSettings, LoraOptions, SamplingSettings, TransformersPolicy, WeightSettings
from agents.policy.trunk import TrunkRecorder
from agents.settings import OptimSettings
from agents.sft.demonstrations import Demonstration
from agents.sft.trainer import (
    SFTTrainer,
    TokenizedDemonstration,
    pad_demonstrations,
    response_nll,
    tokenize_demonstrations,
    trunk_states,
)


def test_response_nll_is_the_mean_over_response_tokens_only():
    logprobs = torch.tensor([[-0.5, -1.5, -9.0], [-2.0, -7.0, -7.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert float(response_nll(logprobs, mask, total_tokens=3)) == pytest.approx((0.5 + 1.5 + 2.0) / 3)
    # a micro-batch's share: two halves sum to the whole
    halves = response_nll(logprobs[:1], mask[:1], total_tokens=3) + response_nll(logprobs[1:], mask[1:], total_tokens=3)
    assert float(halves) == pytest.approx((0.5 + 1.5 + 2.0) / 3)


def test_the_loss_equals_a_hand_computed_masked_cross_entropy(tiny_model_path):
    policy = TransformersPolicy(str(tiny_model_path), seed=0)
    examples = [TokenizedDemonstration([3, 4, 5, 6], [7, 8]), TokenizedDemonstration([9, 10], [11, 12, 13])]
    prompt_ids, prompt_mask, response_ids, response_mask = pad_demonstrations(examples, policy.pad_token_id)
    assert prompt_mask.tolist() == [[1, 1, 1, 1], [0, 0, 1, 1]] and response_mask.tolist() == [[1, 1, 0], [1, 1, 1]]
    loss = response_nll(
        policy.token_logprobs(prompt_ids, prompt_mask, response_ids, response_mask), response_mask, total_tokens=5
    )
    expected = 0.0
    with torch.no_grad():
        for example in examples:  # one unpadded sequence at a time: log-softmax at the positions before each target
            ids = torch.tensor([example.prompt_ids + example.response_ids])
            logits = policy.model(input_ids=ids).logits[0].log_softmax(-1)
            start = len(example.prompt_ids)
            for offset, token in enumerate(example.response_ids):
                expected -= float(logits[start + offset - 1, token])
    assert float(loss.detach()) == pytest.approx(expected / 5, abs=1e-4)
    # changing a prompt token changes the context, but padding and prompt positions are never targets
    response_mask_cut = response_mask.clone()
    response_mask_cut[1, 2] = 0
    cut = response_nll(
        policy.token_logprobs(prompt_ids, prompt_mask, response_ids, response_mask_cut),
        response_mask_cut,
        total_tokens=5,
    )
    assert float(cut.detach()) < float(loss.detach())


def test_tokenized_prompts_are_the_policys_rollout_prompts(tiny_model_path):
    policy = TransformersPolicy(str(tiny_model_path), seed=0)
    demonstrations = [
        Demonstration("Buy shoes.", "click[Buy Now]", "0", 0),
        Demonstration("Q?", "<answer>x</answer>", "1", 0),
    ]
    raw, tagged = tokenize_demonstrations(policy, demonstrations, stop=("</answer>",))
    assert raw.prompt_ids == policy.prompt_ids(["Buy shoes."])[0]
    eos = policy.tokenizer.eos_token_id
    assert raw.response_ids[-1] == eos and policy.tokenizer.decode(raw.response_ids[:-1]) == "click[Buy Now]"
    assert tagged.response_ids[-1] != eos  # ends with a stop string: sampling stops there, no end token to learn


def test_a_response_prefix_is_part_of_the_prompt_not_of_the_target(tiny_model_path):
    policy = TransformersPolicy(str(tiny_model_path), chat=ChatSettings(response_prefix="<answer>"), seed=0)
    [example] = tokenize_demonstrations(
        policy, [Demonstration("Q?", "<answer>x</answer>", "0", 0)], stop=("</answer>",)
    )
    assert policy.tokenizer.decode(example.response_ids) == "x</answer>"
    assert example.prompt_ids == policy.prompt_ids(["Q?"])[0]


def test_training_fits_the_demonstrations_and_touches_only_the_adapter(tmp_path, tiny_model_path):
    torch.manual_seed(0)
    policy = TransformersPolicy(
        str(tiny_model_path),
        weights=WeightSettings(lora=LoraOptions(rank=8, alpha=16, target_modules=("q_proj", "v_proj", "lm_head"))),
        seed=0,
    )
    demonstrations = [Demonstration(f"Task {i}: say the code.", f"code {i % 2}", str(i), 0) for i in range(4)]
    examples = tokenize_demonstrations(policy, demonstrations)
    frozen = {n: p.detach().clone() for n, p in policy.model.named_parameters() if not p.requires_grad}
    trainer = SFTTrainer(
        policy,
        examples,
        output_dir=tmp_path,
        epochs=15,
        batch_size=4,
        optim=OptimSettings(micro_batch_size=2, learning_rate=3e-2),
        progress=False,
    )
    records = trainer.train()
    assert records[-1]["train/loss"] < 0.5 * records[0]["train/loss"]
    assert all(torch.equal(frozen[n], p) for n, p in policy.model.named_parameters() if n in frozen)
    assert (tmp_path / "checkpoints" / "latest").is_file()


def test_training_needs_temperature_one(tiny_model_path, tmp_path):
    policy = TransformersPolicy(str(tiny_model_path), sampling=SamplingSettings(temperature=0.7), seed=0)
    with pytest.raises(ValueError, match="temperature 1.0"):
        SFTTrainer(
            policy,
            [TokenizedDemonstration([1], [2])],
            output_dir=tmp_path,
            epochs=1,
            batch_size=1,
            optim=OptimSettings(micro_batch_size=1, learning_rate=1e-3),
        )


def test_the_trunk_cache_gives_the_same_losses_and_weights(tmp_path, tiny_model_path):
    demonstrations = [Demonstration(f"Task {i}: say the code.", f"code {i % 3} done", str(i), 0) for i in range(5)]
    results = []
    for trunk_cache in (False, True):
        torch.manual_seed(0)
        policy = TransformersPolicy(
            str(tiny_model_path), weights=WeightSettings(lora=LoraOptions(rank=4, alpha=8, top_layers=1)), seed=0
        )
        assert policy.trunk_layer is not None
        trainer = SFTTrainer(
            policy,
            tokenize_demonstrations(policy, demonstrations),
            output_dir=tmp_path / str(trunk_cache),
            epochs=2,
            batch_size=3,
            optim=OptimSettings(micro_batch_size=2, learning_rate=1e-2),
            progress=False,
            trunk_cache=trunk_cache,
        )
        assert (trainer.trunk is not None) == trunk_cache
        losses = [r["train/loss"] for r in trainer.train()]
        results.append((losses, policy.trainable_state_dict()))
    (full_losses, full_weights), (cached_losses, cached_weights) = results
    assert cached_losses == pytest.approx(full_losses, abs=1e-4)
    assert all(torch.allclose(full_weights[name], cached_weights[name], atol=1e-4) for name in full_weights)


def test_trunk_states_are_each_demonstrations_own_states_in_its_order_without_running_the_top_layers(
    tiny_model_path,
):
    torch.manual_seed(0)
    policy = TransformersPolicy(
        str(tiny_model_path), weights=WeightSettings(lora=LoraOptions(rank=4, alpha=8, top_layers=1)), seed=0
    )
    assert policy.trunk_layer is not None
    # Lengths out of order, so the length-sorted batches (2 a batch) differ from the given order.
    examples = [TokenizedDemonstration(list(range(5, 5 + length)), [7, 8]) for length in (9, 3, 14, 5, 3, 11, 6)]
    decoder = policy.model.get_base_model().get_decoder()
    top_calls = []
    hook = decoder.layers[policy.trunk_layer].register_forward_hook(lambda *_: top_calls.append(1))
    try:
        states = trunk_states(policy, examples, batch_size=2)
    finally:
        hook.remove()
    assert top_calls == []  # each pass stopped where the states enter the first adapted layer
    with torch.no_grad():
        for example, kept in zip(examples, states, strict=True):
            ids = torch.tensor([example.prompt_ids + example.response_ids])
            alone = policy.model(input_ids=ids, output_hidden_states=True).hidden_states[policy.trunk_layer][0]
            assert kept.shape == alone.shape
            torch.testing.assert_close(kept, alone, atol=1e-5, rtol=1e-4)


def test_a_stopping_recorder_swallows_only_its_own_early_exit(tiny_model_path):
    policy = TransformersPolicy(
        str(tiny_model_path), weights=WeightSettings(lora=LoraOptions(rank=4, alpha=8, top_layers=1)), seed=0
    )
    decoder = policy.model.get_base_model().get_decoder()
    with pytest.raises(RuntimeError, match="not the recorder's"):
        with TrunkRecorder(decoder.layers[policy.trunk_layer], stop=True):
            raise RuntimeError("not the recorder's")
    with TrunkRecorder(decoder.layers[policy.trunk_layer], stop=True) as recorder:
        policy.model(input_ids=torch.tensor([[5, 6, 7]]))
    assert [tuple(c.shape) for c in recorder.captured] == [(1, 3, decoder.config.hidden_size)]
