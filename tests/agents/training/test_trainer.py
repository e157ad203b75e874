import inspect
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agentenvs.core.registration import env_constructor
from agents import GRPOAgent, GRPOConfig
from agents.algorithms.base import CreditResult, CreditRule
from agents.runs.credit_record import read_step, recorded_steps
from agents.settings import EnvSettings
from tests.support.rules import registered_rule

REPO = Path(__file__).resolve().parents[3]

# A run on the tiny random model: its rewards are all equal (GRPO advantages 0), so the
# resume test uses a rule with non-zero advantages to make the weights, and hence what
# is sampled next, move.
RUN_SCRIPT = r"""
import json, os, signal, sys, torch
from agents import GRPOAgent, GRPOConfig
from agents.algorithms.base import CreditResult, CreditRule, register_credit_rule
from agents.training.trainer import Trainer

@register_credit_rule("alternating_sign")
class AlternatingSign(CreditRule):
    def compute(self, batch, context):
        sign = 1.0 - 2.0 * (batch.trajectory_index % 2).float()
        return CreditResult(sign[:, None] * batch.response_mask, examples=[{"rows": len(batch)}])

settings = json.loads(sys.argv[1])
kill_after = settings.pop("kill_after_step")
total = settings.pop("total_steps")
if kill_after is not None:
    log = Trainer._log
    def log_then_die(self, record):
        log(self, record)
        if record["step"] == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
    Trainer._log = log_then_die
agent = GRPOAgent(model=settings.pop("model"), env="SearchQA-v0", config=GRPOConfig(**settings))
agent.learn(total, plot=False)
"""


def _run(tmp_path, model, output_dir, total_steps, kill_after_step=None, resume=False):
    settings = dict(
        model=str(model),
        total_steps=total_steps,
        kill_after_step=kill_after_step,
        credit="alternating_sign",
        num_groups=2,
        group_size=2,
        max_new_tokens=4,
        env_kwargs={"max_turns": 2},
        eval_every=2,
        save_every=1,
        eval_episodes=2,
        eval_greedy=False,
        learning_rate=1e-2,
        micro_batch_size=3,
        num_iterations=1,
        mini_batches=2,
        lr_scheduler_type="cosine",
        warmup_steps=1,
        beta=0.05,
        output_dir=str(output_dir),
        resume=resume,
        progress=False,
        tensorboard=True,
    )
    env = {**os.environ, "AGENTENVS_CACHE": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-c", RUN_SCRIPT, json.dumps(settings)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _metrics(folder):
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]


@pytest.mark.slow
def test_resume_after_sigkill_reproduces_an_uninterrupted_run(tmp_path, tiny_model_path):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    done = _run(tmp_path, tiny_model_path, straight, total_steps=3)
    assert done.returncode == 0, done.stderr[-2000:]
    killed = _run(tmp_path, tiny_model_path, resumed, total_steps=3, kill_after_step=2)
    assert killed.returncode == -signal.SIGKILL
    assert [r["step"] for r in _metrics(resumed)] == [0, 1, 2]  # step 2 logged, never checkpointed
    assert (resumed / "checkpoints" / "latest").read_text().strip() == "step_1"
    assert recorded_steps(resumed) == [1, 2]  # the credit records of step 2 too
    (resumed / "credit" / "step_2.jsonl").write_text('{"torn": ')  # as if killed mid-write
    again = _run(tmp_path, tiny_model_path, resumed, total_steps=3, resume=True)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resumed from" in again.stdout and "(step 1)" in again.stdout
    expected, got = _metrics(straight), _metrics(resumed)
    assert [r["step"] for r in got] == [0, 1, 2, 3]
    assert any(abs(r["loss"]) > 0 for r in expected if "loss" in r)  # the weights really moved
    assert got == expected
    # Step 2's records were dropped on resume and written again: the same as the straight run's.
    assert recorded_steps(resumed) == recorded_steps(straight) == [1, 2, 3]
    for step in (1, 2, 3):
        assert read_step(resumed, step) == read_step(straight, step) != []
    # The rule's examples (steps 1 and 2: eval_every=2) are not duplicated either.
    examples = (resumed / "credit_examples.jsonl").read_text()
    assert examples == (straight / "credit_examples.jsonl").read_text()
    assert [json.loads(line)["step"] for line in examples.splitlines()] == [1, 2]


