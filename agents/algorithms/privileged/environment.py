"""Environment PI: what the env reported under ``info["privileged"]``, as PI text per turn.

**An extension of the ORSD and TASPO papers**, whose PI is built from the group's own
trajectories (rubrics from contrasts, guidance from successful siblings). Here the PI can
instead (``env_pi="replace"``) or also (``env_pi="add"``) be what the env knows and the agent
never sees: ALFWorld's expert plan and goal facts, WebShop's goal attributes, options and price
bound, SearchQA's supporting passages (each env documents its schema in a ``TypedDict``). That is
the setting of on-policy self-distillation (OPID, SDAR), the methods TASPO compares against. The
default, ``env_pi="none"``, keeps the papers' behaviour.

Env PI is used only where the rules put PI: in the prompts of their teacher-forced scoring
pass. The rollout prompts never contain it (the collector builds prompts from the task,
observation, history and admissible actions only).

A turn's env PI is what held when the agent acted: ``Turn.info`` is as of *after* the action,
so turn t uses turn t − 1's ``info["privileged"]`` and turn 0 the reset info's, which the
collector keeps in ``Trajectory.initial_privileged`` (a trajectory recorded
without it has no env PI at turn 0). This matters for ALFWorld, whose expert plan moves on
with every command; the other envs' PI is constant over an episode.

Example:
    >>> print(render_env_privileged({"goal_attributes": ["cotton", "blue"], "price_upper": 40.0,
    ...                              "target_asin": "B01"}, keys=("goal_attributes", "price_upper")))
    Privileged information from the environment:
    Goal attributes: cotton, blue
    Price upper bound: 40.00
    >>> combine_privileged("Guidance ...", "Privileged ...", "add")
    'Guidance ...\\nPrivileged ...'
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agentenvs.core.trajectory import Trajectory
from agents.algorithms.privileged.text import shorten
from agents.rollout import RolloutBatch

EnvPIMode = Literal["none", "replace", "add"]
ENV_PI_MODES: tuple[str, ...] = typing.get_args(EnvPIMode)
"""``none``: PI only from the group's trajectories (the papers); ``replace``: only the env's;
``add``: the group's PI, then the env's (the env's alone where the group gives none)."""

DEFAULT_ENV_PI_KEYS: tuple[str, ...] = (
    "expert_plan",
    "goal_facts",
    "goal_attributes",
    "goal_options",
    "price_upper",
    "supporting_passages",
)
"""The ``info["privileged"]`` entries rendered by default (answers and target ids are left out: the
PI should say how to act, not hand over the outcome; add ``gold_answers`` etc. to ``env_pi_keys``)."""


ENV_PI_HEADER = "Privileged information from the environment:"

_LABELS = {
    "expert_plan": "Expert plan from here",
    "goal": "Goal",
    "goal_facts": "Goal facts",
    "task_type": "Task type",
    "goal_attributes": "Goal attributes",
    "goal_options": "Goal options",
    "price_upper": "Price upper bound",
    "target_asin": "Target product",
    "gold_answers": "Answer",
    "supporting_titles": "Supporting titles",
}
_SEPARATORS = {"expert_plan": "; ", "goal_facts": "; ", "gold_answers": " | "}


def privileged_before_turns(trajectory: Trajectory) -> list[dict[str, Any] | None]:
    """The env's privileged dict as it stood when the agent chose each turn's action (see module doc)."""
    before: list[dict[str, Any] | None] = [trajectory.initial_privileged]
    before += [turn.privileged for turn in trajectory.turns[:-1]]
    return before[: len(trajectory.turns)]


def _line(key: str, value: Any, passage_chars: int) -> str | None:
    """One entry as a line (None when it says nothing: None, empty, a price bound ≤ 0)."""
    if value is None or value == [] or value == "" or value == {}:
        return None
    label = _LABELS.get(key, key)
    if key == "price_upper":
        return f"{label}: {float(value):.2f}" if float(value) > 0 else None
    if key == "supporting_passages" and isinstance(value, list):
        passages = [
            f"Supporting passage ({passage.get('title', '')}): {shorten(str(passage.get('text', '')), passage_chars)}"
            for passage in value
            if isinstance(passage, dict)
        ]
        return "\n".join(passages) or None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return f"{label}: {_SEPARATORS.get(key, ', ').join(value)}"
    if isinstance(value, str):
        return f"{label}: {value}"
    return f"{label}: {json.dumps(value, ensure_ascii=False)}"


def render_env_privileged(
    privileged: Mapping[str, Any] | None,
    *,
    keys: Sequence[str] = DEFAULT_ENV_PI_KEYS,
    max_chars: int = 1500,
    passage_chars: int = 400,
) -> str | None:
    """The chosen entries of an env's privileged dict as PI text, in ``keys`` order (None if none).

    Args:
        privileged: ``info["privileged"]`` (None or ``{}``: no PI).
        keys: Entries to show; absent ones are skipped.
        max_chars: The whole text is cut to this many characters.
        passage_chars: Each supporting passage is cut to this many characters.
    """
    if not privileged:
        return None
    lines = [line for key in keys if (line := _line(key, privileged.get(key), passage_chars)) is not None]
    if not lines:
        return None
    text = "\n".join([ENV_PI_HEADER, *lines])
    return text if len(text) <= max_chars else text[: max(max_chars - 3, 0)] + "..."


def env_privileged_rows(
    batch: RolloutBatch, *, keys: Sequence[str] = DEFAULT_ENV_PI_KEYS, max_chars: int = 1500
) -> list[str | None]:
    """Env PI text of every row (turn) of ``batch``, from the turn's trajectory (None where none)."""
    trajectories = batch.trajectories
    per_trajectory: dict[int, list[str | None]] = {}
    texts: list[str | None] = []
    for trajectory, turn in zip(batch.trajectory_index.tolist(), batch.turn_index.tolist(), strict=True):
        if trajectory not in per_trajectory:
            per_trajectory[trajectory] = [
                render_env_privileged(privileged, keys=keys, max_chars=max_chars)
                for privileged in privileged_before_turns(trajectories[trajectory])
            ]
        rendered = per_trajectory[trajectory]
        texts.append(rendered[turn] if turn < len(rendered) else None)
    return texts


def combine_privileged(group_pi: str | None, env_pi: str | None, mode: str) -> str | None:
    """A turn's PI under ``mode`` (see ``ENV_PI_MODES``) from the group-built and the env's PI.

    Raises:
        ValueError: for an unknown mode.
    """
    if mode not in ENV_PI_MODES:
        raise ValueError(f"env_pi must be one of {ENV_PI_MODES}, got {mode!r}")
    if mode == "none":
        return group_pi
    if mode == "replace":
        return env_pi
    return "\n".join(text for text in (group_pi, env_pi) if text) or None
