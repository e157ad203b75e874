"""Prompt builders: the text an LLM agent sees each turn, for any agentenvs env.

In the style of verl-agent: the task, the last ``k`` turns (observation and the
action taken), the current observation, the admissible actions when the env
lists them, and the output format the env's projector parses
(``<think>…</think><action>…</action>``, or Search-R1's ``<search>``/``<answer>``
tags). Builders read only the info contract (``info["task"]``,
``info["admissible_actions"]``) and the env's ``action_format``, so they work
with every registered env. :class:`PromptObservation` wraps an env so that its
observation *is* that prompt (it keeps the history itself, as
``agents.collector.Collector`` does): other trainers get our prompts without ours.

Example:
    >>> builder = PromptBuilder(history_length=1)
    >>> prompt = builder.build(task="Put a mug on the desk.", observation="You see a mug.",
    ...                        history=[("You are in a room.", "go to desk 1")],
    ...                        admissible_actions=["take mug 1", "look"], action_format="think_action")
    >>> "Task: Put a mug on the desk." in prompt and "'take mug 1'" in prompt
    True
    >>> prompt.rstrip().endswith("<action>your action</action>.")
    True
    >>> import gymnasium as gym, agentenvs
    >>> env = PromptObservation(gym.make("SearchQA-v0"), PromptBuilder(history_length=1))
    >>> prompt, info = env.reset(seed=0)
    >>> prompt.startswith("You are an agent") and info["task"] in prompt
    True
    >>> prompt, *_ = env.step("<search>capital</search>")
    >>> "[Step 1] Action: <search>capital</search>" in prompt
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym

from agentenvs.core.spaces import TextSpace

OutputFormat = Literal["auto", "think_action", "search_answer", "raw"]

FORMAT_INSTRUCTIONS: dict[str, str] = {
    "think_action": (
        "First reason briefly inside <think>...</think>. Then give exactly one action, chosen from the "
        "admissible actions when they are listed, as <action>your action</action>."
    ),
    "search_answer": (
        "You may reason inside <think>...</think>. To look something up, write <search>query</search>; "
        "the results come back as <information>...</information>. When you know the answer, write "
        "<answer>answer</answer>. Write one search or one answer per turn."
    ),
    "raw": "Reply with the action only.",
}
"""Output-format instructions by the env's ``action_format`` (strict think_action shares one)."""

_FORMAT_OF_ACTION_FORMAT = {
    "think_action": "think_action",
    "think_action_strict": "think_action",
    "search_answer": "search_answer",
    "raw": "raw",
}

STOP_STRINGS: dict[str, tuple[str, ...]] = {
    "think_action": ("</action>",),
    "search_answer": ("</search>", "</answer>"),
    "raw": ("\n",),
}
"""Strings after which generation can stop, by output format (a raw action is one line)."""

HISTORY_RAW_CHARS = 200
"""How much of an invalid raw output the history shows (stripped)."""


def history_action(raw_output: Any, info: Mapping[str, Any]) -> str:
    """The action the history shows for one step, given its raw output and the env's info.

    The executed action when the env accepted it (``info["action"]``), else the raw
    output, stripped and cut to :data:`HISTORY_RAW_CHARS`, so the model sees what it wrote.
    """
    if info.get("action_valid", False):
        return str(info.get("action", ""))
    text = raw_output if isinstance(raw_output, str) else repr(raw_output)
    return text.strip()[:HISTORY_RAW_CHARS]


def output_format_for(action_format: str) -> str:
    """The prompt's output format for an env's ``action_format``.

    Raises:
        ValueError: naming an unknown action format.
    """
    try:
        return _FORMAT_OF_ACTION_FORMAT[action_format]
    except KeyError:
        raise ValueError(f"no prompt format for action_format={action_format!r}") from None


