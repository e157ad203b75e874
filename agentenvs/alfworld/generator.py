"""A seeded generator of new ALFWorld games, verified on the real engine.

Scenes are built from the templates the ``alfworld`` package ships: the receptacles
(with their interaction poses, which become locations) and object types of the 120
AI2-THOR floor plans (kitchen, living room, bedroom, bathroom), the object/receptacle
compatibility table and the action properties (heatable, coolable, cleanable,
toggleable) of ``alfworld.gen.constants``. A goal of one of the six task types is
drawn with ALFWorld's own PDDL goal and sentence templates (``goal_library``); the
game is written in the ``game.tw-pddl`` format with the shipped domain
(``alfred.pddl``) and grammar (``alfred.twl2``). A game is kept only once the
planner's plan, replayed through the real TextWorld engine, wins it; that plan is
stored as the game's ``walkthrough``.

**Bounded planning, deterministic pool.** TextWorld's planner is a blind
(uniform-cost) search: on a whole scene (40 receptacles, 20 objects, a dozen drawers
to open) it may run for minutes while its memory grows by gigabytes — it hung on
``generated/00221-pick_two_obj_and_place`` of the default pool. A timeout alone would
make the pool depend on the machine's speed (a slow machine would reject games a fast
one keeps), so what decides is deterministic:

1. The planner searches a **planning problem** reduced to what the goal needs: the
   goal objects (and the lamp), the receptacles holding them, one receptacle of the
   goal type and one of the appliance the task needs (sink, microwave, fridge). No
   action of this domain depends on the objects and receptacles left out (receptacles
   have no capacity), and going anywhere takes one step, so a plan of the reduced
   problem is a plan of the game (a few steps longer than the game's shortest at
   worst, which may use another receptacle of the same type). The reduced problem
   holds at most :data:`MAX_PLANNING_RECEPTACLES` receptacles and
   :data:`MAX_PLANNING_OBJECTS` objects (a draw above that is drawn again, as a scene
   that cannot host its goal is): translating and planning it takes at most 60 ms on
   the default pool.
2. The plan, written with the game's names, must win the **whole game** replayed
   through the engine, so the walkthrough is checked where it will be played.
3. CPU-time and memory limits (:class:`~agentenvs.alfworld.verifier.PlannerLimits`,
   20 CPU seconds and 1 GiB by default; the slowest verification of the default pool,
   replay included, takes 2.4 s and 145 MB) bound the child process that verifies a
   game (:mod:`agentenvs.alfworld.verifier`). CPU time, not the wall clock: a loaded
   machine slows the child down but does not change how much work a verification is,
   so it cannot reject a game an idle machine keeps. They are a safety net: a game they
   reject is skipped for the next attempt, with a warning, and the rejection is
   **recorded in the cache** (``rejections.json`` beside the game), so a cache never
   changes its games afterwards, even on a faster machine or with other limits. The
   wall clock only stops a child that makes no progress at all (30 times the CPU limit);
   a draw it stops is verified once more before it counts as rejected
   (:attr:`GameReport.retries`). The CPU limit is never below
   :data:`MIN_VERIFICATION_TIME_S` (10 s, four times the slowest verification): a limit near
   the work a verification takes would let the CPU's timing noise decide (two idle runs
   with a limit of a fraction of a second kept different games).

So the same (seed, index) gives the same game and walkthrough on every machine unless
the safety net fires, which it does not on the default pool (``benchmarks/
alfworld_generation.py`` measures it).

>>> import tempfile
>>> games = GeneratedGames(seed=0, count=6, cache_dir=tempfile.mkdtemp())
>>> [r.task_type for r in games.records][:2]
['pick_and_place_simple', 'look_at_obj_in_light']
"""

from __future__ import annotations

import json
import os
import queue
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

import numpy as np

from agentenvs.alfworld.data import TASK_TYPES, GameRecord, normalize_task_types
from agentenvs.alfworld.verifier import PlannerLimits, PlannerProcess
from agentenvs.core.checks import check_bool, check_int, check_path
from agentenvs.core.paths import cache_dir as default_cache_dir

GENERATOR_VERSION = 2
"""Bumped whenever generated games change; part of the cache folder name.

2: walkthroughs planned on the reduced planning problem (bounded, see above).
"""

