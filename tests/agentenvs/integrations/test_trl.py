"""agentenvs.integrations.trl: the adapter alone, then TRL's GRPOTrainer driving it on CPU."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.integrations.trl import EPISODE_OVER, TOOL_NAME, ToolEnvironment, environment_factory, task_dataset

ENV_KWARGS = {"top_k": 1, "max_passage_chars": 120}
"""Short observations keep the scripted rollouts' tool results small."""


def test_rollouts_of_one_row_play_the_same_task():
    rows = task_dataset("SearchQA-v0", num_tasks=3, shuffle_seed=1)
    assert rows.column_names == ["prompt", "task_id"] and len(set(rows["task_id"])) == 3
    make = environment_factory("SearchQA-v0")
    row = rows[1]
    first, second = make(), make()
    assert first.reset(**row) == second.reset(**row)
    assert first.info["task_id"] == second.info["task_id"] == row["task_id"]
    # A seed alone picks the task: the same one for every rollout of the row.
    assert first.reset(seed=7, prompt=row["prompt"]) == second.reset(seed=7, prompt=row["prompt"])
    assert first.info["task_id"] == second.info["task_id"]


def test_a_row_without_task_id_or_seed_is_refused_by_name():
    env = ToolEnvironment("SearchQA-v0")
    with pytest.raises(ValueError, match="'task_id' or a 'seed'"):
        env.reset(prompt=[{"role": "user", "content": ""}])
    with pytest.raises(ValueError, match="unknown task_id 'nope'"):
        env.reset(task_id="nope")
    with pytest.raises(TypeError, match="seed must be an integer >= 0"):
        env.reset(seed="3")


def test_a_full_episode_through_the_tool_and_its_reward():
    env = ToolEnvironment("SearchQA-v0", max_turns=3)
    task_id = env.task_ids[0]
    env.reset(task_id=task_id)
    gold = env._text_env.questions[task_id].answers[0]
    assert env.act("no tags").startswith("Invalid") or not env.info["action_valid"]
    assert env.get_reward() == 0.0 and not env.done
    observation = env.act(f"<answer>{gold}</answer>")
    assert observation.endswith(EPISODE_OVER) and env.done and env.won
    assert env.get_reward() == 1.0
    assert env.act("<answer>again</answer>") == EPISODE_OVER and env.get_reward() == 1.0
    with ToolEnvironment("SearchQA-v0") as fresh, pytest.raises(RuntimeError, match="reset"):
        fresh.act("<search>x</search>")


def test_admissible_actions_can_be_shown():
    env = ToolEnvironment("WebShop-v0", show_admissible_actions=True)
    assert "Admissible actions: search[" in env.reset(seed=0)


def test_the_only_tool_is_act_with_a_schema_transformers_reads():
    pytest.importorskip("transformers")
    import inspect

    from transformers.utils import get_json_schema

    env = ToolEnvironment("SearchQA-v0")
    # What TRL offers as tools: the class's public functions other than reset and get_reward.
    tools = [
        name
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    ]
    assert tools == [TOOL_NAME]
    schema = get_json_schema(env.act)["function"]
    assert schema["name"] == TOOL_NAME
    assert schema["parameters"]["properties"]["action"]["type"] == "string"
    assert schema["parameters"]["required"] == ["action"]


# -- TRL's GRPOTrainer ------------------------------------------------------------------------------


@pytest.fixture()
def trl_tokenizer(tiny_model_path):
    """The tiny Qwen3's tokenizer with TRL's own Qwen3 chat template, which can call tools.

    The tiny model ships a plain ChatML template without tool calls; TRL refuses it for
    ``environment_factory`` ("does not support tool calling"). Its vocabulary is Qwen's, so
    Qwen3's template (and TRL's Qwen3 response parser) fit it.
    """
    trl = pytest.importorskip("trl")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    tokenizer.padding_side = "left"
    return tokenizer


def grpo_trainer(tiny_model_path, tokenizer, tmp_path, monkeypatch, **config):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=2,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        seed=0,
        bf16=False,
        learning_rate=1e-3,
        **config,
    )
    return GRPOTrainer(
        model=str(tiny_model_path),
        args=args,
        processing_class=tokenizer,
        train_dataset=task_dataset("SearchQA-v0", num_tasks=2, shuffle_seed=0, **ENV_KWARGS),
        environment_factory=environment_factory("SearchQA-v0", **ENV_KWARGS),
    )


