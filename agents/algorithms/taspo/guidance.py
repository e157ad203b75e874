"""TASPO privileged information: conditional guidance from successful siblings.

An analyzer reads the group's *successful* trajectories and writes guidance items, each
naming the things it is about (its anchors: objects, receptacles, products, queries) and
citing its evidence (the source observation/action), so it can later be aligned to the
target trajectory's own path (:mod:`agents.algorithms.taspo.alignment`).

Kinds: ``requirement`` (an action that was needed, conditioned on what is in view),
``order`` (one action before another), ``progress`` (what an action's success looks like)
and ``alternative`` (different actions that both worked at the same point).

Example:
    >>> from agentenvs.core.trajectory import Trajectory, Turn
    >>> turns = [Turn("You see a desk 1.", "go to desk 1", "go to desk 1", None, 0.0, True),
    ...          Turn("On the desk 1 you see a pen 2.", "take pen 2 from desk 1", "take pen 2 from desk 1",
    ...               None, 1.0, True)]
    >>> win = Trajectory("t", 0, turns, True, 1.0, final_observation="You pick up the pen 2.")
    >>> items = rule_based_guidance([win]).items
    >>> [(item.kind, item.anchors) for item in items][:3]
    [('requirement', ('desk 1',)), ('order', ('desk 1', 'pen 2')), ('progress', ('desk 1',))]
    >>> items[0].text
    'When desk 1 is in view, "go to desk 1" was a step of a successful attempt.'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agentenvs.core.trajectory import Trajectory
from agents.algorithms.privileged.endpoints import CompleteFn
from agents.algorithms.privileged.text import (
    content_terms,
    mentions,
    normalize_action,
    observations_up_to,
    render_transcript,
    shorten,
)

GUIDANCE_KINDS: tuple[str, ...] = ("requirement", "order", "progress", "alternative")


@dataclass(frozen=True)
class GuidanceItem:
    """One conditional guidance item.

    Attributes:
        kind: One of ``GUIDANCE_KINDS``.
        text: The guidance as the policy will read it.
        anchors: Lower-case terms it names; it applies where they have been observed.
        evidence: The source observation/action it was derived from.
    """

    kind: str
    text: str
    anchors: tuple[str, ...]
    evidence: str = ""

    def __post_init__(self) -> None:
        if self.kind not in GUIDANCE_KINDS:
            raise ValueError(f"GuidanceItem.kind must be one of {GUIDANCE_KINDS}, got {self.kind!r}")
        if not self.anchors:
            raise ValueError("GuidanceItem needs at least one anchor to be alignable")


@dataclass
class Analysis:
    """An analyzer's items and how many candidate items it had to drop (unparsable/unanchored)."""

    items: list[GuidanceItem]
    dropped: int = 0


def _grounded_terms(trajectory: Trajectory, turn_index: int) -> tuple[str, ...]:
    """The action's content terms that the sibling had observed when it acted (all terms if none)."""
    terms = content_terms(trajectory.turns[turn_index].action)
    seen = observations_up_to(trajectory, turn_index)
    grounded = tuple(term for term in terms if mentions(seen, term))
    return grounded or terms


def _result_of(trajectory: Trajectory, turn_index: int) -> str:
    turns = trajectory.turns
    return turns[turn_index + 1].observation if turn_index + 1 < len(turns) else trajectory.final_observation


