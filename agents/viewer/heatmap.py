"""The token heatmap of one turn: its raw output cut at token boundaries, each token coloured.

A token's colour encodes one of its recorded values (the final advantage by default; Δ, the
weight or the sampling log-prob on request) on a diverging scale around a centre (0, or 1
for weights): blue above, red below, opacity ``|value − centre| / scale`` with ``scale`` the
largest such distance over the trajectory, so the strongest token of the trajectory is the
most opaque and tokens at the centre are clear. A token's text is black or white, whichever
contrasts more with its colour (:func:`text_colour`: at least 4.5:1, WCAG AA, at any opacity),
and what a font may not draw (control characters, lone UTF-8 pieces, scripts outside
:data:`DRAWN`) is shown as a Python escape (:func:`readable`).

Example:
    >>> colour(0.5, scale=1.0)
    'rgba(31, 119, 180, 0.425)'
    >>> colour(-2.0, scale=1.0), colour(0.0, scale=0.0)
    ('rgba(214, 39, 40, 0.85)', 'rgba(0, 0, 0, 0)')
    >>> text_colour('rgba(214, 39, 40, 0.85)'), text_colour('rgb(31, 119, 180)')
    ('#000', '#fff')
    >>> print("".join(text for text, _ in readable("ok" + chr(7) + chr(0xFFFD) + chr(0x4E2D))))
    ok\\x07\\ufffd\\u4e2d
"""

from __future__ import annotations

import unicodedata
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
PAGE_BACKGROUND = (251, 251, 252)
"""The heatmap's background (``.turn pre`` in viewer.css), under a token's translucent colour."""
DRAWN = ((0x20, 0x7E), (0xA0, 0x2FF), (0x370, 0x52F), (0x1E00, 0x1FFF), (0x2010, 0x22FF), (0x2500, 0x25FF))
"""Code point ranges shown as themselves (Latin, Greek, Cyrillic, punctuation, arrows, maths, boxes:
what the usual monospace fonts draw); others are escaped so they never show as missing-glyph boxes."""
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Mn", "Me", "Zl", "Zp", "Zs"})
"""Unicode categories escaped even inside :data:`DRAWN`: invisible, combining or unassigned characters
(a plain space and a newline excepted)."""


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


def _luminance(rgb: Sequence[float]) -> float:
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    red, green, blue = (linear(c) for c in rgb)
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast(first: Sequence[float], second: Sequence[float]) -> float:
    """The WCAG contrast ratio of two RGB colours (1 to 21).

    >>> round(contrast((0, 0, 0), (255, 255, 255)), 1)
    21.0
    """
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def blend(css: str, under: Sequence[float] = PAGE_BACKGROUND) -> tuple[float, float, float]:
    """The RGB colour an ``rgba(r, g, b, a)`` (or ``rgb(r, g, b)``) shows over ``under``."""
    parts = [float(part) for part in css[css.index("(") + 1 : css.index(")")].split(",")]
    alpha = parts[3] if len(parts) == 4 else 1.0
    red, green, blue = (alpha * c + (1 - alpha) * u for c, u in zip(parts[:3], under, strict=True))
    return red, green, blue


def text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with ``background`` over the page (always >= 4.5:1)."""
    shown = blend(background)
    return "#000" if contrast(shown, (0, 0, 0)) >= contrast(shown, (255, 255, 255)) else "#fff"


def _escaped(character: str) -> bool:
    if character in " \n":
        return False
    point = ord(character)
    if unicodedata.category(character) in ESCAPED_CATEGORIES:
        return True
    return not any(low <= point <= high for low, high in DRAWN)


def readable(text: str) -> list[tuple[str, bool]]:
    """``text`` in runs of ``(text, escaped)``: characters a font may not draw become their Python escape.

    A token of a random vocabulary (or a lone byte of a UTF-8 character, decoded as U+FFFD)
    then reads as ``\\u4e2d`` or ``\\ufffd`` instead of a box.

    >>> readable("a" + chr(9) + "b")
    [('a', False), ('\\\\t', True), ('b', False)]
    """
    runs: list[tuple[str, bool]] = []
    for character in text:
        escaped = _escaped(character)
        shown = character.encode("unicode_escape").decode("ascii") if escaped else character
        if runs and runs[-1][1] == escaped:
            runs[-1] = (runs[-1][0] + shown, escaped)
        else:
            runs.append((shown, escaped))
    return runs


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
