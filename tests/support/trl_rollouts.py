"""Scripted TRL rollouts for the credit-trainer tests: fixed tool calls in place of the tiny model's text.

The tiny random model writes no valid tool call, so :class:`ScriptedAgent` stands in for
``GRPOTrainer._generate_single_turn``: every other rollout of a group follows the env's expert
(a win), the rest follow a fixed losing path; a rollout's turn is the number of tool results in
its conversation so far. Everything else is TRL's: parsing the calls, stepping the envs, the
rewards and the update.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentenvs.integrations.trl import ToolEnvironment, environment_factory, task_dataset


def tool_tokenizer(model_path: Path) -> Any:
    """The tiny Qwen3's tokenizer with TRL's Qwen3 chat template (which calls tools), left padding."""
    import trl
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    tokenizer.padding_side = "left"
    return tokenizer


def tool_call(action: str) -> str:
    """A Qwen3 tool call of ``act`` with ``action``, ending the turn."""
    arguments = json.dumps({"name": "act", "arguments": {"action": action}})
    return f"<tool_call>\n{arguments}\n</tool_call><|im_end|>"


def expert_path(env_id: str, task_id: str, **env_kwargs: Any) -> list[str]:
    """The env's expert actions from reset to the end of the task."""
    env = ToolEnvironment(env_id, **env_kwargs)
    env.reset(task_id=task_id)
    actions: list[str] = []
    while not env.done and len(actions) < 20:
        action = env._text_env.expert_action()  # type: ignore[attr-defined]
        if action is None:
            break
        actions.append(action)
        env.act(action)
    assert env.won, f"{env_id} task {task_id}: the expert did not win"
    return actions


def losing_path(env_id: str, task_id: str, **env_kwargs: Any) -> list[str]:
    """Valid actions that do not win: a vague search and the first other product (WebShop), or a
    look around then the expert's first steps without finishing (ALFWorld)."""
    expert = expert_path(env_id, task_id, **env_kwargs)
    if env_id.startswith("ALFWorld"):
        return ["look", *expert[:2], "inventory"]
    env = ToolEnvironment(env_id, **env_kwargs)
    env.reset(task_id=task_id)
    search = "search[something useful]"
    env.act(search)
    target = expert[1]
    click = next(a for a in env.info["admissible_actions"] if a.startswith("click[B") and a != target)
    return [search, click, "click[Buy Now]"]


class ScriptedAgent:
    """``_generate_single_turn`` replaced by fixed paths: rollouts alternate winning and losing paths
    by their index in the whole batch (``first_index``: this process's first), told apart later by
    their first call; each turn the path's next action, then a closing line."""

    def __init__(self, tokenizer: Any, winning: list[str], losing: list[str], first_index: int = 0) -> None:
        self.tokenizer = tokenizer
        self.paths = (winning, losing)
        self.first_index = first_index

    def __call__(
        self, prompt_ids: list[list[int]], images: Any, multimodal_fields: Any, num_generations: int, **_: Any
    ) -> tuple[list[list[int]], None]:
        texts = []
        for index, ids in enumerate(prompt_ids):
            seen = self.tokenizer.decode(ids)
            turn = seen.count("<tool_response>")
            if turn == 0:  # the first call holds every rollout of this process, in order
                path = self.paths[(self.first_index + index) % 2]
            else:
                first = json.dumps({"name": "act", "arguments": {"action": self.paths[0][0]}})
                path = self.paths[0] if first in seen else self.paths[1]
            texts.append(tool_call(path[turn]) if turn < len(path) else "Done.<|im_end|>")
        return [self.tokenizer.encode(text, add_special_tokens=False) for text in texts], None


def credit_trainer(
    model_path: Path,
    output_dir: Path,
    *,
    env_id: str,
    credit: str,
    credit_options: dict[str, Any] | None = None,
    num_generations: int = 4,
    batch_size: int = 4,
    max_steps: int = 1,
    reward_funcs: Any = None,
    plain: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    **config: Any,
) -> Any:
    """A ``CreditGRPOTrainer`` on one task of ``env_id`` with scripted generations (see the module
    docstring); ``plain``: TRL's own ``GRPOTrainer`` instead (``credit`` unused)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from agents.integrations.trl import CreditGRPOTrainer

    env_kwargs = dict(env_kwargs or {})
    tokenizer = tool_tokenizer(model_path)
    dataset = task_dataset(env_id, num_tasks=1, **env_kwargs)
    task_id = dataset[0]["task_id"]
    settings: dict[str, Any] = {
        "output_dir": str(output_dir),
        "max_steps": max_steps,
        "per_device_train_batch_size": batch_size,
        "num_generations": num_generations,
        "report_to": [],
        "use_cpu": True,
        "logging_steps": 1,
        "save_strategy": "no",
        "seed": 0,
        "bf16": False,
        "learning_rate": 1e-3,
        "max_completion_length": 3072,
        "max_tool_calling_iterations": 6,
    }
    args = GRPOConfig(**{**settings, **config})
    credit_arguments = {} if plain else {"credit": credit, "credit_options": credit_options}
    trainer = (GRPOTrainer if plain else CreditGRPOTrainer)(
        model=str(model_path),
        args=args,
        processing_class=tokenizer,
        train_dataset=dataset,
        environment_factory=environment_factory(env_id, **env_kwargs),
        **({} if reward_funcs is None else {"reward_funcs": reward_funcs}),
        **credit_arguments,
    )
    winning, losing = expert_path(env_id, task_id, **env_kwargs), losing_path(env_id, task_id, **env_kwargs)
    first_index = trainer.accelerator.process_index * batch_size
    trainer._generate_single_turn = ScriptedAgent(tokenizer, winning, losing, first_index)
    return trainer
