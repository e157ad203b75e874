"""SFTAgent end to end: demonstrate, evaluate, fit, save; its output is an RL run's starting point."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from safetensors.torch import load_file

from agents.agent import GRPOAgent
from agents.config import GRPOConfig
from agents.sft import SFTAgent, SFTConfig

pytestmark = pytest.mark.slow


def sft_config(tmp_path, **overrides):
    settings = dict(
        expert_episodes=3,
        epochs=1,
        batch_size=4,
        micro_batch_size=4,
        learning_rate=1e-2,
        eval_episodes=2,
        max_new_tokens=6,
        max_turns=4,
        history_length=2,
        history_observations=False,
        lora_top_layers=1,
        output_dir=str(tmp_path / "sft"),
        progress=False,
    )
    settings.update(overrides)
    return SFTConfig(**settings)


@pytest.mark.parametrize(("trunk_dtype", "save_merged_model"), [(None, False), ("bfloat16", True)])
def test_sft_output_loads_as_the_start_of_an_rl_run(tmp_path, tiny_model_path, trunk_dtype, save_merged_model):
    config = sft_config(tmp_path, trunk_dtype=trunk_dtype, eval_before=True, save_merged_model=save_merged_model)
    sft = SFTAgent(str(tiny_model_path), "SearchQA-v0", config)
    final = sft.learn()
    run = tmp_path / "sft"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert records[0]["step"] == 0 and "eval/success_rate" in records[0] and records[0]["demonstrations/episodes"] == 3
    assert not SFTConfig().eval_before  # the default skips the bare model (as every recipe does)
    assert "train/loss" in records[1] and final["step"] == records[-1]["step"] > 0 and "eval/invalid_rate" in final
    assert (run / "demonstrations.jsonl").is_file() and json.loads((run / "config.json").read_text())["kind"] == "sft"
    adapter = json.loads((run / "adapter" / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == str(tiny_model_path.resolve())
    assert (run / "adapter" / "adapter_model.safetensors").is_file()
    assert (run / "model").is_dir() == save_merged_model
    if save_merged_model:
        saved = load_file(run / "model" / "model.safetensors")
        assert {tensor.dtype for tensor in saved.values()} == {torch.float32}  # a bf16 trunk is saved as float32
    else:  # adapter-sized: every weight the run saved (checkpoints included) is a small part of the model's
        size = sum(path.stat().st_size for path in run.rglob("*") if path.suffix in {".safetensors", ".pt"})
        assert size < 0.2 * (tiny_model_path / "model.safetensors").stat().st_size

    rl = GRPOAgent(
        model=str(run),
        env="SearchQA-v0",
        config=GRPOConfig(
            lora=True,
            lora_top_layers=1,
            trunk_dtype=trunk_dtype,
            output_dir=str(tmp_path / "rl"),
            progress=False,
            tensorboard=False,
        ),
    )
    try:
        # A fresh adapter starts at zero: the RL policy computes what the trained SFT policy computed.
        prompt = ["Who founded Fethstoul Systems?"]
        ids = sft.policy.prompt_ids(prompt)
        assert ids == rl.policy.prompt_ids(prompt)
        with torch.no_grad():
            expected = sft.policy.model(input_ids=torch.tensor(ids)).logits
            loaded = rl.policy.model(input_ids=torch.tensor(ids)).logits
            with rl.policy.reference_model() as reference:  # the reference is the warm-started model
                referenced = reference(input_ids=torch.tensor(ids)).logits
        assert torch.allclose(expected, loaded, atol=1e-4) and torch.allclose(expected, referenced, atol=1e-4)
        fresh = GRPOAgent(model=str(tiny_model_path), env="SearchQA-v0", config=rl.config)
        with torch.no_grad():
            original = fresh.policy.model(input_ids=torch.tensor(ids)).logits
        assert not torch.allclose(expected, original, atol=1e-3)  # SFT did change the model
        fresh.close()
    finally:
        rl.close()


def test_a_resumed_sft_run_ends_where_an_uninterrupted_one_does(tmp_path, tiny_model_path):
    straight = SFTAgent(str(tiny_model_path), "WebShop-v0", sft_config(tmp_path / "a", epochs=2, eval_episodes=0))
    straight.learn()
    first = SFTAgent(str(tiny_model_path), "WebShop-v0", sft_config(tmp_path / "b", epochs=1, eval_episodes=0))
    first.learn()
    resumed = SFTAgent(
        str(tiny_model_path), "WebShop-v0", sft_config(tmp_path / "b", epochs=2, eval_episodes=0, resume=True)
    )
    resumed.learn()
    expected, got = straight.policy.trainable_state_dict(), resumed.policy.trainable_state_dict()
    assert expected.keys() == got.keys()
    assert all(torch.allclose(expected[name], got[name], atol=1e-6) for name in expected)
    records = [json.loads(line) for line in (tmp_path / "b" / "sft" / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in records if "train/loss" in r]
    assert steps == list(range(1, len(steps) + 1))  # each optimizer step logged once across the resume


def test_a_resume_that_saves_the_adapter_alone_replaces_the_merged_model_it_wrote(tmp_path, tiny_model_path):
    from agents.policy.models import resolve_model

    merged = sft_config(tmp_path, epochs=1, eval_episodes=0, save_merged_model=True)
    SFTAgent(str(tiny_model_path), "SearchQA-v0", merged).learn()
    run = tmp_path / "sft"
    assert resolve_model(run) == run / "model"
    resumed = dataclasses.replace(merged, epochs=2, save_merged_model=False, resume=True)
    agent = SFTAgent(str(tiny_model_path), "SearchQA-v0", resumed)
    agent.learn()
    assert not (run / "model").exists() and (run / "adapter" / "adapter_model.safetensors").is_file()
    folder = resolve_model(run)  # the second epoch's adapter, merged: not the first epoch's model
    loaded = GRPOAgent(model=str(folder), env="SearchQA-v0", config=GRPOConfig(output_dir=str(tmp_path / "rl")))
    try:
        ids = torch.tensor(agent.policy.prompt_ids(["Who founded Fethstoul Systems?"]))
        with torch.no_grad():
            assert torch.allclose(
                agent.policy.model(input_ids=ids).logits, loaded.policy.model(input_ids=ids).logits, atol=1e-4
            )
    finally:
        loaded.close()


def test_a_demonstrations_file_is_cloned_beside_the_experts_turns(tmp_path, tiny_model_path):
    extra = [{"prompt": f"Instruction: say {word}", "response": f"<answer>{word}</answer>"} for word in ("red", "blue")]
    path = tmp_path / "extra.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in extra))
    config = sft_config(tmp_path, eval_episodes=0, demonstrations_path=str(path))
    SFTAgent(str(tiny_model_path), "SearchQA-v0", config).learn()
    expert = sft_config(tmp_path / "expert", eval_episodes=0)
    SFTAgent(str(tiny_model_path), "SearchQA-v0", expert).learn()
    written = [json.loads(line) for line in (tmp_path / "sft" / "demonstrations.jsonl").read_text().splitlines()]
    alone = [
        json.loads(line) for line in (tmp_path / "expert" / "sft" / "demonstrations.jsonl").read_text().splitlines()
    ]
    assert written[: len(alone)] == alone and [(r["prompt"], r["response"]) for r in written[len(alone) :]] == [
        (row["prompt"], row["response"]) for row in extra
    ]


def test_extra_expert_turns_are_cloned_after_the_experts_episodes_and_logged(tmp_path, tiny_model_path):
    env_kwargs = {"results_per_page": 5, "observation_mode": "text_compact", "max_goal_options": 1}
    config = sft_config(tmp_path, eval_episodes=0, max_turns=5, env_kwargs=env_kwargs, extra_expert_turns={"option": 3})
    SFTAgent(str(tiny_model_path), "WebShop-v0", config).learn()
    written = [json.loads(line) for line in (tmp_path / "sft" / "demonstrations.jsonl").read_text().splitlines()]
    first = json.loads((tmp_path / "sft" / "metrics.jsonl").read_text().splitlines()[0])
    expert = int(first["demonstrations/demonstrations"])
    assert len(written) == expert + 3 and first["demonstrations/option_turns"] == 3
    assert first["demonstrations/option_episodes"] >= 3
    extra = written[expert:]
    assert all(r["response"].startswith("click[") and r["response"] != "click[Buy Now]" for r in extra)
    with pytest.raises(ValueError, match="extra_expert_turns names 'option'"):  # before any model loads
        SFTAgent("no-such-model", "SearchQA-v0", dataclasses.replace(config, env_kwargs={}))
