"""The token heatmap of one turn: its raw output cut at token boundaries, each token coloured.

A token's colour encodes one of its recorded values (the final advantage by default; Δ, the
weight or the sampling log-prob on request) on a diverging scale around a centre (0, or 1
for weights): blue above, red below, opacity ``|value − centre| / scale`` with ``scale`` the
largest such distance over the trajectory, so the strongest token of the trajectory is the
most opaque and tokens at the centre are clear.

Example:
    >>> colour(0.5, scale=1.0)
    'rgba(31, 119, 180, 0.425)'
    >>> colour(-2.0, scale=1.0), colour(0.0, scale=0.0)
    ('rgba(214, 39, 40, 0.85)', 'rgba(0, 0, 0, 0)')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

POSITIVE = (31, 119, 180)
NEGATIVE = (214, 39, 40)
MAX_OPACITY = 0.85
CENTRES = {"weight": 1.0}
"""Value names whose neutral point is not 0."""
ORDER = ("advantage", "shaping", "delta", "weight", "logprob")
"""How the colour-by choices are listed (others follow in name order)."""
LABELS = {"advantage": "A", "shaping": "A − A_i", "delta": "Δ", "weight": "w", "logprob": "log p"}
"""Short names of the values a record may hold."""


def with_shaping(turns: Sequence[dict[str, Any]], outcome_advantage: float | None) -> list[dict[str, Any]]:
    """The turns with ``shaping`` = each token's advantage minus the trajectory's A_i added to their values.

    What the rule changed token by token on top of the outcome advantage (0 everywhere for GRPO;
    λ·clip(Δ) for ORSD; (w − 1)·A_i for TASPO). Turns come back unchanged without an A_i.

    >>> with_shaping([{"values": {"advantage": [0.75, 0.25]}}], 0.5)[0]["values"]["shaping"]
    [0.25, -0.25]
    """
    if outcome_advantage is None:
        return list(turns)
    shaped = []
    for turn in turns:
        values = dict(turn.get("values", {}))
        if "advantage" in values:
            values["shaping"] = [float(a) - outcome_advantage for a in values["advantage"]]
        shaped.append({**turn, "values": values})
    return shaped


def colour(value: float, *, scale: float, centre: float = 0.0) -> str:
    """The CSS colour of ``value`` (see the module docstring); clear when ``scale`` is 0."""
    if scale <= 0:
        return "rgba(0, 0, 0, 0)"
    distance = value - centre
    red, green, blue = POSITIVE if distance >= 0 else NEGATIVE
    opacity = round(MAX_OPACITY * min(1.0, abs(distance) / scale), 4)
    return f"rgba({red}, {green}, {blue}, {opacity:g})" if opacity else "rgba(0, 0, 0, 0)"


def value_scales(turns: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Per value name, the largest ``|value − centre|`` over every token of the given turns.

    >>> value_scales([{"values": {"advantage": [0.5, -2.0], "weight": [1.5]}}, {"values": {"weight": [0.25]}}])
    {'advantage': 2.0, 'weight': 0.75}
    """
    scales: dict[str, float] = {}
    for turn in turns:
        for name, values in turn.get("values", {}).items():
            centre = CENTRES.get(name, 0.0)
            largest = max((abs(float(v) - centre) for v in values), default=0.0)
            scales[name] = max(scales.get(name, 0.0), largest)
    return scales


def value_names(scales: dict[str, float]) -> list[str]:
    """The value names in :data:`ORDER`, then the others alphabetically."""
    known = [name for name in ORDER if name in scales]
    return known + sorted(name for name in scales if name not in ORDER)


@dataclass(frozen=True)
class Segment:
    """A piece of a raw output: one token (``token`` its index) or text outside tokens (``token`` None)."""

    text: str
    token: int | None
    in_action: bool


def _overlaps(start: int, end: int, span: Sequence[int] | None) -> bool:
    if span is None:
        return False
    return start < span[1] and span[0] < end if end > start else span[0] <= start < span[1]


def segments(
    raw_output: str,
    offsets: Sequence[Sequence[int]],
    action_span: Sequence[int] | None,
    tokens: tuple[int, int] | None = None,
) -> list[Segment]:
    """``raw_output`` as token segments (in order) plus the text before, between or after them.

    Text outside tokens (a response prefix the template added) is split at the action span's
    ends; a token is in the action when its characters overlap the span. ``tokens=(first, end)``
    gives only tokens ``first`` to ``end - 1`` with the text that goes with them (text between two
    tokens goes with the earlier one), in time proportional to the window: the windows of a
    turn's pages, joined, are its segments.

    >>> [(s.text, s.token, s.in_action) for s in segments("<a>xy", [(3, 4), (4, 5)], (3, 5))]
    [('<a>', None, False), ('x', 0, True), ('y', 1, True)]
    >>> [(s.text, s.token) for s in segments("<a>x y", [(3, 4), (5, 6)], None, (1, 2))]
    [('y', 1)]
    """
    first, end = (0, len(offsets)) if tokens is None else tokens
    pieces: list[Segment] = []
    cursor = 0
    if first > 0:  # where the earlier tokens leave the text, and past the gap that goes with them
        cursor = int(max(0, *map(max, offsets[:first])))
        if first < len(offsets):
            cursor = max(cursor, int(offsets[first][0]))

    def plain(until: int) -> None:
        nonlocal cursor
        cuts = sorted({cursor, until, *(c for c in (action_span or ()) if cursor < c < until)})
        for start, stop in zip(cuts, cuts[1:], strict=False):
            pieces.append(Segment(raw_output[start:stop], None, _overlaps(start, stop, action_span)))
        cursor = max(cursor, until)

    for index, (start, stop) in enumerate(offsets[first:end], start=first):
        start, stop = max(int(start), cursor), max(int(stop), int(start), cursor)
        if start > cursor:
            plain(start)
        pieces.append(Segment(raw_output[start:stop], index, _overlaps(start, stop, action_span)))
        cursor = stop
    if end < len(offsets):
        plain(max(int(offsets[end][0]), cursor))
    elif cursor < len(raw_output):
        plain(len(raw_output))
    return pieces
