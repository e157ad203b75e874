"""TASPO alignment: keep only the guidance the target trajectory's own path supports.

An item is supported at turn t of a target trajectory when its anchors appear (as whole
words) in what the target had observed when it acted at t: the task, the reset observation
and the observations of turns 0..t. ``match="all"`` (default) needs every anchor,
``"any"`` one of them. A turn's items are listed most recently supported first (what the
agent just came to see is most likely to bear on its decision; ties keep the analyzer's
order), so a cap on PI items keeps the state-relevant ones. A turn with no supported item is
*unaligned* and gets no PI; turns whose action was invalid are unaligned too.

Example:
    >>> from agentenvs.core.trajectory import Trajectory, Turn
    >>> from agents.algorithms.taspo.guidance import GuidanceItem
    >>> item = GuidanceItem("requirement", "Take the pen 2.", ("pen 2",))
    >>> target = Trajectory("t", 0, [Turn("You see a desk 1.", "go to desk 1", "go to desk 1", None, 0.0, True),
    ...                              Turn("You see a pen 2.", "take pen 2", "take pen 2", None, 0.0, True)], False, 0.0)
    >>> [len(turn_items) for turn_items in align_guidance([item], target)]
    [0, 1]
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Literal

from agentenvs.core.trajectory import Trajectory
from agents.algorithms.privileged.text import mentions, observations_up_to
from agents.algorithms.taspo.guidance import GuidanceItem

AnchorMatch = Literal["all", "any"]
ANCHOR_MATCHES: tuple[str, ...] = typing.get_args(AnchorMatch)


def align_guidance(
    items: Sequence[GuidanceItem], target: Trajectory, *, match: str = "all"
) -> list[tuple[GuidanceItem, ...]]:
    """Per turn of ``target``, the items its path supports at that turn (in the given order)."""
    if match not in ANCHOR_MATCHES:
        raise ValueError(f"match must be one of {ANCHOR_MATCHES}, got {match!r}")
    combine = all if match == "all" else any
    first_supported: dict[int, int] = {}  # item position -> turn at which it became supported
    aligned: list[tuple[GuidanceItem, ...]] = []
    for index, turn in enumerate(target.turns):
        seen = observations_up_to(target, index)
        for position, item in enumerate(items):
            if position not in first_supported and combine(mentions(seen, anchor) for anchor in item.anchors):
                first_supported[position] = index
        if not (turn.valid and turn.action):
            aligned.append(())
            continue
        supported = sorted(first_supported, key=lambda position: (-first_supported[position], position))
        aligned.append(tuple(items[position] for position in supported))
    return aligned


def render_guidance(items: Sequence[GuidanceItem], *, max_items: int = 6, show_evidence: bool = False) -> str | None:
    """Items as PI text (None when there is none)."""
    if not items:
        return None
    lines = ["Guidance from successful attempts at this task:"]
    for item in items[:max_items]:
        lines.append(f"- {item.text}" + (f" (evidence: {item.evidence})" if show_evidence and item.evidence else ""))
    return "\n".join(lines)