def rule_based_guidance(successes: Sequence[Trajectory], *, max_items: int = 24) -> Analysis:
    """Guidance from the successful siblings' valid actions and the observations around them.

    Within a kind, items are ranked by how many siblings support them (ties: first seen);
    the kinds are then interleaved (requirement, order, progress, alternative, requirement,
    ...) and the first ``max_items`` kept. Duplicates are merged.
    """
    found: dict[str, dict[str, GuidanceItem]] = {kind: {} for kind in GUIDANCE_KINDS}  # insertion-ordered
    siblings: dict[tuple[str, str], set[int]] = {}
    options_by_situation: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}

    def add(kind: str, key: str, item: GuidanceItem, sibling: int) -> None:
        found[kind].setdefault(key, item)
        siblings.setdefault((kind, key), set()).add(sibling)

    for sibling, trajectory in enumerate(successes):
        steps = [(index, turn) for index, turn in enumerate(trajectory.turns) if turn.valid and turn.action]
        previous: tuple[str, tuple[str, ...]] | None = None
        for index, turn in steps:
            anchors = _grounded_terms(trajectory, index)
            situation = " ".join(turn.observation.lower().split())
            options_by_situation.setdefault(situation, {}).setdefault(
                normalize_action(turn.action), (turn.action.strip(), anchors)
            )
            if not anchors:
                previous = None
                continue
            action = turn.action.strip()
            key = normalize_action(action)
            evidence = f'saw "{shorten(turn.observation, 80)}" -> did "{shorten(action, 60)}"'
            where = " and ".join(anchors)
            add(
                "requirement",
                key,
                GuidanceItem(
                    "requirement",
                    f"When {where} {'is' if len(anchors) == 1 else 'are'} in view, "
                    f'"{action}" was a step of a successful attempt.',
                    anchors,
                    evidence,
                ),
                sibling,
            )
            result = _result_of(trajectory, index)
            if result.strip():
                add(
                    "progress",
                    key,
                    GuidanceItem(
                        "progress",
                        f'"{action}" makes progress when the result reads like "{shorten(result, 80)}".',
                        anchors,
                        f'did "{shorten(action, 60)}" -> saw "{shorten(result, 80)}"',
                    ),
                    sibling,
                )
            if previous is not None and normalize_action(previous[0]) != key:
                pair_anchors = tuple(dict.fromkeys(previous[1] + anchors))
                add(
                    "order",
                    f"{normalize_action(previous[0])} -> {key}",
                    GuidanceItem(
                        "order",
                        f'Do "{previous[0]}" before "{action}".',
                        pair_anchors,
                        f'"{shorten(previous[0], 60)}" then "{shorten(action, 60)}"',
                    ),
                    sibling,
                )
            previous = (action, anchors)
    # Valid alternatives: different actions successful siblings took in the same situation.
    for situation, options in options_by_situation.items():
        choices = list(options.values())
        for (first, first_anchors), (second, second_anchors) in zip(choices, choices[1:], strict=False):
            anchors = tuple(dict.fromkeys(first_anchors + second_anchors))
            if not anchors:
                continue
            add(
                "alternative",
                f"{normalize_action(first)} | {normalize_action(second)}",
                GuidanceItem(
                    "alternative",
                    f'When you see "{shorten(situation, 60)}", "{first}" and "{second}" both led to success.',
                    anchors,
                    f'saw "{shorten(situation, 80)}"',
                ),
                -1,
            )
    ranked: dict[str, list[GuidanceItem]] = {}
    for kind in GUIDANCE_KINDS:
        keys = list(found[kind])
        order = sorted(range(len(keys)), key=lambda i: (-len(siblings[(kind, keys[i])]), i))
        ranked[kind] = [found[kind][keys[i]] for i in order]
    # Round-robin over kinds so a long trajectory's many requirements cannot crowd out the rest.
    ordered = [
        ranked[kind][rank]
        for rank in range(max((len(items) for items in ranked.values()), default=0))
        for kind in GUIDANCE_KINDS
        if rank < len(ranked[kind])
    ]
    return Analysis(ordered[:max_items], dropped=max(len(ordered) - max_items, 0))


def build_analysis_prompt(successes: Sequence[Trajectory], *, max_items: int = 8, max_turns: int = 12) -> str:
    """Asks an LM for conditional guidance lines ``KIND | guidance | anchors | evidence``."""
    lines = ["You extract reusable guidance from successful attempts at a task."]
    lines.append(f"Task: {shorten(successes[0].task if successes else '', 300)}")
    for number, trajectory in enumerate(successes, start=1):
        lines.append(f"Successful attempt {number}:")
        steps = [
            f'saw "{shorten(turn.observation, 100)}" -> did "{shorten(turn.action, 60)}"'
            for turn in trajectory.turns
            if turn.valid and turn.action
        ]
        lines.append(render_transcript(steps, limit=max_turns))
    lines += [
        f"Write at most {max_items} lines, each: KIND | guidance | anchors | evidence",
        "KIND is requirement, order, progress or alternative; guidance is one conditional sentence",
        "('When X is in view, ...'); anchors are comma-separated object/place/product/query names",
        "the guidance is about; evidence quotes the observation or action it comes from.",
    ]
    return "\n".join(lines)


_KIND_ALIASES = {kind: kind for kind in GUIDANCE_KINDS} | {
    "requirements": "requirement",
    "require": "requirement",
    "orders": "order",
    "ordering": "order",
    "progress rule": "progress",
    "alternatives": "alternative",
}


def parse_guidance(text: str, *, max_items: int = 8) -> Analysis:
    """Items from ``KIND | guidance | anchors | evidence`` lines; malformed candidate lines are counted."""
    items: list[GuidanceItem] = []
    dropped = 0
    for line in text.splitlines():
        if "|" not in line:
            continue
        parts = [part.strip() for part in re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", line).split("|")]
        kind = _KIND_ALIASES.get(parts[0].lower().strip("*: "), "")
        anchors = (
            tuple(dict.fromkeys(a.strip().strip("\"'").lower() for a in parts[2].split(",") if a.strip()))
            if len(parts) >= 3
            else ()
        )
        if not kind or len(parts) < 3 or not parts[1] or not anchors:
            dropped += 1
            continue
        item = GuidanceItem(kind, parts[1], anchors, parts[3] if len(parts) > 3 else "")
        if item not in items and len(items) < max_items:
            items.append(item)
    return Analysis(items, dropped)


def lm_guidance(successes: Sequence[Trajectory], complete: CompleteFn, *, max_items: int = 8) -> Analysis:
    """Guidance written by an LM (local policy adapter or OpenAI-compatible endpoint)."""
    if not successes:
        return Analysis([], 0)
    (text,) = complete([build_analysis_prompt(successes, max_items=max_items)])
    return parse_guidance(text, max_items=max_items)


def raw_trajectory_text(success: Trajectory, *, max_turns: int = 12) -> str:
    """Ablation PI: a successful sibling's actions verbatim."""
    actions = [turn.action for turn in success.turns if turn.valid and turn.action]
    return "A successful attempt at this task did:\n" + render_transcript(actions, limit=max_turns)
