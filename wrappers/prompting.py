"""The prompt as the observation: :class:`PromptObservation` wraps any agentenvs env.

The wrapped env's observation *is* the prompt an LLM agent sees each turn, built by
:class:`agentenvs.core.prompts.PromptBuilder` from the task, the history the wrapper
keeps (as ``agents.collection.collector.Collector`` does) and the env's action format, so other
trainers get our prompts without our trainer.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> from agentenvs.core.prompts import PromptBuilder
    >>> env = PromptObservation(gym.make("SearchQA-v0"), PromptBuilder(history_length=1))
    >>> prompt, info = env.reset(seed=0)
    >>> prompt.startswith("You are an agent") and info["task"] in prompt
    True
    >>> prompt, *_ = env.step("<search>capital</search>")
    >>> "[Step 1] Action: <search>capital</search>" in prompt
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from agentenvs.core.prompts import PromptBuilder, history_action
from agentenvs.core.spaces import TextSpace

__all__ = ["PromptObservation"]


class PromptObservation(gym.Wrapper[str, str, str, str]):
    """Makes the observation the prompt :class:`PromptBuilder` builds for the current turn.

    The wrapper keeps the episode's history itself: after each step it records the
    observation acted on and :func:`~agentenvs.core.prompts.history_action` of the raw action, exactly as
    ``agents.collection.collector.Collector`` does, and builds the next prompt from the task, that
    history, the env's new observation, ``info["admissible_actions"]`` and the env's
    ``action_format``. A step after the episode ended (an error for an agentenvs env, a no-op
    for a member of a group vector env) adds nothing to the history. Infos pass through
    unchanged.

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
        self.builder.format_for(self.action_format)  # an unknown action format fails here, not at the first prompt
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