@dataclass(frozen=True)
class PromptBuilder:
    """Builds one turn's prompt from the task, recent history and the observation.

    Attributes:
        history_length: Past turns shown (k).
        history_observations: Show the past turns' observations too (False: their actions
            only, a far shorter prompt where the current observation says what the agent
            needs, e.g. WebShop pages).
        output_format: ``"auto"`` (from the env's action format) or a fixed format.
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
        if self.output_format not in ("auto", *FORMAT_INSTRUCTIONS):
            raise ValueError(
                f"PromptBuilder.output_format must be 'auto' or one of {sorted(FORMAT_INSTRUCTIONS)}, "
                f"got {self.output_format!r}"
            )
        if self.max_admissible < 1 or self.max_observation_chars < 1:
            raise ValueError("PromptBuilder.max_admissible and max_observation_chars must be >= 1")

    def resolve_format(self, action_format: str) -> str:
        """The output format used for an env with ``action_format``."""
        return output_format_for(action_format) if self.output_format == "auto" else self.output_format

    def stop_strings(self, action_format: str) -> tuple[str, ...]:
        """Where generation may stop for this env."""
        return STOP_STRINGS[self.resolve_format(action_format)]

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
            lines.append(FORMAT_INSTRUCTIONS[self.resolve_format(action_format)])
        return "\n".join(lines)

    def _cut(self, text: str) -> str:
        if len(text) <= self.max_observation_chars:
            return text
        return text[: self.max_observation_chars].rstrip() + " ..."


class PromptObservation(gym.Wrapper[str, str, str, str]):
    """Makes the observation the prompt :class:`PromptBuilder` builds for the current turn.

    The wrapper keeps the episode's history itself: after each step it records the
    observation acted on and :func:`history_action` of the raw action, exactly as
    ``agents.collector.Collector`` does, and builds the next prompt from the task, that
    history, the env's new observation, ``info["admissible_actions"]`` and the env's
    ``action_format``. A step after the episode ended (a no-op for agentenvs envs) adds
    nothing to the history. Infos pass through unchanged.

    Args:
        env: An env following the agentenvs info contract, with an ``action_format``.
        builder: The prompt builder (default ``PromptBuilder()``, the collector's default).
        max_prompt_length: Longest prompt the observation space admits (a prompt holds
            several observations and actions, so more than the env's own observations).

    Attributes:
        builder: The prompt builder.
        action_format: The env's ``action_format``.
        history: The episode's ``(observation, action shown)`` pairs, oldest first.
        raw_observation: The env's own latest observation.

    Raises:
        ValueError: when ``env`` has no ``action_format`` or ``max_prompt_length`` < 1.
    """

    def __init__(
        self, env: gym.Env[str, str], builder: PromptBuilder | None = None, *, max_prompt_length: int = 1 << 22
    ) -> None:
        super().__init__(env)
        if isinstance(max_prompt_length, bool) or not isinstance(max_prompt_length, int) or max_prompt_length < 1:
            raise ValueError(f"PromptObservation.max_prompt_length must be an int >= 1, got {max_prompt_length!r}")
        try:
            action_format = env.get_wrapper_attr("action_format")
        except AttributeError:
            raise ValueError(
                "PromptObservation needs an env with an action_format (every agentenvs env has one)"
            ) from None
        self.builder = builder or PromptBuilder()
        self.action_format: str = str(action_format)
        self.builder.resolve_format(self.action_format)  # an action format without a prompt fails here
        self.observation_space = TextSpace(max_prompt_length)
        self.history: list[tuple[str, str]] = []
        self.raw_observation = ""
        self._done = True

    @property
    def stop_strings(self) -> tuple[str, ...]:
        """Where generation may stop for this env's output format."""
        return self.builder.stop_strings(self.action_format)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self.history = []
        self.raw_observation = observation
        self._done = False
        return self.prompt(observation, info), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if not self._done:
            self.history.append((self.raw_observation, history_action(action, info)))
            self.raw_observation = observation
            self._done = bool(terminated or truncated)
        return self.prompt(observation, info), float(reward), terminated, truncated, info

    def prompt(self, observation: str, info: Mapping[str, Any]) -> str:
        """The prompt for ``observation`` (with ``info``) after the history kept so far."""
        return self.builder.build(
            task=str(info.get("task", "")),
            observation=observation,
            history=self.history,
            admissible_actions=info.get("admissible_actions"),
            action_format=self.action_format,
        )