def test_learn_end_to_end_on_searchqa(tmp_path, tiny_model_path):
    config = GRPOConfig(
        num_groups=2,
        group_size=2,
        max_new_tokens=5,
        env_kwargs={"max_turns": 2},
        eval_every=1,
        eval_episodes=2,
        save_every=1,
        output_dir=str(tmp_path / "run"),
        progress=False,
        learning_rate=1e-3,
    )
    agent = GRPOAgent(model=str(tiny_model_path), env="SearchQA-v0", config=config)
    try:
        record = agent.learn(2)
        evaluation = agent.evaluate(episodes=2)
    finally:
        agent.close()
    run = tmp_path / "run"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1, 2] and record["step"] == 2
    for key in ("train/success_rate", "train/invalid_rate", "loss", "eval/success_rate", "eval/mean_episode_length"):
        assert key in records[-1]
    assert set(evaluation) >= {"success_rate", "mean_score", "mean_episode_length", "invalid_rate"}
    assert (run / "learning_curve.png").stat().st_size > 1000
    assert list((run / "tensorboard").glob("events.out.tfevents.*"))
    assert (run / "checkpoints" / "latest").read_text().strip() == "step_2"
    assert (run / "trajectories" / "eval_step_2.jsonl").is_file()
    assert json.loads((run / "config.json").read_text())["config"]["num_groups"] == 2
    assert recorded_steps(run) == [1, 2]  # record_groups=2 of the 2 groups, every step
    assert [(r["group"], r["member"]) for r in read_step(run, 2)] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def _agentenvs_ids():
    import gymnasium as gym

    import agentenvs  # noqa: F401

    return sorted(
        k
        for k, spec in gym.registry.items()
        if isinstance(spec.entry_point, str) and spec.entry_point.startswith("agentenvs.")
    )


def _one_group_config(tmp_path, **fields) -> GRPOConfig:
    """A one-step-sized run on the tiny model: one group of two, 4-token responses, one-turn
    episodes, one evaluation episode, no checkpoints, progress bars or TensorBoard."""
    settings = dict(
        num_groups=1,
        group_size=2,
        max_new_tokens=4,
        env_kwargs={"max_turns": 1},
        eval_episodes=1,
        save_every=0,
        output_dir=str(tmp_path),
        progress=False,
        tensorboard=False,
    )
    return GRPOConfig(**{**settings, **fields})


@pytest.mark.parametrize("env_id", [e for e in _agentenvs_ids() if e != "SearchQA-v0"])
def test_learn_runs_on_every_registered_env(env_id, tmp_path, tiny_model_path):
    import gymnasium as gym

    try:
        gym.make(env_id).close()
    except (ImportError, FileNotFoundError) as error:
        pytest.skip(f"{env_id} is not usable here: {error}")
    # Two turns where the env takes a turn limit (the diagnostic envs' chains fix their own length).
    takes_limit = "max_turns" in inspect.signature(env_constructor(env_id)).parameters
    config = _one_group_config(tmp_path, env_kwargs={"max_turns": 2} if takes_limit else {})
    agent = GRPOAgent(model=str(tiny_model_path), env=env_id, config=config)
    try:
        record = agent.learn(1, plot=False)
    finally:
        agent.close()
    assert record["step"] == 1 and record["train/mean_episode_length"] >= 1
    assert 0.0 <= record["eval/success_rate"] <= 1.0


