"""Small text helpers shared by the rubric and guidance builders.

Actions are compared in a normal form (tags stripped, lower case, single spaces) so that
``<search> Who won </search>`` and ``<search>who won</search>`` count as the same action.
Content terms are the words that name things (objects, receptacles, products, queries):
everything but a short list of function words and the action's leading verb.

Example:
    >>> normalize_action("<search> Who  WON the cup? </search>")
    'search: who won the cup?'
    >>> content_terms("take apple 1 from countertop 1")
    ('apple 1', 'countertop 1')
    >>> render_transcript(["go to desk 1", "take pen 2 from desk 1"], limit=1)
    '1. go to desk 1\\n... (1 more)'
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentenvs.core.trajectory import Trajectory

_TAG = re.compile(r"^\s*<(\w+)>(.*)</\1>\s*$", re.DOTALL)
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")
# Function words that never name an object/receptacle/product/query on their own.
STOPWORDS = frozenset(
    "a an the to from in on into onto at of for with by and or is are was be it this that "
    "you your i me my we use using then now please".split()
)


def normalize_action(action: str) -> str:
    """Canonical form of an action: tags become a ``tag:`` prefix, lower case, single spaces."""
    match = _TAG.match(action)
    if match:
        action = f"{match.group(1)}: {match.group(2)}"
    return _SPACES.sub(" ", action).strip().lower()


def content_terms(action: str) -> tuple[str, ...]:
    """The phrases an action names, in order: its words minus the leading verb and stopwords.

    A number directly after a word stays attached to it (``apple 1``), because ALFWorld-style
    object ids are meaningless alone. Duplicates are dropped.
    """
    words = _WORD.findall(normalize_action(action).replace(":", " "))
    if words and not words[0].isdigit():
        words = words[1:]  # the verb ("take", "search", "click", ...)
    terms: list[str] = []
    for word in words:
        if word.isdigit() and terms and not terms[-1][-1].isdigit():
            terms[-1] = f"{terms[-1]} {word}"
        elif word not in STOPWORDS:
            terms.append(word)
    return tuple(dict.fromkeys(terms))


def mentions(text: str, term: str) -> bool:
    """Whether ``term`` occurs in ``text`` as whole words (case-insensitive)."""
    pattern = r"(?<![a-z0-9])" + re.escape(term.lower()) + r"(?![a-z0-9])"
    return re.search(pattern, text.lower()) is not None


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def render_transcript(actions: Sequence[str], limit: int = 12) -> str:
    """Numbered action lines, at most ``limit`` of them."""
    lines = [f"{index}. {action}" for index, action in enumerate(actions[:limit], start=1)]
    if len(actions) > limit:
        lines.append(f"... ({len(actions) - limit} more)")
    return "\n".join(lines)


def trajectory_actions(trajectory: Trajectory, valid_only: bool = True) -> list[str]:
    """The executable actions of a trajectory, in order (invalid turns skipped by default)."""
    return [turn.action for turn in trajectory.turns if turn.action and (turn.valid or not valid_only)]


def observations_up_to(trajectory: Trajectory, turn_index: int) -> str:
    """Everything the agent had seen when it acted at ``turn_index``: task, reset and turn observations."""
    seen = [trajectory.task, trajectory.initial_observation]
    seen += [turn.observation for turn in trajectory.turns[: turn_index + 1]]
    return "\n".join(seen)