MAX_PLANNING_RECEPTACLES = 8
"""Most receptacles a planning problem may hold (the reduction keeps at most 4 today)."""

MAX_PLANNING_OBJECTS = 6
"""Most objects a planning problem may hold (the reduction keeps at most 3 today)."""

MAX_ATTEMPTS = 50
"""Draws of one game before its generation fails."""

_SCENE_TYPES = {
    "Kitchen": range(1, 31),
    "LivingRoom": range(201, 231),
    "Bedroom": range(301, 331),
    "Bathroom": range(401, 431),
}
_VALID_SCENES = {
    "pick_and_place_simple": ("Kitchen", "LivingRoom", "Bathroom", "Bedroom"),
    "pick_two_obj_and_place": ("Kitchen", "LivingRoom", "Bathroom", "Bedroom"),
    "look_at_obj_in_light": ("LivingRoom", "Bedroom"),
    "pick_clean_then_place_in_recep": ("Kitchen", "Bathroom"),
    "pick_heat_then_place_in_recep": ("Kitchen",),
    "pick_cool_then_place_in_recep": ("Kitchen",),
}
_OPENABLE = {"Fridge", "Cabinet", "Microwave", "Drawer", "Safe", "Box"}
_LAMP_HOLDERS = ("Desk", "SideTable", "Dresser", "Nightstand")
_NEEDS = {  # task type -> (property the object needs, receptacle type the task needs)
    "pick_clean_then_place_in_recep": ("Cleanable", "SinkBasin"),
    "pick_heat_then_place_in_recep": ("Heatable", "Microwave"),
    "pick_cool_then_place_in_recep": ("Coolable", "Fridge"),
}


class GenerationError(RuntimeError):
    """A drawn scene cannot host the drawn goal (the generator draws again)."""


def _alfworld_root() -> Path:
    import alfworld

    return Path(alfworld.__file__).parent


@lru_cache(maxsize=1)
def _constants() -> Any:
    from alfworld.gen import constants

    return constants


@lru_cache(maxsize=1)
def _domain_and_grammar() -> tuple[str, str]:
    root = _alfworld_root() / "data"
    return (root / "alfred.pddl").read_text(), (root / "alfred.twl2").read_text()


@lru_cache(maxsize=512)
def _scene(number: int) -> tuple[dict[str, list[float]], list[str]] | None:
    layouts = _alfworld_root() / "gen" / "layouts"
    receptacles, objects = layouts / f"FloorPlan{number}-openable.json", layouts / f"FloorPlan{number}-objects.json"
    if not (receptacles.is_file() and objects.is_file()):
        return None
    return json.loads(receptacles.read_text()), json.loads(objects.read_text())


def _mangle(name: str) -> str:
    for symbol, word in (("|", "_bar_"), ("-", "_minus_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_")):
        name = name.replace(symbol, word)
    return name


def _location(pose: list[float]) -> str:
    x, z, rotation, horizon = pose
    return _mangle(f"loc|{int(round(x / 0.25))}|{int(round(z / 0.25))}|{int(rotation) // 90 % 4}|{int(horizon)}")


@dataclass(frozen=True)
class _Thing:
    id: str
    type: str


