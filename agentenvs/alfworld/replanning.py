"""Plans from any state of an ALFWorld game: the state as a PDDL problem, reduced to its goal, planned with bounds.

Once the agent leaves the walkthrough, the expert needs a plan from where it is. TextWorld's
planner searches the whole scene without bound (minutes and gigabytes on large scenes), so, as the
generator does (:mod:`agentenvs.alfworld.generator`), the planner here searches a **reduced
problem**: the current state (the PDDL problem's ``(:init ...)`` replaced by the state's facts)
restricted to what the goal needs — the objects of the goal's types, the object the agent holds,
the receptacles holding them, every receptacle of the goal's types and of the appliances the goal's
predicates need (a sink or bathtub basin to clean, a microwave to heat, a fridge to cool, a knife
to slice), and their locations. The plan is found and **replayed on the whole state** in the
verifier's child process (:class:`~agentenvs.alfworld.verifier.PlannerProcess`, under the same
:class:`~agentenvs.alfworld.verifier.PlannerLimits` as generation): a plan is returned only if it
wins the game from this state. When the reduced problem has no winning plan, the whole state is
planned under the same limits.

Example:
    >>> problem = "(define (problem p) (:objects agent1 - agent l1 - location) (:init (atLocation agent1 l0)) (:goal (x)))"
    >>> state_problem(problem, [("atlocation", ("agent1", "l1"))])
    '(define (problem p) (:objects agent1 - agent l1 - location) (:init\\n        (atlocation agent1 l1)\\n        ) (:goal (x)))'
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentenvs.alfworld.verifier import PlannerProcess

Fact = tuple[str, tuple[str, ...]]
"""A true ground atom: (predicate, arguments), lower-cased as the engine reports them."""

APPLIANCES: Mapping[str, tuple[str, ...]] = {
    "isclean": ("sinkbasintype", "bathtubbasintype"),
    "ishot": ("microwavetype",),
    "iscool": ("fridgetype",),
    "issliced": ("knifetype", "butterknifetype"),
}
"""Goal predicate -> the receptacle (or, for slicing, object) types the action that makes it true needs."""

_TYPE_TOKEN = re.compile(r"[A-Za-z0-9_]+Type\b|[a-z0-9_]+type\b")


@dataclass(frozen=True)
class PlanResult:
    """What planning from one state found.

    Attributes:
        plan: The commands that win from the state ([] when it is won), or None.
        status: ``"planned"`` (on the reduced problem), ``"planned on the whole state"``, or why
            there is no plan: ``"unsolvable: ..."`` (the planner found none, or its plan did not win)
            or ``"planner limit: ..."`` (time or memory limit, or the child died).
    """

    plan: tuple[str, ...] | None
    status: str


def _block(problem: str, head: str) -> tuple[int, int]:
    """The span of the ``(head ...)`` block of ``problem`` (parentheses balanced), or (-1, -1)."""
    start = problem.lower().find(f"({head}")
    if start < 0:
        return -1, -1
    depth = 0
    for index in range(start, len(problem)):
        if problem[index] == "(":
            depth += 1
        elif problem[index] == ")":
            depth -= 1
            if depth == 0:
                return start, index + 1
    return -1, -1


def _render(facts: Iterable[Fact]) -> str:
    return "".join(f"\n        ({name} {' '.join(arguments)})" for name, arguments in facts)


def state_problem(problem: str, facts: Iterable[Fact]) -> str:
    """``problem`` with its ``(:init ...)`` replaced by ``facts`` (its numeric ``(= ...)`` facts kept)."""
    start, end = _block(problem, ":init")
    if start < 0:
        raise ValueError("the PDDL problem has no (:init ...) block")
    numeric = [line.strip() for line in problem[start:end].splitlines() if line.strip().startswith("(=")]
    body = _render(facts) + "".join(f"\n        {line}" for line in numeric)
    return problem[:start] + "(:init" + body + "\n        )" + problem[end:]


def _declarations(problem: str) -> list[tuple[str, str]]:
    """The ``(:objects ...)`` block as (name, type) pairs, names lower-cased."""
    start, end = _block(problem, ":objects")
    tokens = problem[start:end].strip("()").split()[1:]
    pairs: list[tuple[str, str]] = []
    pending: list[str] = []
    index = 0
    while index < len(tokens):
        if tokens[index] == "-" and index + 1 < len(tokens):
            pairs += [(name.lower(), tokens[index + 1].lower()) for name in pending]
            pending, index = [], index + 2
        else:
            pending.append(tokens[index])
            index += 1
    return pairs + [(name.lower(), "object") for name in pending]


def goal_needs(goal: str) -> tuple[set[str], set[str]]:
    """The types a goal names and the appliance types its predicates need (all lower-cased).

    >>> sorted(map(sorted, goal_needs("(exists (?o - object) (and (objectType ?o MugType) (isHot ?o)))")))
    [['microwavetype'], ['mugtype']]
    """
    lowered = goal.lower()
    named = {token.lower() for token in _TYPE_TOKEN.findall(goal)} - {"objecttype", "receptacletype"}
    appliances = {kind for predicate, kinds in APPLIANCES.items() if f"({predicate} " in lowered for kind in kinds}
    return named, appliances


def reduced_facts(problem: str, facts: Sequence[Fact], goal: str) -> tuple[list[tuple[str, str]], list[Fact]]:
    """The declarations and facts of the state reduced to what ``goal`` needs (see the module docstring)."""
    declarations = _declarations(problem)
    constants = {name for name, kind in declarations if kind in ("rtype", "otype")}
    named, appliances = goal_needs(goal)
    wanted_types = named | appliances
    by_name: dict[str, list[Fact]] = {}
    for fact in facts:
        by_name.setdefault(fact[0], []).append(fact)
    objects = {args[0] for _, args in by_name.get("objecttype", []) if args[1] in wanted_types}
    objects |= {args[1] for _, args in by_name.get("holds", []) if len(args) == 2}
    receptacles = {args[0] for _, args in by_name.get("receptacletype", []) if args[1] in wanted_types}
    receptacles |= {args[1] for _, args in by_name.get("inreceptacle", []) if args[0] in objects}
    kept = objects | receptacles | {name for name, kind in declarations if kind == "agent"}
    kept |= {args[1] for _, args in by_name.get("receptacleatlocation", []) if args[0] in receptacles}
    kept |= {args[1] for _, args in by_name.get("objectatlocation", []) if args[0] in objects}
    kept |= {args[1] for _, args in by_name.get("atlocation", [])}
    allowed = kept | constants
    kept_facts = [fact for fact in facts if all(argument in allowed for argument in fact[1])]
    return [(name, kind) for name, kind in declarations if name in allowed], kept_facts


def reduced_problem(problem: str, facts: Sequence[Fact], goal: str) -> str:
    """The state's problem reduced to ``goal``'s needs: fewer objects, the same goal."""
    declarations, kept = reduced_facts(problem, facts, goal)
    reduced = state_problem(problem, kept)
    start, end = _block(reduced, ":objects")
    objects = "(:objects" + "".join(f"\n        {name} - {kind}" for name, kind in declarations) + "\n        )"
    return reduced[:start] + objects + reduced[end:]


class Replanner:
    """Plans from states of one env's games in a bounded child process (:class:`PlannerProcess`).

    Args:
        planner: The child process (its limits bound every plan).
    """

    def __init__(self, planner: PlannerProcess) -> None:
        self.planner = planner
        self._folder = tempfile.TemporaryDirectory(prefix="agentenvs-replan-")

    def plan(self, game: Mapping[str, Any], facts: Sequence[Fact], goal: str) -> PlanResult:
        """A plan that wins ``game`` from the state ``facts`` (see :class:`PlanResult`)."""
        problem = str(game["pddl_problem"])
        base = {key: value for key, value in game.items() if key not in ("walkthrough", "solvable", "pddl_problem")}
        whole = os.path.join(self._folder.name, "state.tw-pddl")
        reduced = os.path.join(self._folder.name, "reduced.tw-pddl")
        with open(whole, "w", encoding="utf-8") as handle:
            json.dump({**base, "pddl_problem": state_problem(problem, facts)}, handle)
        with open(reduced, "w", encoding="utf-8") as handle:
            json.dump({**base, "pddl_problem": reduced_problem(problem, facts, goal)}, handle)
        verdict = self.planner.verify(whole, reduced)
        if verdict.walkthrough:
            return PlanResult(tuple(verdict.walkthrough), "planned")
        if verdict.exceeded_limit:
            return PlanResult(None, f"planner limit: {verdict.reason}")
        verdict = self.planner.verify(whole, whole)
        if verdict.walkthrough:
            return PlanResult(tuple(verdict.walkthrough), "planned on the whole state")
        kind = "planner limit" if verdict.exceeded_limit else "unsolvable"
        return PlanResult(None, f"{kind}: {verdict.reason}")

    def close(self) -> None:
        """Stops the child and removes the scratch files."""
        self.planner.close()
        self._folder.cleanup()
