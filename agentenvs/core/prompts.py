"""Prompt builders: the text an LLM agent sees each turn, for any agentenvs env.

In the style of verl-agent: the task, the last ``k`` turns (observation and the
action taken), the current observation, the admissible actions when the env
lists them, and the env's action format's instruction
(``<think>…</think><action>…</action>``, or Search-R1's ``<search>``/``<answer>``
tags; see :mod:`agentenvs.core.actions`). Builders read only the info contract
(``info["task"]``, ``info["admissible_actions"]``) and the env's ``action_format``,
so they work with every registered env. They live with the env contract, below
both ``wrappers`` (``wrappers.PromptObservation`` makes an env's observation the
prompt) and ``agents`` (``agents.collection.collector.Collector``), which share them.

Example:
    >>> builder = PromptBuilder(history_length=1)
    >>> prompt = builder.build(task="Put a mug on the desk.", observation="You see a mug.",
    ...                        history=[("You are in a room.", "go to desk 1")],
    ...                        admissible_actions=["take mug 1", "look"], action_format="think_action")
    >>> "Task: Put a mug on the desk." in prompt and "'take mug 1'" in prompt
    True
    >>> prompt.rstrip().endswith("<action>your action</action>.")
    True
    >>> builder.stop_strings("search_answer")
    ('</search>', '</answer>')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentenvs.core.actions import ACTION_FORMATS, ActionFormat, get_action_format

OutputFormat = Literal["auto", "raw", "think_action", "think_action_strict", "search_answer"]
"""``"auto"`` (the env's own action format) or the name of one in :data:`~agentenvs.core.actions.ACTION_FORMATS`."""

HISTORY_RAW_CHARS = 200
"""How much of an invalid raw output the history shows (stripped)."""


def history_action(raw_output: Any, info: Mapping[str, Any]) -> str:
    """The action the history shows for one step, given its raw output and the env's info.

    The executed action when the env accepted it (``info["action"]``), else the raw
    output, stripped and cut to :data:`HISTORY_RAW_CHARS`, so the model sees what it wrote.

    Example:
        >>> history_action("<action>look</action>", {"action_valid": True, "action": "look"})
        'look'
        >>> history_action("  lok  ", {"action_valid": False, "action": ""})
        'lok'
    """
    if info.get("action_valid", False):
        return str(info.get("action", ""))
    text = raw_output if isinstance(raw_output, str) else repr(raw_output)
    return text.strip()[:HISTORY_RAW_CHARS]


@dataclass(frozen=True)
class PromptBuilder:
    """Builds one turn's prompt from the task, recent history and the observation.

    Attributes:
        history_length: Past turns shown (k).
        history_observations: Show the past turns' observations too (False: their actions
            only, a far shorter prompt where the current observation says what the agent
            needs, e.g. WebShop pages).
        output_format: ``"auto"`` (the env's action format) or the name of a fixed one,
            whose instruction and stop strings are used whatever the env's.
        show_admissible: List the admissible actions when the env gives them.
        max_admissible: Show at most this many admissible actions.
        max_observation_chars: Cut longer observations (history and current).
        show_format: End with the output-format instruction.
        preamble: The first line of every prompt ("" for none).
    """

    history_length: int = 2
    history_observations: bool = True
    output_format: OutputFormat = "auto"
    show_admissible: bool = True
    max_admissible: int = 50
    max_observation_chars: int = 2000
    show_format: bool = True
    preamble: str = "You are an agent solving a task step by step."

    def __post_init__(self) -> None:
        if self.history_length < 0:
            raise ValueError(f"PromptBuilder.history_length must be >= 0, got {self.history_length}")
        if self.output_format != "auto" and self.output_format not in ACTION_FORMATS:
            raise ValueError(
                f"PromptBuilder.output_format must be 'auto' or one of {sorted(ACTION_FORMATS)}, "
                f"got {self.output_format!r}"
            )
        if self.max_admissible < 1 or self.max_observation_chars < 1:
            raise ValueError("PromptBuilder.max_admissible and max_observation_chars must be >= 1")

    def format_for(self, action_format: str) -> ActionFormat:
        """The action format prompted for an env with ``action_format``.

        Raises:
            ValueError: for an unknown ``action_format`` (naming the known ones).
        """
        return get_action_format(action_format if self.output_format == "auto" else self.output_format)

    def resolve_format(self, action_format: str) -> str:
        """The name of :meth:`format_for` ``(action_format)``."""
        return self.format_for(action_format).name

    def stop_strings(self, action_format: str) -> tuple[str, ...]:
        """Where generation may stop for this env."""
        return self.format_for(action_format).stop_strings

    def build(
        self,
        *,
        task: str,
        observation: str,
        history: Sequence[tuple[str, str]] = (),
        admissible_actions: Sequence[str] | None = None,
        action_format: str = "think_action",
    ) -> str:
        """The prompt of the current turn.

        Args:
            task: The instruction or question (``info["task"]``).
            observation: The observation to act on now.
            history: All earlier ``(observation, action)`` pairs, oldest first.
            admissible_actions: ``info["admissible_actions"]`` (None: open action set).
            action_format: The env's ``action_format``.
        """
        lines = [self.preamble] if self.preamble else []
        if task and task not in observation:  # envs whose first observation states the task say it once
            lines.append(f"Task: {task}")
        shown = list(history)[-self.history_length :] if self.history_length else []
        if shown:
            first = len(history) - len(shown) + 1
            lines.append(f"You have taken {len(history)} step(s). The last {len(shown)}:")
            for number, (past_observation, action) in enumerate(shown, start=first):
                if self.history_observations:
                    lines.append(f"[Step {number}] Observation: {self._cut(past_observation)}")
                lines.append(f"[Step {number}] Action: {action}")
        lines.append(f"Current observation (step {len(history) + 1}): {self._cut(observation)}")
        if self.show_admissible and admissible_actions:
            listed = list(admissible_actions)[: self.max_admissible]
            more = len(admissible_actions) - len(listed)
            text = ", ".join(repr(action) for action in listed) + (f" (and {more} more)" if more > 0 else "")
            lines.append(f"Admissible actions: [{text}]")
        if self.show_format:
            lines.append(self.format_for(action_format).instruction)
        return "\n".join(lines)

    def _cut(self, text: str) -> str:
        if len(text) <= self.max_observation_chars:
            return text
        return text[: self.max_observation_chars].rstrip() + " ..."