def test_trainer_applies_any_registered_rule_and_updates_weights(tmp_path, tiny_model_path):
    class PlusOne(CreditRule):
        def compute(self, batch, context):
            assert context.score(
                batch.prompts[:1], batch.response_ids[:1], response_mask=batch.response_mask[:1]
            ).shape == (1, batch.response_ids.shape[1])
            return CreditResult(batch.response_mask.float())

    with registered_rule("plus_one", PlusOne):  # a config names a rule once it is registered
        config = _one_group_config(tmp_path, credit="plus_one", learning_rate=1e-2)
        agent = GRPOAgent(model=str(tiny_model_path), env="SearchQA-v0", config=config)
        before = {k: v.clone() for k, v in agent.policy.trainable_state_dict().items()}
        agent.learn(1, plot=False)
        after = agent.policy.trainable_state_dict()
        assert any(not torch.equal(before[k], after[k]) for k in before)
        agent.close()


def test_the_eval_split():
    assert EnvSettings(max_turns=2).held_out_env_kwargs("SearchQA-v0") == {"max_turns": 2, "split": "test"}


def test_evaluation_uses_the_split_each_env_declares_held_out():
    import gymnasium as gym

    from tests.support.privileged import register_letter_hunt

    assert EnvSettings().held_out_env_kwargs("WebShop-v0") == {"split": "test"}
    assert EnvSettings().held_out_env_kwargs("ALFWorld-v0") == {"split": "eval_in_distribution"}
    chosen = EnvSettings(env_kwargs={"split": "all"})
    assert chosen.held_out_env_kwargs("SearchQA-v0") == {"split": "all"}  # the user's choice stays
    assert EnvSettings(max_turns=1).held_out_env_kwargs(register_letter_hunt()) == {"max_turns": 1}  # no splits
    for env_id in ("SearchQA-v0", "WebShop-v0"):  # the declared split is one the env accepts
        gym.make(env_id, **EnvSettings().held_out_env_kwargs(env_id)).close()
    evaluation = GRPOConfig(max_turns=2, eval_env_kwargs={"max_turns": 3}).evaluation_env_kwargs("SearchQA-v0")
    assert evaluation == {"max_turns": 3, "split": "test"}  # eval_env_kwargs override the rest


def _lora_trainer(tmp_path, tiny_model_path, **overrides):
    """A trainer with LoRA on the tiny model's top layer (non-zero weights, so the adapter matters)."""
    from agents.agent import build_policy
    from agents.training.trainer import Trainer

    settings = dict(
        num_groups=2,
        group_size=2,
        max_new_tokens=5,
        env_kwargs={"max_turns": 3},
        lora=True,
        lora_rank=2,
        lora_alpha=4,
        lora_top_layers=1,
        output_dir=str(tmp_path),
        progress=False,
        tensorboard=False,
    )
    config = GRPOConfig(**{**settings, **overrides})
    policy = build_policy(str(tiny_model_path), config)
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0.0, 0.5)
    return Trainer(policy, "SearchQA-v0", config)


@pytest.mark.parametrize("rollout_mode", ["per_turn", "conversation"])
def test_update_log_probs_from_chains_and_trunk_states_equal_per_turn_full_forwards(
    rollout_mode, tmp_path, tiny_model_path
):
    from dataclasses import replace

    trainer = _lora_trainer(tmp_path, tiny_model_path, rollout_mode=rollout_mode)
    policy = trainer.policy
    try:
        with policy.keeping_trunk_hiddens():
            batch, _ = trainer.collector.collect(seed=0)
    finally:
        trainer.close()
    chains = batch.prefix_chains()
    assert batch.trunk_hiddens is not None and len(batch.trunk_hiddens) == len(batch)
    assert (max(len(c) for c in chains) > 1) == (rollout_mode == "conversation")
    parameters = policy.trainable_parameters()
    per_turn = policy.token_logprobs(batch.prompt_ids, batch.prompt_mask, batch.response_ids, batch.response_mask)
    expected_grads = torch.autograd.grad(per_turn.sum(), parameters)
    assert torch.allclose(per_turn, batch.old_logprobs, atol=1e-4)  # sampled = teacher-forced
    for kept in (batch, replace(batch, trunk_hiddens=None)):
        scored = trainer.batch_logprobs(kept)
        assert torch.allclose(scored, per_turn, atol=1e-4)
        for expected, got in zip(expected_grads, torch.autograd.grad(scored.sum(), parameters), strict=True):
            assert torch.allclose(expected, got, atol=1e-4)


