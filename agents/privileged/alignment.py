"""TASPO alignment: keep only the guidance the target trajectory's own path supports.

An item is supported at turn t of a target trajectory when its anchors appear (as whole
words) in what the target had observed when it acted at t: the task, the reset observation
and the observations of turns 0..t. ``match="all"`` (default) needs every anchor,
``"any"`` one of them. A turn with no supported item is *unaligned* and gets no PI; turns
whose action was invalid (no executable action to credit) are unaligned too.

Example:
    >>> from agentenvs.core.trajectory import Trajectory, Turn
    >>> from agents.privileged.guidance import GuidanceItem
    >>> item = GuidanceItem("requirement", "Take the pen 2.", ("pen 2",))
    >>> target = Trajectory("t", 0, [Turn("You see a desk 1.", "go to desk 1", "go to desk 1", None, 0.0, True),
    ...                              Turn("You see a pen 2.", "take pen 2", "take pen 2", None, 0.0, True)], False, 0.0)
    >>> [len(turn_items) for turn_items in align_guidance([item], target)]
    [0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence

from agentenvs.core.trajectory import Trajectory
from agents.privileged.guidance import GuidanceItem
from agents.privileged.text import mentions, observations_up_to

ANCHOR_MATCHES: tuple[str, ...] = ("all", "any")


def align_guidance(
    items: Sequence[GuidanceItem], target: Trajectory, *, match: str = "all"
) -> list[tuple[GuidanceItem, ...]]:
    """Per turn of ``target``, the items its path supports at that turn (in the given order)."""
    if match not in ANCHOR_MATCHES:
        raise ValueError(f"match must be one of {ANCHOR_MATCHES}, got {match!r}")
    combine = all if match == "all" else any
    aligned: list[tuple[GuidanceItem, ...]] = []
    for index, turn in enumerate(target.turns):
        if not (turn.valid and turn.action):
            aligned.append(())
            continue
        seen = observations_up_to(target, index)
        aligned.append(tuple(item for item in items if combine(mentions(seen, anchor) for anchor in item.anchors)))
    return aligned


def render_guidance(items: Sequence[GuidanceItem], *, max_items: int = 6, show_evidence: bool = False) -> str | None:
    """Items as PI text (None when there is none)."""
    if not items:
        return None
    lines = ["Guidance from successful attempts at this task:"]
    for item in items[:max_items]:
        lines.append(f"- {item.text}" + (f" (evidence: {item.evidence})" if show_evidence and item.evidence else ""))
    return "\n".join(lines)
