"""One TRL completion as our rules read it: a trajectory of turns, one rollout row per turn.

TRL hands over, per completion, the prompt messages, the token ids, ``tool_mask`` and the parsed
messages (assistant turns with their tool calls, the tool results); the env instance TRL made for
it (an :class:`~agentenvs.integrations.trl.ToolEnvironment`) recorded every ``act`` call
(:attr:`~agentenvs.integrations.trl.ToolEnvironment.steps`). :func:`completion_episode` joins
them: turn ``k`` is the ``k``-th run of model tokens; what it acted on is the message before it
(the prompt's last message for turn 0, the last tool result after that); its action, reward,
validity and info are the env steps of its ``act`` calls; the outcome (``success``, ``score``) is
the env's, and the trajectory's ``reward`` is TRL's (the weighted sum of the reward functions,
what GRPO normalises). Without an env (plain reward functions) the completion is one turn whose
action is all of it, and it counts as a success when its reward is above 0.

The :class:`Episode` (text, ids, outcomes) is plain data, gathered across processes; the
:class:`RowContext` of each of this process's rows (its exact token context and how to render it
with PI) stays here, for the PI pass (:mod:`agents.integrations.trl.scoring`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentenvs.core.privileged import privileged_of
from agentenvs.core.trajectory import ActionSpan, Trajectory, Turn, to_json_value
from agentenvs.integrations.trl import TOOL_NAME, ToolEnvironment, ToolStep
from agents.integrations.trl.turns import action_token_span, model_runs

Messages = list[dict[str, Any]]
Render = Callable[[str], list[int]]
"""The last message before a turn, with the given content, as tokens (generation header included)."""


@dataclass
class TurnRow:
    """One turn of one completion (plain data: gathered across processes).

    Attributes:
        start: First completion token of the turn.
        end: One past its last.
        prompt: The content of the message the turn answers (the rule's prompt text: PI goes into it).
        response_ids: The turn's tokens.
        action_span: ``[start, end)`` of the action's tokens within the turn, or None.
    """

    start: int
    end: int
    prompt: str
    response_ids: list[int]
    action_span: tuple[int, int] | None


@dataclass
class Episode:
    """One completion: its trajectory (turns, outcome, TRL's reward) and its turn rows, in order."""

    trajectory: Trajectory
    rows: list[TurnRow]


@dataclass
class RowContext:
    """A turn's exact token context, and how to render it with other content in its last message.

    Attributes:
        ids: Every token before the turn, as TRL fed them.
        prefix_ids: The tokens before the last message.
        render: The last message (plus the generation header) with given content, as tokens;
            ``prefix_ids + render(original content)`` is ``ids`` (checked when built).
    """

    ids: list[int]
    prefix_ids: list[int]
    render: Render

    def with_content(self, content: str, original: str) -> list[int]:
        """The context with the last message's content replaced (``ids`` when unchanged)."""
        return self.ids if content == original else self.prefix_ids + self.render(content)


@dataclass(frozen=True)
class Renderers:
    """How the trainer renders messages into tokens (TRL's chat template, tools and kwargs).

    Attributes:
        prompt: A whole prompt (messages) with the generation header, as TRL tokenises it.
        tool_results: The tokens TRL appends for trailing tool messages (``_get_tool_suffix_ids``).
    """

    prompt: Callable[[Messages], list[int]]
    tool_results: Callable[[Messages], list[int]]


def message_blocks(messages: Messages) -> list[tuple[dict[str, Any], Messages]]:
    """Each assistant message with the tool messages after it.

    >>> message_blocks([{"role": "assistant"}, {"role": "tool", "name": "act"}, {"role": "assistant"}])
    [({'role': 'assistant'}, [{'role': 'tool', 'name': 'act'}]), ({'role': 'assistant'}, [])]
    """
    blocks: list[tuple[dict[str, Any], Messages]] = []
    for message in messages:
        if message.get("role") == "assistant":
            blocks.append((message, []))
        elif message.get("role") == "tool" and blocks:
            blocks[-1][1].append(message)
    return blocks


def called_actions(message: dict[str, Any], tool_name: str = TOOL_NAME) -> list[str]:
    """The ``action`` arguments of the message's ``tool_name`` calls, in order.

    >>> called_actions({"tool_calls": [{"type": "function", "function": {"name": "act", "arguments": {"action": "look"}}}]})
    ['look']
    """
    actions = []
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments")
        if (
            function.get("name") == tool_name
            and isinstance(arguments, dict)
            and isinstance(arguments.get("action"), str)
        ):
            actions.append(arguments["action"])
    return actions


def consume_steps(
    results: Messages, steps: Sequence[ToolStep], cursor: int, tool_name: str
) -> tuple[list[ToolStep], int]:
    """The env steps behind a turn's tool results: each ``tool_name`` result that is the next
    recorded step's text (a failed call, e.g. bad arguments, never reached the env)."""
    taken: list[ToolStep] = []
    for result in results:
        if result.get("name") == tool_name and cursor < len(steps) and steps[cursor].shown == result.get("content"):
            taken.append(steps[cursor])
            cursor += 1
    return taken, cursor


def _text(content: Any) -> str:
    """A message's content as text (multimodal parts: their text joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def completion_episode(
    *,
    prompt: Messages | str,
    prompt_ids: Sequence[int],
    completion_ids: Sequence[int],
    tool_mask: Sequence[int] | None,
    messages: Messages | str,
    environment: ToolEnvironment | None,
    reward: float,
    group_id: int,
    task_id: str,
    tokenizer: Any,
    renderers: Renderers,
    tool_name: str = TOOL_NAME,
) -> tuple[Episode, list[RowContext]]:
    """One completion as an :class:`Episode`, with its rows' :class:`RowContext` (see the module docstring).

    Args:
        prompt: The prompt as generated from (messages, the env's first observation appended).
        prompt_ids: Its tokens.
        completion_ids: The completion's tokens (unpadded).
        tool_mask: 1 on model tokens, 0 on tool results (None without tools).
        messages: TRL's parsed completion (assistant and tool messages), or its text.
        environment: The env instance TRL stepped for this completion, or None.
        reward: TRL's reward of the completion.
        group_id: Its group (the ``num_generations`` completions of one prompt).
        task_id: Its task where the env names none.
        tokenizer: The tokenizer (decoding turns to find the action).
        renderers: TRL's chat rendering.
        tool_name: The env's action tool.
    """
    prompt_ids, completion_ids = [int(t) for t in prompt_ids], [int(t) for t in completion_ids]
    runs = model_runs(tool_mask, len(completion_ids))
    blocks = message_blocks(messages) if isinstance(messages, list) else []
    steps = environment.steps if environment is not None else ()
    first_content = _text(prompt[-1]["content"]) if isinstance(prompt, list) else prompt
    turns: list[Turn] = []
    rows: list[TurnRow] = []
    contexts: list[RowContext] = []
    cursor, last_shown = 0, environment.reset_observation if environment is not None else first_content
    previous_results: Messages = []
    for index, (start, end) in enumerate(runs):
        message, results = blocks[index] if index < len(blocks) else ({}, [])
        response = completion_ids[start:end]
        if index == 0:
            content, context = first_content, _first_context(prompt, prompt_ids, renderers)
        else:
            content = _text(previous_results[-1]["content"]) if previous_results else ""
            context = _tool_context(prompt_ids + completion_ids[:start], previous_results, renderers)
        taken, cursor = consume_steps(results, steps, cursor, tool_name)
        actions = [step.action for step in taken] or called_actions(message, tool_name)
        if environment is None and not blocks:  # no tools: the whole completion is the action
            actions = [str(tokenizer.decode(response, skip_special_tokens=True))]
        action = actions[0] if actions else ""
        span = action_token_span(tokenizer, response, action) if action else None
        turns.append(
            Turn(
                observation=last_shown if index == 0 or not previous_results else content,
                raw_output=str(tokenizer.decode(response, skip_special_tokens=False)),
                action=action,
                action_span=None if span is None else ActionSpan(0, 0, span[0], span[1]),
                reward=sum(step.reward for step in taken),
                valid=(bool(taken) and all(step.valid for step in taken)) if environment is not None else bool(action),
                info=to_json_value(taken[-1].info) if taken else {},  # type: ignore[arg-type]
            )
        )
        rows.append(TurnRow(start, end, content, response, span))
        contexts.append(context)
        previous_results = results
        if taken:
            last_shown = taken[-1].shown
    return Episode(_trajectory(turns, environment, reward, group_id, task_id, first_content), rows), contexts


def _first_context(prompt: Messages | str, prompt_ids: list[int], renderers: Renderers) -> RowContext:
    if not isinstance(prompt, list):
        return RowContext(prompt_ids, [], lambda content: renderers.prompt([{"role": "user", "content": content}]))

    def render(content: str) -> list[int]:
        return renderers.prompt([*prompt[:-1], {**prompt[-1], "content": content}])

    return RowContext(prompt_ids, [], render)


def _tool_context(ids: list[int], results: Messages, renderers: Renderers) -> RowContext:
    """The context of a turn after tool results: everything before them, and their rendering."""
    if not results:
        return RowContext(ids, ids, lambda content: [])
    suffix = renderers.tool_results(results)
    if ids[len(ids) - len(suffix) :] != suffix:  # not TRL's own rendering: PI cannot be placed exactly
        return RowContext(ids, ids, lambda content: [])
    prefix = ids[: len(ids) - len(suffix)]

    def render(content: str) -> list[int]:
        return renderers.tool_results([*results[:-1], {**results[-1], "content": content}])

    return RowContext(ids, prefix, render)


def _trajectory(
    turns: list[Turn], environment: ToolEnvironment | None, reward: float, group_id: int, task_id: str, task: str
) -> Trajectory:
    if environment is None:
        return Trajectory(task_id, group_id, turns, success=reward > 0, score=reward, task=task, reward=reward)
    info = environment.reset_info
    steps = environment.steps
    return Trajectory(
        str(info.get("task_id", task_id)),
        group_id,
        turns,
        success=environment.won,
        score=environment.get_reward(),
        task=str(info.get("task", "")),
        initial_observation=environment.reset_observation,
        final_observation=steps[-1].shown if steps else "",
        reward=reward,
        initial_privileged=privileged_of(info),
    )