@dataclass(frozen=True)
class Scene:
    """One drawn game before it is written: its things, where they are, and its goal.

    Attributes:
        task_type: One of :data:`~agentenvs.alfworld.data.TASK_TYPES`.
        receptacles: The scene's receptacles, in the floor plan's order.
        locations: Each receptacle's location.
        objects: Each object with the receptacle holding it.
        agent_location: Where the agent starts.
        target: The goal object's type.
        target_rtype: The goal receptacle's type (None for ``look_at_obj_in_light``).
        toggle: The lamp's type.
        sentence: The task sentence ("put a mug in desk.").
    """

    task_type: str
    receptacles: tuple[_Thing, ...]
    locations: Mapping[str, str]
    objects: tuple[tuple[_Thing, _Thing], ...]
    agent_location: str
    target: str
    target_rtype: str | None
    toggle: str
    sentence: str

    def game(self) -> dict[str, Any]:
        """The game's ``game.tw-pddl`` content (no walkthrough)."""
        return self._game(self.receptacles, self.objects)

    def planning_game(self) -> dict[str, Any]:
        """The game reduced to what its goal needs (see the module docstring), for the planner."""
        receptacles, objects = self.planning_subset()
        return self._game(receptacles, objects)

    def planning_subset(self) -> tuple[tuple[_Thing, ...], tuple[tuple[_Thing, _Thing], ...]]:
        """The receptacles and objects of the planning problem, in the scene's order."""
        wanted = {self.target, self.toggle} if self.task_type == "look_at_obj_in_light" else {self.target}
        objects = tuple((thing, holder) for thing, holder in self.objects if thing.type in wanted)
        kept = {holder.id for _, holder in objects}
        for rtype in (self.target_rtype, _NEEDS.get(self.task_type, (None, None))[1]):
            if rtype is not None and not any(r.type == rtype for r in self.receptacles if r.id in kept):
                # Any one will do: going anywhere is one step, and all of a type open alike.
                kept.add(next(r.id for r in self.receptacles if r.type == rtype))
        return tuple(r for r in self.receptacles if r.id in kept), objects

    def _game(self, receptacles: Iterable[_Thing], objects: Iterable[tuple[_Thing, _Thing]]) -> dict[str, Any]:
        domain, grammar = _domain_and_grammar()
        return {
            "pddl_domain": domain,
            "grammar": grammar.replace("UNKNOWN GOAL", self.sentence),
            "pddl_problem": self._problem(tuple(receptacles), tuple(objects)),
        }

    def _problem(self, receptacles: tuple[_Thing, ...], objects: tuple[tuple[_Thing, _Thing], ...]) -> str:
        c = _constants()
        contents = c.VAL_RECEPTACLE_OBJECTS
        rtypes = {r.type for r in receptacles}
        facts = [f"(atLocation agent1 {self.agent_location})"]
        for r in receptacles:
            facts.append(f"(receptacleType {r.id} {r.type}Type)")
            facts.append(f"(receptacleAtLocation {r.id} {self.locations[r.id]})")
            if r.type in _OPENABLE:
                facts.append(f"(openable {r.id})")
        for rtype in sorted(rtypes):
            facts += [f"(canContain {rtype}Type {otype}Type)" for otype in sorted(contents[rtype])]
        for thing, holder in objects:
            facts.append(f"(objectType {thing.id} {thing.type}Type)")
            facts.append(f"(inReceptacle {thing.id} {holder.id})")
            facts.append(f"(objectAtLocation {thing.id} {self.locations[holder.id]})")
            if thing.type == self.toggle:
                facts.append(f"(toggleable {thing.id})")
                continue
            facts.append(f"(pickupable {thing.id})")
            for prop, predicate in (
                ("Cleanable", "cleanable"),
                ("Heatable", "heatable"),
                ("Coolable", "coolable"),
                ("Sliceable", "sliceable"),
            ):
                if thing.type in c.VAL_ACTION_OBJECTS[prop]:
                    facts.append(f"({predicate} {thing.id})")
            if thing.type in c.RECEPTACLES:
                facts.append(f"(isReceptacleObject {thing.id})")

        otypes = sorted({t for rtype in rtypes for t in contents[rtype]} | {thing.type for thing, _ in objects})
        declarations = (
            ["agent1 - agent"]
            + [f"{r.id} - receptacle" for r in receptacles]
            + [f"{thing.id} - object" for thing, _ in objects]
            + sorted(
                {f"{self.locations[r.id]} - location" for r in receptacles} | {f"{self.agent_location} - location"}
            )
            + [f"{rtype}Type - rtype" for rtype in sorted(rtypes)]
            + [f"{otype}Type - otype" for otype in otypes]
        )
        from alfworld.gen import goal_library

        goal = goal_library.gdict[self.task_type]["pddl"].format(
            obj=self.target, recep=self.target_rtype, toggle=self.toggle, mrecep=""
        )
        return (
            "(define (problem generated)\n(:domain alfred)\n(:objects\n        "
            + "\n        ".join(declarations)
            + "\n        )\n\n(:init\n        "
            + "\n        ".join(facts)
            + "\n        )\n"
            + goal.replace("#", "-")
        )


