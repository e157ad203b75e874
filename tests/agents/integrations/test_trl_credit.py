"""agents.integrations.trl: our credit rules inside TRL's GRPOTrainer (tiny model, scripted tool calls)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("trl")

import agentenvs  # noqa: E402,F401  (registers the ids)
from agents.algorithms.base import CreditChoice, CreditContext, make_credit_rule  # noqa: E402
from agents.algorithms.gigpo import GiGPOCredit, GiGPOOptions  # noqa: E402
from agents.algorithms.taspo import TASPOCredit, TASPOOptions  # noqa: E402
from agents.config import GRPOConfig  # noqa: E402
from agents.integrations.trl.trainer import CreditStep, rule_options  # noqa: E402
from tests.support.trl_rollouts import credit_trainer  # noqa: E402

RULES: list[tuple[str, dict[str, Any]]] = [
    ("grpo", {}),
    ("rloo", {}),
    ("gigpo", {"gamma": 0.9}),
    ("orsd", {"coef": 0.5}),
    ("taspo", {"epsilon_w": 0.4, "kappa": 0.0}),
]
"""Every rule, some with a non-default option (the mapping of options is part of what is checked).
TASPO's ``kappa=0``: the random tiny model's PI shifts on ALFWorld are below the default 0.05, so
every turn's support would count as 0 and every weight be 1."""


def test_rule_options_fix_the_pi_pass_options_and_check_the_rest():
    options, choice = rule_options("taspo", {"epsilon_w": 0.3})
    assert options == {"epsilon_w": 0.3, "rescore_without_pi": True, "reuse_prompt_cache": True}
    assert choice == CreditChoice(TASPOCredit, TASPOOptions(**options))  # parsed with the fixed options
    assert rule_options("gigpo", None) == ({}, CreditChoice(GiGPOCredit, GiGPOOptions()))
    with pytest.raises(ValueError, match=r"unknown taspo credit option\(s\) \['eps'\]"):
        rule_options("taspo", {"eps": 1})
    with pytest.raises(ValueError, match="TASPOOptions.epsilon_w must be"):
        rule_options("taspo", {"epsilon_w": 2.0})
    with pytest.raises(ValueError, match="'nope' is not a registered credit rule"):
        rule_options("nope", None)
    with pytest.raises(ValueError, match="credit='vine' plays the current policy on from saved env states"):
        rule_options("vine", None)


def test_importing_agents_or_the_package_imports_no_trl():
    code = (
        "import sys, agents, agents.integrations.trl, agents.integrations.trl.episodes; "
        "assert 'trl' not in sys.modules, 'trl was imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def generate_once(trainer: Any) -> dict[str, Any]:
    """TRL's generation and scoring of one batch (the task row repeated), without the update."""
    trainer.model.train()
    row = dict(trainer.train_dataset[0])
    return trainer._generate_and_score_completions([dict(row) for _ in range(trainer.args.per_device_train_batch_size)])


def placed(advantages: torch.Tensor, step: CreditStep, width: int) -> torch.Tensor:
    """A rule's ``[rows, T]`` advantages at their completion tokens (the trainer's layout)."""
    result = torch.zeros(len(step.advantages), width)
    for row, (completion, start, end) in enumerate(step.places):
        result[completion, start:end] = advantages[row, : end - start]
    return result


@pytest.mark.slow
@pytest.mark.parametrize(("credit", "options"), RULES, ids=[name for name, _ in RULES])
def test_trl_advantages_equal_our_trainers_rule(credit, options, tiny_model_path, tmp_path):
    """On one scripted ALFWorld group (a win and a loss, several turns each), the advantages TRL's
    loss gets equal our trainer's rule, built from our ``GRPOConfig``, on the same turns: with
    our trainer's default ``rescore_without_pi=False`` its no-PI log-probs are the rollout's, here
    the same teacher-forced scores (our trainer samples them; TRL keeps none)."""
    trainer = credit_trainer(
        tiny_model_path,
        tmp_path,
        env_id="ALFWorld-v0",
        credit=credit,
        credit_options=options,
        num_generations=2,
        batch_size=2,
    )
    output = generate_once(trainer)
    step = trainer.last_credit
    assert [env.won for env in trainer.environments] == [True, False]
    assert output["advantages"].shape == output["completion_ids"].shape
    scorer = step.context.policy
    batch = dataclasses.replace(
        step.batch,
        old_logprobs=scorer.score(step.batch.prompts, step.batch.response_ids, response_mask=step.batch.response_mask),
    )
    ours = GRPOConfig(credit=credit, credit_options=options)
    result = make_credit_rule(credit, ours).compute(batch, CreditContext(ours, policy=scorer))
    expected = placed(result.advantages, step, output["completion_ids"].shape[1])
    torch.testing.assert_close(output["advantages"].cpu(), expected, atol=1e-5, rtol=0)
    # Each rule did its own work on this group (not GRPO's broadcast under another name).
    per_row = {row: set(expected[c, s:e].tolist()) for row, (c, s, e) in enumerate(step.places)}
    if credit in ("gigpo", "taspo"):  # a per-turn credit: turns of one trajectory differ
        assert len({round(min(per_row[row]), 6) for row in step.batch.rows_of_trajectory(1)}) > 1
    if credit == "orsd":  # a per-token shaping under the selected rubric
        assert result.stats["orsd/groups_with_rubric"] == 1.0
        assert any(len(values) > 2 for values in per_row.values())


@pytest.mark.slow
def test_grpo_credit_is_trls_own_advantage(tiny_model_path, tmp_path):
    trainer = credit_trainer(
        tiny_model_path, tmp_path, env_id="ALFWorld-v0", credit="grpo", num_generations=2, batch_size=2
    )
    output = generate_once(trainer)
    trls = trainer._logs["advantages"]  # TRL's own (B,) advantages of the batch, kept for its log
    mask = output["completion_mask"] * output["tool_mask"]
    for completion, advantage in enumerate(trls):
        values = output["advantages"][completion][mask[completion].bool()]
        torch.testing.assert_close(values, torch.full_like(values, advantage), atol=1e-6, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["WebShop-v0", "ALFWorld-v0"])
def test_multi_turn_credit_reaches_trls_loss(env_id, tiny_model_path, tmp_path, monkeypatch):
    """TRL parses the scripted tool calls and steps our env; the turns are the model's segments, each
    action span the ``act`` argument; TASPO's per-turn weights reach ``_compute_loss`` and the update."""
    env_kwargs = {"results_per_page": 2} if env_id == "WebShop-v0" else {}
    trainer = credit_trainer(
        tiny_model_path,
        tmp_path,
        env_id=env_id,
        credit="taspo",
        credit_options={"kappa": 0.0},  # the random tiny model's PI shifts are small (see RULES)
        num_generations=2,
        batch_size=2,
        env_kwargs=env_kwargs,
    )
    seen: list[torch.Tensor] = []
    compute_loss = trainer._compute_loss

    def recording(model, inputs):
        seen.append(inputs["advantages"].detach().clone())
        return compute_loss(model, inputs)

    monkeypatch.setattr(trainer, "_compute_loss", recording)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] >= 3 and logged["tools/failure_frequency"] == 0.0
    assert [env.won for env in trainer.environments] == [True, False]
    step = trainer.last_credit
    batch, tokenizer = step.batch, trainer.processing_class
    # Every turn with an env step: its span's tokens decode to the action the env executed.
    for row in range(len(batch)):
        trajectory, turn = int(batch.trajectory_index[row]), int(batch.turn_index[row])
        action = batch.trajectories[trajectory].turns[turn].action
        start, end = batch.action_token_spans[row].tolist()
        if action:
            assert tokenizer.decode(batch.response_ids[row, start:end]).strip() == action
    # The loss got the rule's [B, T] advantages; on the loser's action tokens they differ by turn.
    assert len(seen) == 1 and seen[0].shape == step.advantages.shape
    for row in seen[0].cpu():  # TRL shuffles the rows before the loss
        assert any(torch.equal(row, ours) for ours in step.advantages)
    weights = step.result.token_values["weight"]
    loser_action_weights = {
        round(float(weights[row, int(batch.action_token_spans[row, 0])]), 6)
        for row in batch.rows_of_trajectory(1)
        if int(batch.action_token_spans[row, 0]) >= 0
    }
    assert len(loser_action_weights) > 1
    assert any(not p.detach().equal(b) for p, b in zip(trainer.model.parameters(), before, strict=True))


