"""ORSD rubric bundles: data, the policy-written path and the programmatic path.

A rubric item is one checkable statement about *how* a trajectory behaved. Items come in
structured kinds a program can check, or as free text an LM verifier judges:

=================  ==========================  =============================================
kind               args                        satisfied when
=================  ==========================  =============================================
``requires``       (action,)                   the trajectory executes the action
``avoids``         (action,)                   the trajectory never executes it
``order``          (first, then)               both run and ``first``'s first occurrence
                                               precedes ``then``'s first occurrence
``mentions``       (term,)                     some executed action names the term
``text``           ()                          an LM verifier says yes
=================  ==========================  =============================================

Policy-written bundles use one item per line; lines ``REQUIRE: a``, ``AVOID: a``,
``ORDER: a -> b`` and ``MENTION: t`` become structured items, any other numbered or
bulleted line a ``text`` item. A bundle with no usable line is unparsable (dropped, counted).

Example:
    >>> parse_rubric_bundle("1. REQUIRE: go to desk 1\\n2. Check the drawer before leaving.").items
    (RubricItem(kind='requires', text='execute "go to desk 1"', args=('go to desk 1',)), \
RubricItem(kind='text', text='Check the drawer before leaving.', args=()))
    >>> parse_rubric_bundle("I cannot help with that.") is None
    True
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import permutations

from agentenvs.core.trajectory import Trajectory, TrajectoryGroup
from agents.algorithms.privileged.text import (
    content_terms,
    normalize_action,
    render_transcript,
    shorten,
    trajectory_actions,
)

ITEM_KINDS: tuple[str, ...] = ("requires", "avoids", "order", "mentions", "text")
_ARITY = {"requires": 1, "avoids": 1, "order": 2, "mentions": 1, "text": 0}


@dataclass(frozen=True)
class RubricItem:
    """One process rubric item (see the module table for kinds)."""

    kind: str
    text: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ITEM_KINDS:
            raise ValueError(f"RubricItem.kind must be one of {ITEM_KINDS}, got {self.kind!r}")
        if len(self.args) != _ARITY[self.kind]:
            raise ValueError(f"RubricItem of kind {self.kind!r} needs {_ARITY[self.kind]} args, got {self.args!r}")

    @classmethod
    def requires(cls, action: str) -> RubricItem:
        return cls("requires", f'execute "{action}"', (normalize_action(action),))

    @classmethod
    def avoids(cls, action: str) -> RubricItem:
        return cls("avoids", f'never execute "{action}"', (normalize_action(action),))

    @classmethod
    def order(cls, first: str, then: str) -> RubricItem:
        return cls("order", f'execute "{first}" before "{then}"', (normalize_action(first), normalize_action(then)))

    @classmethod
    def mentions(cls, term: str) -> RubricItem:
        return cls("mentions", f'act on "{term}"', (term.lower(),))


@dataclass(frozen=True)
class RubricBundle:
    """A candidate set of rubric items and where it came from."""

    items: tuple[RubricItem, ...]
    source: str = "policy"
    raw: str = field(default="", compare=False)

    def render(self) -> str:
        """The bundle as privileged text for the policy's prompt."""
        lines = [f"{index}. {item.text}" for index, item in enumerate(self.items, start=1)]
        return "Process rubric (behaviour that separated successful from failed attempts):\n" + "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Policy-written bundles: prompt and parser.


def build_rubric_prompt(group: TrajectoryGroup, *, max_items: int = 5, max_actions: int = 12) -> str:
    """A compact prompt asking for rubric items that separate successes from failures."""
    lines = [
        "You review attempts at one task and write a process rubric.",
        f"Task: {shorten(group.trajectories[0].task if group.trajectories else '', 300)}",
        "",
    ]
    for index, trajectory in enumerate(group.trajectories, start=1):
        outcome = "SUCCESS" if trajectory.success else "FAILURE"
        lines.append(f"Attempt {index} ({outcome}):")
        lines.append(render_transcript([shorten(a, 80) for a in trajectory_actions(trajectory)], limit=max_actions))
    lines += [
        "",
        f"Write at most {max_items} rubric items that successful attempts satisfy and failed ones do not.",
        "One item per line, numbered. Prefer the forms 'REQUIRE: <action>', 'AVOID: <action>',",
        "'ORDER: <action> -> <action>', 'MENTION: <object>'; otherwise one short sentence.",
        "Rubric:",
    ]
    return "\n".join(lines)


_LINE_PREFIX = re.compile(r"^\s*(?:\d+[.):]|[-*•])\s*")
_STRUCTURED = re.compile(r"^(REQUIRE|AVOID|ORDER|MENTION)\s*:\s*(.+)$", re.IGNORECASE)


def parse_rubric_line(line: str) -> RubricItem | None:
    """One rubric line as an item, or None if the line is not an item."""
    body = _LINE_PREFIX.sub("", line).strip().strip('"').strip()
    is_listed = bool(_LINE_PREFIX.match(line))
    if not body or len(body) > 300:
        return None
    match = _STRUCTURED.match(body)
    if match:
        keyword, rest = match.group(1).upper(), match.group(2).strip().strip('"')
        if keyword == "ORDER":
            parts = [part.strip().strip('"') for part in re.split(r"\s*->\s*", rest)]
            return RubricItem.order(parts[0], parts[1]) if len(parts) == 2 and all(parts) else None
        if not rest:
            return None
        return {"REQUIRE": RubricItem.requires, "AVOID": RubricItem.avoids, "MENTION": RubricItem.mentions}[keyword](
            rest
        )
    # Free text counts only on a numbered/bulleted line with a few words, to skip chatter.
    if is_listed and len(body.split()) >= 3:
        return RubricItem("text", body)
    return None