def generate_scene(seed: int, task_type: str) -> Scene:
    """One unverified scene of ``task_type``, drawn from ``seed``.

    Raises:
        GenerationError: if no scene fits after many draws (never for valid types).
    """
    rng = np.random.default_rng(seed)
    for _ in range(200):
        try:
            return _draw_scene(rng, task_type)
        except GenerationError:
            continue
    raise GenerationError(f"no scene fits task type {task_type!r}")


def generate_game(seed: int, task_type: str) -> dict[str, Any]:
    """One unverified game of ``task_type`` (``game.tw-pddl`` content, no walkthrough).

    Raises:
        GenerationError: if no scene fits after many draws (never for valid types).
    """
    return generate_scene(seed, task_type).game()


def _draw_scene(rng: np.random.Generator, task_type: str) -> Scene:
    c = _constants()
    scene_type = _VALID_SCENES[task_type][int(rng.integers(len(_VALID_SCENES[task_type])))]
    numbers = [n for n in _SCENE_TYPES[scene_type] if _scene(n) is not None]
    layout = _scene(numbers[int(rng.integers(len(numbers)))])
    assert layout is not None  # numbers holds only floor plans with a layout
    poses, object_types = layout
    contents = c.VAL_RECEPTACLE_OBJECTS

    receptacles: list[_Thing] = []
    locations: dict[str, str] = {}
    for key, pose in poses.items():
        parts = key.split("|")
        rtype = parts[-1] if parts[-1].endswith("Basin") else parts[0]
        if parts[0] == "Sink" and not key.endswith("Basin"):
            key, rtype = key + "|SinkBasin", "SinkBasin"
        if rtype not in contents:
            continue
        receptacles.append(_Thing(_mangle(key), rtype))
        locations[receptacles[-1].id] = _location(pose)
    if not receptacles:
        raise GenerationError("scene without receptacles")
    rtypes = {r.type for r in receptacles}
    portable = sorted(t for t in set(object_types) if any(t in v for v in contents.values()) and t in c.OBJECTS)

    # The goal: an object type that some receptacle of the scene can hold.
    toggle = "DeskLamp"
    if task_type == "look_at_obj_in_light":
        holders = [r for r in receptacles if r.type in _LAMP_HOLDERS]
        if not holders:
            raise GenerationError("no place for a desk lamp")
        candidates = [t for t in portable if t != toggle]
        target_rtype = None
    else:
        prop, needed = _NEEDS.get(task_type, (None, None))
        if needed is not None and needed not in rtypes:
            raise GenerationError(f"scene without {needed}")
        candidates = [t for t in portable if prop is None or t in c.VAL_ACTION_OBJECTS[prop]]
    if not candidates:
        raise GenerationError("no goal object")
    target = candidates[int(rng.integers(len(candidates)))]
    sources = [r for r in receptacles if target in contents[r.type]]
    if task_type != "look_at_obj_in_light":
        goals = sorted(
            {r.type for r in receptacles if target in contents[r.type]}
            - {"SinkBasin", "BathtubBasin"}
            - ({_NEEDS[task_type][1]} if task_type in _NEEDS else set())
        )
        if not goals:
            raise GenerationError("no goal receptacle")
        target_rtype = goals[int(rng.integers(len(goals)))]
        sources = [r for r in sources if r.type != target_rtype]
    if not sources:
        raise GenerationError("nowhere to start the goal object")

    # Objects: the goal object (two for pick_two), a lamp, and clutter.
    objects: list[tuple[_Thing, _Thing]] = []
    counter = iter(range(1, 10_000))

    def place(otype: str, holders: list[_Thing]) -> None:
        holder = holders[int(rng.integers(len(holders)))]
        oid = _mangle(f"{otype}|{next(counter):+06.2f}|+00.90|{len(objects):+06.2f}")
        objects.append((_Thing(oid, otype), holder))

    for _ in range(2 if task_type == "pick_two_obj_and_place" else int(rng.integers(1, 3))):
        place(target, sources)
    if task_type == "look_at_obj_in_light":
        place(toggle, [r for r in receptacles if r.type in _LAMP_HOLDERS])
    clutter = [t for t in portable if t != target]
    for otype in rng.permutation(clutter)[: min(len(clutter), 12)]:
        holders = [r for r in receptacles if otype in contents[r.type] and r.type != target_rtype]
        if holders:
            for _ in range(int(rng.integers(1, 3))):
                place(str(otype), holders)

    agent_location = _mangle(f"loc|{int(rng.integers(-20, 20))}|{int(rng.integers(-20, 20))}|{int(rng.integers(4))}|30")
    from alfworld.gen import goal_library

    names = {"obj": target.lower(), "recep": (target_rtype or "").lower(), "toggle": toggle.lower(), "mrecep": ""}
    templates = goal_library.gdict[task_type]["templates"]
    sentence = templates[int(rng.integers(len(templates)))].format(**names)
    scene = Scene(
        task_type=task_type,
        receptacles=tuple(receptacles),
        locations=locations,
        objects=tuple(objects),
        agent_location=agent_location,
        target=target,
        target_rtype=target_rtype,
        toggle=toggle,
        sentence=sentence,
    )
    # The precheck that bounds the planner's search (module docstring): deterministic.
    planning_receptacles, planning_objects = scene.planning_subset()
    if len(planning_receptacles) > MAX_PLANNING_RECEPTACLES or len(planning_objects) > MAX_PLANNING_OBJECTS:
        raise GenerationError("planning problem too large")
    return scene