def test_learn_with_trunk_cache_in_conversation_mode(tmp_path, tiny_model_path):
    trainer = _lora_trainer(
        tmp_path, tiny_model_path, rollout_mode="conversation", beta=0.05, eval_episodes=2, save_every=0, mini_batches=2
    )
    assert trainer.trunk_cache
    try:
        record = trainer.learn(1)
    finally:
        trainer.close()
    assert record["step"] == 1 and "loss" in record and record["train/mean_episode_length"] >= 1


@pytest.mark.slow
@pytest.mark.parametrize(("credit", "options"), [("taspo", {"pi_source": "unaligned"}), ("orsd", {"coef": 0.5})])
def test_privileged_credit_in_conversation_mode_with_and_without_the_kept_kv(
    tmp_path, tiny_model_path, credit, options
):
    from agents.agent import build_policy
    from agents.training.trainer import Trainer
    from tests.support.privileged import register_letter_hunt

    def run(folder, **extra):
        config = GRPOConfig(
            credit=credit,
            credit_options={"placement": "prompt_end", **options, **extra},
            rollout_mode="conversation",
            num_groups=2,
            group_size=4,
            max_new_tokens=4,
            temperature=1.5,
            seed=1,
            lora=True,
            lora_rank=2,
            lora_alpha=4,
            lora_top_layers=1,
            eval_episodes=1,
            save_every=0,
            output_dir=str(tmp_path / folder),
            progress=False,
            tensorboard=False,
        )
        trainer = Trainer(build_policy(str(tiny_model_path), config), register_letter_hunt(), config)
        try:
            return trainer.learn(1)
        finally:
            trainer.close()

    plain, reused = run("plain", reuse_prompt_cache=False), run("reused", reuse_prompt_cache=True)
    activity = {"taspo": "taspo/pi_coverage", "orsd": "orsd/groups_with_rubric"}[credit]
    assert plain[activity] > 0, "the PI pass never ran"
    for key, value in plain.items():
        if key == "loss" or key.startswith((credit + "/", "train/")):
            assert reused[key] == pytest.approx(value, rel=1e-3, abs=1e-4), key


def test_credit_examples_are_logged_at_the_first_step_that_has_any_then_at_evaluation_steps(tmp_path, tiny_model_path):
    calls = []

    class ActsFromStep2(CreditRule):
        def compute(self, batch, context):
            calls.append(len(batch))
            examples = [{"call": len(calls)}] if len(calls) >= 2 else []
            return CreditResult(batch.response_mask.float(), examples=examples)

    with registered_rule("acts_from_step_2", ActsFromStep2):
        config = _one_group_config(tmp_path, credit="acts_from_step_2", eval_every=4)
        agent = GRPOAgent(model=str(tiny_model_path), env="SearchQA-v0", config=config)
        agent.learn(4, plot=False)
        agent.close()
    logged = [json.loads(line) for line in (tmp_path / "credit_examples.jsonl").read_text().splitlines()]
    # Step 1 had none; step 2 is the first with any; step 3 is neither first nor evaluated.
    assert [(r["step"], r["call"]) for r in logged] == [(2, 2), (4, 4)]


def _update_once(trainer, advantages_of):
    """Collects one batch, updates on ``advantages_of(batch)`` and returns (batch, new weights, the rows
    of each micro-batch the update scored)."""
    with trainer.policy.keeping_trunk_hiddens():
        batch, _ = trainer.collector.collect(seed=0)
    calls = []
    score = trainer.batch_logprobs

    def spy(sub, **kwargs):
        calls.append(sub)
        return score(sub, **kwargs)

    trainer.batch_logprobs = spy
    trainer.update(batch, advantages_of(batch))
    return batch, [p.detach().clone() for p in trainer.policy.trainable_parameters()], calls


