"""Scripted SearchQA agents: the expert and two baselines, for checks and the main job.

- :class:`ExpertAgent` searches each gold supporting title in order, then answers the
  first gold answer (EM 1.0 whenever the env behaves).
- :class:`TopTitleAgent` searches the question and answers with the title of the best
  hit not named in the question (retrieval alone, no reading).
- :class:`NoSearchAgent` answers at once with a fixed guess (what memory alone gives
  on invented entities).

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = gym.make("SearchQA-v0")
    >>> results = play_episodes(env, ExpertAgent(), episodes=3, seed=0)
    >>> [r.em for r in results]
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym

from agentenvs.searchqa.env import SearchQAEnv


class ScriptedAgent(Protocol):
    """Writes the next raw output from the env and the last observation."""

    def begin(self, env: SearchQAEnv) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


class ExpertAgent:
    """Searches the gold supporting titles, then answers the gold answer."""

    def begin(self, env: SearchQAEnv) -> None:
        question = env.current_question
        self._plan = [f"<search>{title}</search>" for title in question.supporting_titles]
        self._plan.append(f"<answer>{question.answers[0]}</answer>")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._plan.pop(0) if len(self._plan) > 1 else self._plan[0]


class TopTitleAgent:
    """Searches the question; answers with the top hit's title not named in the question."""

    def begin(self, env: SearchQAEnv) -> None:
        self._question = env.current_question.question
        self._searched = False

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if not self._searched:
            self._searched = True
            return f"<search>{self._question}</search>"
        for title in info.get("retrieved_titles", []):
            if title.lower() not in self._question.lower():
                return f"<answer>{title}</answer>"
        return "<answer>unknown</answer>"


class NoSearchAgent:
    """Answers immediately with a fixed guess."""

    def __init__(self, guess: str = "unknown") -> None:
        self.guess = guess

    def begin(self, env: SearchQAEnv) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return f"<answer>{self.guess}</answer>"


@dataclass(frozen=True)
class EpisodeResult:
    """Outcome of one scripted episode."""

    task_id: str
    em: float
    f1: float
    turns: int
    searches: int


def play_episodes(env: gym.Env[str, str], agent: ScriptedAgent, *, episodes: int, seed: int = 0) -> list[EpisodeResult]:
    """Plays ``episodes`` seeded episodes of a SearchQA env with ``agent``."""
    searchqa = env.unwrapped
    if not isinstance(searchqa, SearchQAEnv):
        raise TypeError(f"scripted SearchQA agents need a SearchQAEnv, got {type(searchqa).__name__}")
    results = []
    for episode in range(episodes):
        observation, info = env.reset(seed=seed + episode)
        agent.begin(searchqa)
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
            done = terminated or truncated
        results.append(
            EpisodeResult(
                task_id=info["task_id"],
                em=float(info.get("em", 0.0)),
                f1=float(info.get("f1", 0.0)),
                turns=int(info["turn"]),
                searches=len(searchqa.searches),
            )
        )
    return results