@dataclass(frozen=True)
class GameReport:
    """How one game of a pool was made.

    Attributes:
        task_id: The game's task id.
        generated: False when the game was already in the cache.
        seconds: Wall-clock time of its draws and verifications (0 when cached; starting
            the planner process not included).
        attempts: Draws verified (the last one kept).
        rejections: Why each rejected draw was rejected, in order.
        peak_rss_mb: The planner process's peak resident memory over its draws.
        retries: Draws verified again because the wall-clock safety net stopped the
            first verification (see :class:`~agentenvs.alfworld.verifier.Verdict`).
    """

    task_id: str
    generated: bool
    seconds: float = 0.0
    attempts: int = 0
    rejections: tuple[str, ...] = ()
    peak_rss_mb: float | None = None
    retries: int = 0


@dataclass(frozen=True)
class GenerationReport:
    """What :meth:`GeneratedGames.pregenerate` did, game by game.

    Attributes:
        games: One report per game of the pool, in task-id order.
        seconds: Wall-clock time of the whole pre-generation.
    """

    games: tuple[GameReport, ...]
    seconds: float
    generated: tuple[GameReport, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "generated", tuple(g for g in self.games if g.generated))

    @property
    def rejections(self) -> int:
        """Rejected draws over the games generated now."""
        return sum(len(g.rejections) for g in self.generated)

    @property
    def retries(self) -> int:
        """Draws verified again after the wall-clock safety net fired, over the games generated now."""
        return sum(g.retries for g in self.generated)

    @property
    def peak_rss_mb(self) -> float | None:
        """The planner processes' peak resident memory over all games generated now."""
        peaks = [g.peak_rss_mb for g in self.generated if g.peak_rss_mb is not None]
        return max(peaks) if peaks else None

    def seconds_quantile(self, q: float) -> float:
        """The ``q`` quantile of per-game generation seconds (0 if nothing was generated)."""
        seconds = [g.seconds for g in self.generated]
        return float(np.quantile(seconds, q)) if seconds else 0.0


MIN_VERIFICATION_TIME_S: Final = 10.0
"""The least CPU time limit a pool's verifications run under (module docstring, item 3): a margin
of four over the slowest verification of the default pool (2.4 s), so no draw's verdict sits
near the limit, where a machine's timing noise would flip it."""


