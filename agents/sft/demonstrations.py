"""Expert demonstrations: the envs' own experts, rendered as the prompts RL trains on.

Each env knows an expert (:meth:`agentenvs.core.env.TextEnv.expert_action`: WebShop's
goal-aware shopper, SearchQA's gold titles then answer, ALFWorld's walkthrough). Playing it through
:class:`wrappers.prompting.PromptObservation` with the prompt builder a run uses gives
``(prompt, response)`` pairs exactly as the collector would show them to the policy, the
response being the expert's action in the env's output format.

With ``invalid_action_rate > 0`` the expert sometimes first writes a broken action (its
own with the closing bracket or tag cut off, or with a stray word appended where the
action has no closing mark): the env answers it as it answers a model's bad output, the
history shows it, and the demonstration that follows is the expert's recovery. Broken
turns are never trained on; they only put the envs' invalid-action feedback into prompts.

Example:
    >>> demos, stats = collect_demonstrations("SearchQA-v0", episodes=2, prompt_builder=PromptBuilder())
    >>> stats.episodes, stats.success_rate
    (2, 1.0)
    >>> demos[0].response.startswith("<search>") and demos[0].turn_index == 0
    True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.actions import render_action as format_action
from agentenvs.core.prompts import PromptBuilder
from wrappers.prompting import PromptObservation


@dataclass(frozen=True)
class Demonstration:
    """One expert turn.

    Attributes:
        prompt: The user message the policy would see (what ``PromptBuilder.build`` returns).
        response: The expert's action in the env's output format (the training target).
        task_id: The episode's task.
        turn_index: The turn (0-based; broken turns count, as in the env).
    """

    prompt: str
    response: str
    task_id: str
    turn_index: int


@dataclass(frozen=True)
class DemonstrationStats:
    """What the expert did.

    Attributes:
        episodes: Episodes played.
        demonstrations: Expert turns kept (training examples).
        broken_turns: Injected broken actions (not trained on).
        success_rate: Share of episodes the expert won (below 1: the expert's own limits,
            e.g. WebShop search not finding the goal product).
    """

    episodes: int
    demonstrations: int
    broken_turns: int
    success_rate: float

    def to_dict(self, prefix: str = "") -> dict[str, float]:
        return {f"{prefix}{key}": float(value) for key, value in vars(self).items()}


def break_action(action: str) -> str:
    """An invalid variant of ``action``: its closing ``]``/``>`` cut off, else a stray word appended.

    >>> break_action("click[Buy Now]"), break_action("<answer>Paris</answer>"), break_action("look")
    ('click[Buy Now', '<answer>Paris</answer', 'look now')
    """
    return action[:-1] if action.endswith(("]", ">")) else f"{action} now"


def collect_demonstrations(
    env_id: str,
    *,
    episodes: int,
    prompt_builder: PromptBuilder,
    env_kwargs: dict[str, Any] | None = None,
    task_ids: Sequence[str] | None = None,
    invalid_action_rate: float = 0.0,
    seed: int = 0,
) -> tuple[list[Demonstration], DemonstrationStats]:
    """Plays the env's expert for ``episodes`` episodes; returns its turns and a summary.

    Args:
        env_id: A registered agentenvs env id.
        episodes: Episodes to play.
        prompt_builder: Builds each turn's prompt (use the run's, so SFT and RL prompts match).
        env_kwargs: Passed to the env (e.g. ``max_turns``, ``split``).
        task_ids: Tasks to play, in order and cycled (None: ``episodes`` tasks drawn from the
            env's pool with ``seed``, without replacement while the pool lasts).
        invalid_action_rate: Chance, per expert turn, of a broken action first.
        seed: Seeds the task draw and the broken-action draws.

    Raises:
        ValueError: naming a bad argument, or an env without an expert.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an integer >= 1, got {episodes!r}")
    _check_rate(invalid_action_rate)
    rng = np.random.default_rng(seed)
    env = PromptObservation(gym.make(env_id, **(env_kwargs or {})), prompt_builder)
    try:
        pool = _task_pool(env_id, env, task_ids)
        if task_ids is None:
            chosen = [pool[i] for i in _draw_order(rng, len(pool), episodes)]
        else:
            chosen = [pool[i % len(pool)] for i in range(episodes)]
        demonstrations: list[Demonstration] = []
        broken = wins = 0
        for episode, task_id in enumerate(chosen):
            played = _play_expert(env_id, env, task_id, seed + episode, rng, invalid_action_rate)
            demonstrations += [demonstration for demonstration, _ in played.turns]
            broken += played.broken
            wins += played.won
    finally:
        env.close()
    stats = DemonstrationStats(len(chosen), len(demonstrations), broken, wins / len(chosen))
    return demonstrations, stats


def collect_turns_of_kind(
    env_id: str,
    kind: str,
    *,
    count: int,
    prompt_builder: PromptBuilder,
    env_kwargs: dict[str, Any] | None = None,
    invalid_action_rate: float = 0.0,
    seed: int = 0,
    max_episodes: int | None = None,
) -> tuple[list[Demonstration], DemonstrationStats]:
    """``count`` expert turns whose action is of ``kind`` (``env.action_kind``: WebShop's ``option``
    clicks, say), from expert episodes on tasks drawn as :func:`collect_demonstrations` draws them;
    the other turns are played (their prompts are the history) but not kept.

    The draw is seeded with ``(seed, 1)``: for the same ``seed`` it does not repeat
    :func:`collect_demonstrations`' order, so the turns add tasks rather than copy them.

    Args:
        env_id: A registered agentenvs env id that names action kinds.
        kind: One of the env's ``action_kinds``.
        count: Turns to keep.
        max_episodes: Give up after this many episodes (default: 20 × ``count``, at least the pool).

    Raises:
        ValueError: naming a bad argument, an env that names no such kind, or too few such turns.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    _check_rate(invalid_action_rate)
    env = PromptObservation(gym.make(env_id, **(env_kwargs or {})), prompt_builder)
    expert: Any = env.unwrapped
    try:
        if kind not in expert.action_kinds:
            named = ", ".join(expert.action_kinds) or "none"
            raise ValueError(f"{env_id} names no action kind {kind!r} (its kinds: {named})")
        pool = _task_pool(env_id, env, None)
        limit = max(20 * count, len(pool)) if max_episodes is None else max_episodes
        rng = np.random.default_rng((seed, 1))
        order = _draw_order(rng, len(pool), limit)
        kept: list[Demonstration] = []
        episodes = broken = wins = 0
        while len(kept) < count and episodes < limit:
            played = _play_expert(env_id, env, pool[order[episodes]], seed + episodes, rng, invalid_action_rate)
            kept += [demonstration for demonstration, turn_kind in played.turns if turn_kind == kind]
            broken += played.broken
            wins += played.won
            episodes += 1
    finally:
        env.close()
    if len(kept) < count:
        raise ValueError(
            f"{env_id}'s expert played {len(kept)} {kind!r} turns in {episodes} episodes, fewer than the {count} asked for"
        )
    return kept[:count], DemonstrationStats(episodes, count, broken, wins / episodes)


@dataclass(frozen=True)
class _Episode:
    turns: list[tuple[Demonstration, str | None]]  # each kept turn with its action's kind
    broken: int
    won: bool


def _play_expert(
    env_id: str, env: Any, task_id: str, seed: int, rng: np.random.Generator, invalid_action_rate: float
) -> _Episode:
    """One expert episode of ``task_id`` through the prompting wrapper ``env``."""
    expert: Any = env.unwrapped
    prompt, info = env.reset(seed=seed, options={"task_id": task_id})
    turns: list[tuple[Demonstration, str | None]] = []
    turn = broken = 0
    done = False
    while not done:
        action = expert.expert_action()
        if action is None:
            if turn == 0:
                raise ValueError(f"{env_id} has no expert (expert_action() is None at reset)")
            break
        if rng.random() < invalid_action_rate:
            prompt, _, terminated, truncated, info = env.step(break_action(action))
            broken += 1
            turn += 1
            done = terminated or truncated
            continue
        response = format_action(action, env.action_format)
        turns.append((Demonstration(prompt, response, str(task_id), turn), expert.action_kind(action)))
        prompt, _, terminated, truncated, info = env.step(response)
        turn += 1
        done = terminated or truncated
    return _Episode(turns, broken, bool(info.get("won", False)))


def _check_rate(invalid_action_rate: float) -> None:
    if not 0.0 <= invalid_action_rate < 1.0:
        raise ValueError(f"invalid_action_rate must be in [0, 1), got {invalid_action_rate!r}")


def _task_pool(env_id: str, env: Any, task_ids: Sequence[str] | None) -> list[str]:
    pool = list(task_ids) if task_ids is not None else list(env.unwrapped.task_ids)
    if not pool:
        raise ValueError(f"{env_id} has no tasks to demonstrate")
    return pool


def _draw_order(rng: np.random.Generator, size: int, episodes: int) -> list[int]:
    """``episodes`` indices into a pool of ``size``: without replacement while the pool lasts, then again."""
    return [int(i) for i in np.concatenate([rng.permutation(size) for _ in range(-(-episodes // size))])[:episodes]]


def read_demonstrations(path: str | Path) -> list[Demonstration]:
    """The demonstrations of a JSONL file (what ``demonstrations.jsonl`` holds; JSON only, never a pickle).

    Each non-blank line is an object with ``prompt`` and ``response`` strings; ``task_id``
    (default ``""``) and ``turn_index`` (default 0) are optional.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "demos.jsonl"
    >>> _ = path.write_text('{"prompt": "Goal: red", "response": "click[red]"}\\n')
    >>> read_demonstrations(path)
    [Demonstration(prompt='Goal: red', response='click[red]', task_id='', turn_index=0)]
    >>> _ = path.write_text('{"prompt": "Goal: red"}\\n')
    >>> read_demonstrations(path)
    Traceback (most recent call last):
    ...
    ValueError: ... line 1: a demonstration needs "prompt" and "response" strings, got keys ['prompt']

    Raises:
        ValueError: naming the file and line of a malformed demonstration, or a file without any.
        FileNotFoundError: when ``path`` does not exist.
    """
    path = Path(path)
    demonstrations = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path} line {number}: not JSON ({error.msg})") from None
            if not isinstance(row, dict) or not all(isinstance(row.get(key), str) for key in ("prompt", "response")):
                keys = sorted(row) if isinstance(row, dict) else type(row).__name__
                raise ValueError(
                    f'{path} line {number}: a demonstration needs "prompt" and "response" strings, got keys {keys}'
                )
            turn_index = row.get("turn_index", 0)
            if isinstance(turn_index, bool) or not isinstance(turn_index, int) or turn_index < 0:
                raise ValueError(f"{path} line {number}: turn_index must be an integer >= 0, got {turn_index!r}")
            demonstrations.append(
                Demonstration(row["prompt"], row["response"], str(row.get("task_id", "")), turn_index)
            )
    if not demonstrations:
        raise ValueError(f"{path} holds no demonstrations")
    return demonstrations