def _lengths(sub):
    return sorted(int(p + r) for p, r in zip(sub.prompt_mask.sum(1), sub.response_mask.sum(1), strict=True))


def test_micro_batches_hold_prompt_units_of_similar_length_and_give_the_mini_batchs_update(tmp_path, tiny_model_path):
    weights, seen = {}, {}
    for micro in (1, 64):
        trainer = _lora_trainer(tmp_path / str(micro), tiny_model_path, micro_batch_size=micro, mini_batches=1)
        try:
            batch, weights[micro], seen[micro] = _update_once(
                trainer, lambda b: torch.linspace(0.1, 1.0, len(b))[:, None] * b.response_mask
            )
        finally:
            trainer.close()
    units = batch.prompt_units(batch.prefix_chains())
    assert len(units) < len(batch), "no group shared a prompt: the test proves nothing about packing"
    assert len(seen[64]) == 1 and len(seen[1]) == len(units)
    # Shortest units first: each micro-batch's rows are no longer than the next one's.
    assert all(max(_lengths(a)) <= min(_lengths(b)) for a, b in zip(seen[1], seen[1][1:], strict=False))
    lengths = (batch.prompt_mask.sum(dim=1) + batch.response_mask.sum(dim=1)).tolist()
    assert sorted(n for sub in seen[1] for n in _lengths(sub)) == sorted(lengths)
    for sub in seen[1]:  # a micro-batch of one unit: one prompt
        assert len({tuple(sub.row_tokens(row)[0]) for row in range(len(sub))}) == 1
    for split, whole in zip(weights[1], weights[64], strict=True):
        torch.testing.assert_close(split, whole, atol=1e-5, rtol=1e-4)


def test_a_policy_that_does_not_share_prompts_scores_each_chain_in_its_own_row(tmp_path, tiny_model_path):
    trainer = _lora_trainer(tmp_path, tiny_model_path, micro_batch_size=1, mini_batches=1)
    trainer.policy.share_prompts = False
    try:
        batch, _, calls = _update_once(trainer, lambda b: torch.linspace(0.1, 1.0, len(b))[:, None] * b.response_mask)
    finally:
        trainer.close()
    assert len(batch.prompt_units(batch.prefix_chains())) < len(calls) == len(batch.prefix_chains())


@pytest.mark.parametrize("zero", ["some", "all"])
def test_chains_without_advantage_are_not_scored_and_change_nothing(tmp_path, tiny_model_path, zero):
    def advantages(batch, tiny):
        values = torch.linspace(0.5, 1.0, len(batch)) if zero == "some" else torch.zeros(len(batch))
        values[::2] = tiny  # every other row: no advantage (0), or one too small to count (1e-30)
        return values[:, None] * batch.response_mask

    runs = {}
    for tiny in (0.0, 1e-30):
        trainer = _lora_trainer(tmp_path / str(tiny), tiny_model_path, mini_batches=2)
        try:
            runs[tiny] = _update_once(trainer, lambda b, tiny=tiny: advantages(b, tiny))
        finally:
            trainer.close()
    for tiny, (batch, _, calls) in runs.items():
        moving = int(advantages(batch, tiny).ne(0).any(dim=1).sum())
        assert sum(len(sub) for sub in calls) == moving
    assert sum(len(sub) for sub in runs[0.0][2]) < sum(len(sub) for sub in runs[1e-30][2])
    if zero == "all":
        assert runs[0.0][2] == []  # nothing scored: the optimizer stepped on zero gradients
    for without, with_tiny in zip(runs[0.0][1], runs[1e-30][1], strict=True):
        torch.testing.assert_close(without, with_tiny, atol=1e-6, rtol=1e-5)