class GeneratedGames:
    """A fixed, seeded pool of generated games, written lazily to a cache folder.

    Task ids are ``generated/<index>-<task_type>`` with task types taken in turn, so
    a pool knows every id and type before any game exists. Games are verified in a
    child process under ``planner_limits`` (see the module docstring); call
    :meth:`close` (or use the pool as a context manager) to stop it.

    Args:
        seed: Seed of the pool (an integer >= 0).
        count: Number of games.
        task_types: Task types to cycle through (default all six).
        cache_dir: Root of the cache (default ``$AGENTENVS_CACHE`` or
            ``~/.cache/agentenvs``; a temporary folder if that is not writable).
        planner_limits: Time and memory limits of one game's verification (a time limit of
            at least :data:`MIN_VERIFICATION_TIME_S`).

    Example:
        >>> with GeneratedGames(seed=0, count=4, cache_dir=tempfile.mkdtemp()) as games:  # doctest: +SKIP
        ...     report = games.pregenerate(workers=2)
    """

    def __init__(
        self,
        seed: int = 0,
        count: int = 256,
        task_types: Any = None,
        cache_dir: str | os.PathLike[str] | None = None,
        planner_limits: PlannerLimits | None = None,
    ) -> None:
        owner = type(self).__name__
        self.seed = check_int(owner, "seed", seed, minimum=0)
        count = check_int(owner, "count", count, minimum=1)
        types = normalize_task_types(task_types)
        self.planner_limits = planner_limits or PlannerLimits()
        if self.planner_limits.time_limit_s < MIN_VERIFICATION_TIME_S:
            raise ValueError(
                f"{owner}.planner_limits.time_limit_s must be >= {MIN_VERIFICATION_TIME_S:g} CPU seconds (below it a "
                f"machine's timing noise decides which games the pool keeps), got {self.planner_limits.time_limit_s:g}"
            )
        self.records = [
            GameRecord(
                task_id=f"generated/{i:05d}-{types[i % len(types)]}", path=Path(), task_type=types[i % len(types)]
            )
            for i in range(count)
        ]
        self._by_id = {r.task_id: r for r in self.records}
        chosen = check_path(owner, "cache_dir", cache_dir)
        root = Path(chosen).expanduser() if chosen is not None else default_cache_dir()
        # Created on first write, so that making an env leaves nothing on disk.
        self.folder = root / "alfworld" / f"generated-v{GENERATOR_VERSION}" / f"seed{self.seed}"
        self._planner: PlannerProcess | None = None

    def __enter__(self) -> GeneratedGames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def path(self, task_id: str) -> Path:
        """Where ``task_id``'s game file is (or will be) written."""
        return self.folder / task_id / "game.tw-pddl"

    def is_ready(self, task_id: str) -> bool:
        """Whether ``task_id`` is already generated and verified."""
        return self.path(task_id).is_file()

    def game_file(self, task_id: str) -> Path:
        """``task_id``'s verified game file, generating it on first use.

        Raises:
            KeyError: for a task id not in the pool.
            RuntimeError: if no draw of the game passes verification.
        """
        if self.is_ready(task_id):
            return self.path(task_id)
        if self._planner is None:
            self._planner = PlannerProcess(self.planner_limits)
        self._generate(task_id, self._planner)
        return self.path(task_id)

    def pregenerate(self, workers: int = 1, progress: bool = False) -> GenerationReport:
        """Generates every game of the pool not yet in the cache.

        Args:
            workers: Games verified at once (one planner process each).
            progress: Show a tqdm progress bar (when tqdm is installed).

        Returns:
            What was generated, game by game.
        """
        owner = f"{type(self).__name__}.pregenerate"
        workers = check_int(owner, "workers", workers, minimum=1)
        progress = check_bool(owner, "progress", progress)
        start = time.monotonic()
        reports: dict[str, GameReport] = {}
        todo = []
        for record in self.records:
            if self.is_ready(record.task_id):
                reports[record.task_id] = GameReport(record.task_id, generated=False)
            else:
                todo.append(record.task_id)
        bar = _progress_bar(len(self.records), initial=len(reports)) if progress else None
        planners: queue.SimpleQueue[PlannerProcess] = queue.SimpleQueue()
        for _ in range(min(workers, max(1, len(todo)))):
            planners.put(PlannerProcess(self.planner_limits))

        def generate(task_id: str) -> GameReport:
            planner = planners.get()
            try:
                return self._generate(task_id, planner)
            finally:
                planners.put(planner)

        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(generate, task_id) for task_id in todo]
                try:
                    for future in as_completed(futures):
                        report = future.result()
                        reports[report.task_id] = report
                        if bar is not None:
                            bar.update(1)
                except BaseException:
                    for pending in futures:
                        pending.cancel()
                    raise
        finally:
            while not planners.empty():
                planners.get().close()
            if bar is not None:
                bar.close()
        games = tuple(reports[r.task_id] for r in self.records)
        return GenerationReport(games=games, seconds=time.monotonic() - start)

    def close(self) -> None:
        """Stops the planner process (a later generation starts a new one)."""
        if self._planner is not None:
            self._planner.close()
            self._planner = None

    # -- helpers ----------------------------------------------------------------------
    def _generate(self, task_id: str, planner: PlannerProcess) -> GameReport:
        record = self._by_id[task_id]
        index = int(task_id.split("/")[1].split("-")[0])
        path = self._writable(self.path(task_id))
        recorded = _read_rejections(path.parent)
        rejections: list[str] = []
        peaks: list[float] = []
        retries = 0
        planner.start()  # importing TextWorld in a fresh child is not this game's time
        start = time.monotonic()
        draft = path.with_name(f".draft-{uuid.uuid4().hex}.tw-pddl")
        planning = path.with_name(f".planning-{uuid.uuid4().hex}.tw-pddl")
        try:
            for attempt in range(MAX_ATTEMPTS):
                if str(attempt) in recorded:  # rejected by a limit once: rejected for good
                    rejections.append(recorded[str(attempt)])
                    continue
                game_seed = np.random.SeedSequence([self.seed, index, TASK_TYPES.index(record.task_type), attempt])
                scene = generate_scene(int(game_seed.generate_state(1)[0]), record.task_type)
                game = scene.game()
                draft.write_text(json.dumps(game))
                planning.write_text(json.dumps(scene.planning_game()))
                verdict = planner.verify(draft, planning)
                if verdict.wall_clock:  # the child may have been starved of CPU: once more, fresh
                    retries += 1
                    warnings.warn(
                        f"ALFWorld generator: {task_id} draw {attempt} {verdict.reason}; verifying it again",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                    verdict = planner.verify(draft, planning)
                if verdict.peak_rss_mb is not None:
                    peaks.append(verdict.peak_rss_mb)
                if verdict.walkthrough:
                    game.update(solvable=True, walkthrough=verdict.walkthrough)
                    draft.write_text(json.dumps(game))
                    os.replace(draft, path)  # atomic: parallel envs may generate the same game
                    return GameReport(
                        task_id,
                        generated=True,
                        seconds=time.monotonic() - start,
                        attempts=attempt + 1,
                        rejections=tuple(rejections),
                        peak_rss_mb=max(peaks) if peaks else None,
                        retries=retries,
                    )
                rejections.append(verdict.reason)
                if verdict.exceeded_limit:
                    _record_rejection(path.parent, attempt, verdict.reason)
                    warnings.warn(
                        f"ALFWorld generator: {task_id} draw {attempt} rejected, {verdict.reason}; the next draw is "
                        f"used and the rejection recorded in {path.parent}, so this cache may differ from one made "
                        "with other limits or on another machine",
                        RuntimeWarning,
                        stacklevel=3,
                    )
        finally:
            draft.unlink(missing_ok=True)
            planning.unlink(missing_ok=True)
        raise RuntimeError(f"could not generate a solvable game for {task_id} in {MAX_ATTEMPTS} draws: {rejections}")

    def _writable(self, path: Path) -> Path:
        """``path``, its folder created; under a temporary folder if the cache is not writable."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            self.folder = Path(tempfile.mkdtemp(prefix="agentenvs-alfworld-"))
            path = self.folder / path.relative_to(path.parents[2])
            path.parent.mkdir(parents=True, exist_ok=True)
        return path


_REJECTIONS = "rejections.json"


def _read_rejections(folder: Path) -> dict[str, str]:
    try:
        return dict(json.loads((folder / _REJECTIONS).read_text()))
    except (OSError, ValueError):
        return {}


def _record_rejection(folder: Path, attempt: int, reason: str) -> None:
    rejections = _read_rejections(folder) | {str(attempt): reason}
    scratch = folder / f".{_REJECTIONS}-{uuid.uuid4().hex}"
    scratch.write_text(json.dumps(rejections, indent=1, sort_keys=True))
    os.replace(scratch, folder / _REJECTIONS)


def _progress_bar(total: int, initial: int) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional: no bar then
        return None
    return tqdm(total=total, initial=initial, desc="ALFWorld games", unit="game")