@pytest.mark.slow
def test_grpo_trainer_takes_a_step_with_the_model_generating(tiny_model_path, trl_tokenizer, tmp_path, monkeypatch):
    trainer = grpo_trainer(tiny_model_path, trl_tokenizer, tmp_path, monkeypatch, max_completion_length=8)
    trainer.train()
    logged = trainer.state.log_history[0]
    assert trainer.state.global_step == 1
    assert "rewards/ToolEnvironment/mean" in logged and "tools/call_frequency" in logged
    # Each pair of rollouts (num_generations=2) was reset with one row, so plays one task.
    task_ids = [env.info["task_id"] for env in trainer.environments]
    assert task_ids[0] == task_ids[1] and task_ids[2] == task_ids[3] and task_ids[0] != task_ids[2]


@pytest.mark.slow
def test_grpo_trainer_runs_tool_calls_through_the_env(tiny_model_path, trl_tokenizer, tmp_path, monkeypatch):
    """The random model seldom writes a well-formed tool call, so the generations are scripted.

    Everything else is TRL's: parsing the tool calls, calling ``act``, appending the results,
    scoring with ``get_reward`` and the GRPO update. Per group, the first rollout searches for
    its question and answers it; the second searches for nothing and answers wrong.
    """
    trainer = grpo_trainer(
        tiny_model_path, trl_tokenizer, tmp_path, monkeypatch, max_completion_length=768, max_tool_calling_iterations=3
    )
    probe = gym.make("SearchQA-v0").unwrapped
    gold = {example.question: example.answers[0] for example in probe.questions.values()}
    first_turns = 0

    def call(action: str) -> str:
        arguments = json.dumps({"name": TOOL_NAME, "arguments": {"action": action}})
        return f"<tool_call>\n{arguments}\n</tool_call><|im_end|>"

    def scripted(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        nonlocal first_turns
        texts = []
        for ids in prompt_ids:
            seen = trl_tokenizer.decode(ids)
            question = re.findall(r"Question: (.*)", seen)[0]
            if "Your answer:" in seen:
                texts.append("Done.<|im_end|>")
            elif re.search(r"<information>(Doc|No results)", seen):  # the instruction names the tag too
                wrong = "<search>nothing</search>" in seen
                texts.append(call("<answer>" + ("wrong" if wrong else gold[question]) + "</answer>"))
            else:
                texts.append(call("<search>nothing</search>" if first_turns % 2 else f"<search>{question}</search>"))
                first_turns += 1
        return [trl_tokenizer.encode(text, add_special_tokens=False) for text in texts], None

    monkeypatch.setattr(trainer, "_generate_single_turn", scripted)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] == 2.0 and logged["tools/failure_frequency"] == 0.0
    assert logged["rewards/ToolEnvironment/mean"] == 0.5 and logged["reward_std"] > 0
    assert [env.won for env in trainer.environments] == [True, False, True, False]
    assert [env.get_reward() for env in trainer.environments] == [1.0, 0.0, 1.0, 0.0]
    assert any(not p.detach().equal(b) for p, b in zip(trainer.model.parameters(), before, strict=True))


def test_the_env_records_every_act_call_for_credit_rules():
    env = ToolEnvironment("SearchQA-v0", max_turns=2)
    shown = env.reset(task_id=env.task_ids[0])
    assert env.reset_observation == shown and env.reset_info["task_id"] == env.task_ids[0] and env.steps == ()
    first = env.act("<search>capital</search>")
    env.act("no tags")
    after = env.act("<answer>x</answer>")  # the episode ended at max_turns: no step
    assert [step.shown for step in env.steps] == [first, env.steps[1].shown, after] and after == EPISODE_OVER
    assert [step.stepped for step in env.steps] == [True, True, False]
    assert [step.valid for step in env.steps] == [True, False, False]
    assert env.steps[0].info["action_valid"] and env.steps[2].info == {}
    env.reset(task_id=env.task_ids[1])
    assert env.steps == ()