def parse_rubric_bundle(text: str, *, max_items: int = 8, source: str = "policy") -> RubricBundle | None:
    """Every usable line of ``text`` as a bundle (duplicates dropped), or None if there is none."""
    items: list[RubricItem] = []
    for line in text.splitlines():
        item = parse_rubric_line(line)
        if item is not None and item not in items:
            items.append(item)
        if len(items) >= max_items:
            break
    return RubricBundle(tuple(items), source=source, raw=text) if items else None


@dataclass
class ProposalResult:
    """The parsed bundles of one group and how many outputs were dropped as unparsable."""

    bundles: list[RubricBundle]
    dropped: int


def propose_rubric_bundles(
    group: TrajectoryGroup,
    complete: Callable[[Sequence[str]], Sequence[str]],
    *,
    num_bundles: int = 4,
    max_items: int = 5,
) -> ProposalResult:
    """K bundles written independently by a text generator (the current policy, sampling).

    ``complete`` maps prompts to completions; the same prompt is sent ``num_bundles`` times so
    a sampling generator writes independent candidates.
    """
    prompt = build_rubric_prompt(group, max_items=max_items)
    outputs = complete([prompt] * num_bundles)
    bundles = [parse_rubric_bundle(text, max_items=max_items) for text in outputs]
    kept = [bundle for bundle in bundles if bundle is not None]
    return ProposalResult(kept, dropped=len(bundles) - len(kept))


# ---------------------------------------------------------------------------------------------
# Programmatic bundles: contrastive action patterns.

PATTERN_FAMILIES: tuple[str, ...] = ("requires", "order", "mentions", "avoids")


def _rate(trajectories: Sequence[Trajectory], predicate: Callable[[Trajectory], bool]) -> float:
    return sum(predicate(t) for t in trajectories) / len(trajectories) if trajectories else 0.0


def _contains(sequence: list[str], *, item: str) -> bool:
    return item in sequence


def _mentions(sequence: list[str], *, term: str) -> bool:
    return any(term in content_terms(action) for action in sequence)


def contrastive_rubric_bundles(
    group: TrajectoryGroup,
    *,
    families: Sequence[str] = PATTERN_FAMILIES,
    max_items: int = 5,
    min_gap: float = 0.5,
) -> ProposalResult:
    """One bundle per pattern family, from patterns whose frequency differs between outcomes.

    For a pattern p, gap(p) = P(p | success) − P(p | failure) over the group's trajectories.
    ``requires``/``mentions``/``order`` items keep patterns with gap ≥ ``min_gap``,
    ``avoids`` items those with gap ≤ −``min_gap``; each family keeps its ``max_items``
    largest |gap| (ties: first seen in the successful trajectories). A family with no pattern
    gives no bundle. Groups without both outcomes give no bundles.

    Example:
        >>> from agentenvs.core.trajectory import Turn
        >>> def traj(actions, success):
        ...     turns = [Turn("", a, a, None, 0.0, True) for a in actions]
        ...     return Trajectory("t", 0, turns, success, float(success))
        >>> group = TrajectoryGroup("t", 0, [traj(["look", "take key"], True), traj(["look", "sleep"], False)])
        >>> [b.items[0].text for b in contrastive_rubric_bundles(group, families=("requires", "avoids")).bundles]
        ['execute "take key"', 'never execute "sleep"']
    """
    unknown = [family for family in families if family not in PATTERN_FAMILIES]
    if unknown:
        raise ValueError(f"families must be drawn from {PATTERN_FAMILIES}, got {unknown}")
    wins = [t for t in group.trajectories if t.success]
    losses = [t for t in group.trajectories if not t.success]
    if not wins or not losses:
        return ProposalResult([], dropped=0)
    sequences = {id(t): [normalize_action(a) for a in trajectory_actions(t)] for t in group.trajectories}

    def first_seen(source: Sequence[Trajectory], extract: Callable[[list[str]], list]) -> list:
        return list(dict.fromkeys(p for t in source for p in extract(sequences[id(t)])))

    def gap(holds: Callable[[list[str]], bool]) -> float:
        return _rate(wins, lambda t: holds(sequences[id(t)])) - _rate(losses, lambda t: holds(sequences[id(t)]))

    def ordered(first: str, then: str) -> Callable[[list[str]], bool]:
        return lambda seq: first in seq and then in seq and seq.index(first) < seq.index(then)

    bundles: list[RubricBundle] = []
    for family in families:
        scored: list[tuple[float, RubricItem]] = []
        if family in ("requires", "avoids"):
            source = wins if family == "requires" else losses
            for action in first_seen(source, lambda seq: seq):
                g = gap(functools.partial(_contains, item=action))
                if (g >= min_gap) if family == "requires" else (g <= -min_gap):
                    scored.append((abs(g), getattr(RubricItem, family)(action)))
        elif family == "mentions":
            for term in first_seen(wins, lambda seq: [t for a in seq for t in content_terms(a)]):
                g = gap(functools.partial(_mentions, term=term))
                if g >= min_gap:
                    scored.append((g, RubricItem.mentions(term)))
        else:  # order: pairs of distinct actions that successful trajectories run in this order
            pairs = first_seen(wins, lambda seq: list(permutations(dict.fromkeys(seq), 2)))
            for first, then in pairs:
                if sequences and not any(ordered(first, then)(sequences[id(t)]) for t in wins):
                    continue
                g = gap(ordered(first, then))
                if g >= min_gap:
                    scored.append((g, RubricItem.order(first, then)))
        scored.sort(key=lambda pair: -pair[0])  # stable: ties keep first-seen order
        if scored:
            bundles.append(RubricBundle(tuple(item for _, item in scored[:max_items]), source=f"contrastive:{family}"))
    return ProposalResult(bundles, dropped=0)