def single_turn_trainer(model_path: Path, output_dir: Path) -> Any:
    """A CreditGRPOTrainer on one plain prompt (no tools), the tiny model's own chat template, and
    scripted completions: what our trainer's policy renders the same way."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig as TRLConfig

    from agents.integrations.trl import CreditGRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    tokenizer.padding_side = "left"
    texts = ["search[blue shirt]<|im_end|>", "click[back]<|im_end|>"]

    def scripted(prompt_ids, images, multimodal_fields, num_generations, **_):
        return [tokenizer.encode(texts[i % 2], add_special_tokens=False) for i in range(len(prompt_ids))], None

    def reward(completions, **_):
        return [float("search" in completion[0]["content"]) for completion in completions]

    args = TRLConfig(
        output_dir=str(output_dir),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        seed=0,
        bf16=False,
        max_completion_length=16,
        chat_template_kwargs={"enable_thinking": False},
    )
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": "Buy a blue shirt."}]]})
    trainer = CreditGRPOTrainer(
        model=str(model_path), args=args, processing_class=tokenizer, train_dataset=dataset, reward_funcs=reward
    )
    trainer._generate_single_turn = scripted
    return trainer


@pytest.mark.slow
def test_pi_scores_equal_our_policys(tiny_model_path, tmp_path):
    """The PI pass in TRL scores a turn as our trainer's policy does: the same tokens, with the PI
    at the end of the user message, and the same log-probs."""
    from agents.policy.transformers_policy import TransformersPolicy

    trainer = single_turn_trainer(tiny_model_path, tmp_path)
    generate_once(trainer)
    step = trainer.last_credit
    assert step.batch.prompts == ["Buy a blue shirt."] * 2
    assert [t.success for t in step.batch.trajectories] == [True, False]
    policy = TransformersPolicy(str(tiny_model_path))
    prompt, response = step.batch.prompts[0], step.batch.response_ids[:1].repeat(2, 1)
    mask = step.batch.response_mask[:1].repeat(2, 1)
    with_pi = prompt + "\nGuidance from successful attempts at this task:\n- Search for the shirt."
    ours = policy.score([prompt, with_pi], response, response_mask=mask)
    # The rules name each row's original prompt (reuse_from), as ORSD and TASPO do.
    trls = step.context.policy.score([prompt, with_pi], response, response_mask=mask, reuse_from=[prompt, prompt])
    assert not torch.allclose(ours[0], ours[1])  # the PI changes the scores
    torch.testing.assert_close(trls, ours, atol=1e-5, rtol=0)


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", os.environ.get("TOKENIZERS_PARALLELISM", "false"))


def test_credit_batch_needs_whole_groups():
    from agents.integrations.trl.trainer import credit_batch

    with pytest.raises(ValueError, match="3 completions do not make groups of 2"):
        credit_batch([None] * 3, 2, pad_token_id=0)  # type: ignore[list-item]
