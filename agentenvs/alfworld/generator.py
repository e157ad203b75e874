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

>>> import tempfile
>>> games = GeneratedGames(seed=0, count=6, cache_dir=tempfile.mkdtemp())
>>> [r.task_type for r in games.records][:2]
['pick_and_place_simple', 'look_at_obj_in_light']
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.alfworld.data import TASK_TYPES, GameRecord, normalize_task_types

GENERATOR_VERSION = 1
"""Bumped whenever generated games change; part of the cache folder name."""

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


@dataclass
class _Thing:
    id: str
    type: str


def generate_game(seed: int, task_type: str) -> dict[str, Any]:
    """One unverified game of ``task_type`` (``game.tw-pddl`` content, no walkthrough).

    Raises:
        GenerationError: if no scene fits after many draws (never for valid types).
    """
    rng = np.random.default_rng(seed)
    for _ in range(200):
        try:
            return _draw_game(rng, task_type)
        except GenerationError:
            continue
    raise GenerationError(f"no scene fits task type {task_type!r}")


def _draw_game(rng: np.random.Generator, task_type: str) -> dict[str, Any]:
    c = _constants()
    scene_type = _VALID_SCENES[task_type][int(rng.integers(len(_VALID_SCENES[task_type])))]
    numbers = [n for n in _SCENE_TYPES[scene_type] if _scene(n) is not None]
    poses, object_types = _scene(numbers[int(rng.integers(len(numbers)))])
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
    facts = [f"(atLocation agent1 {agent_location})"]
    for r in receptacles:
        facts.append(f"(receptacleType {r.id} {r.type}Type)")
        facts.append(f"(receptacleAtLocation {r.id} {locations[r.id]})")
        if r.type in _OPENABLE:
            facts.append(f"(openable {r.id})")
    for rtype in sorted(rtypes):
        facts += [f"(canContain {rtype}Type {otype}Type)" for otype in sorted(contents[rtype])]
    for thing, holder in objects:
        facts.append(f"(objectType {thing.id} {thing.type}Type)")
        facts.append(f"(inReceptacle {thing.id} {holder.id})")
        facts.append(f"(objectAtLocation {thing.id} {locations[holder.id]})")
        if thing.type == toggle:
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
        + sorted({f"{loc} - location" for loc in [*locations.values(), agent_location]})
        + [f"{rtype}Type - rtype" for rtype in sorted(rtypes)]
        + [f"{otype}Type - otype" for otype in otypes]
    )
    from alfworld.gen import goal_library

    names = {"obj": target.lower(), "recep": (target_rtype or "").lower(), "toggle": toggle.lower(), "mrecep": ""}
    goal = goal_library.gdict[task_type]["pddl"].format(obj=target, recep=target_rtype, toggle=toggle, mrecep="")
    templates = goal_library.gdict[task_type]["templates"]
    sentence = templates[int(rng.integers(len(templates)))].format(**names)
    problem = (
        "(define (problem generated)\n(:domain alfred)\n(:objects\n        "
        + "\n        ".join(declarations)
        + "\n        )\n\n(:init\n        "
        + "\n        ".join(facts)
        + "\n        )\n"
        + goal.replace("#", "-")
    )
    domain, grammar = _domain_and_grammar()
    return {"pddl_domain": domain, "grammar": grammar.replace("UNKNOWN GOAL", sentence), "pddl_problem": problem}


def verify_and_solve(game: dict[str, Any], engine: Any, path: Path) -> list[str] | None:
    """The planner's plan for ``game`` if replaying it through the engine wins, else None."""
    path.write_text(json.dumps(game))
    engine.start(path)
    plan = engine.plan()
    if not plan:
        return None
    engine.game_file = None  # replay from a fresh load
    engine.start(path)
    won = False
    for command in plan:
        _, _, done, infos = engine.step(command)
        won = bool(infos["won"])
        if done:
            break
    return plan if won else None


class GeneratedGames:
    """A fixed, seeded pool of generated games, written lazily to a cache folder.

    Task ids are ``generated/<index>-<task_type>`` with task types taken in turn, so
    a pool knows every id and type before any game exists.

    Args:
        seed: Seed of the pool.
        count: Number of games.
        task_types: Task types to cycle through (default all six).
        cache_dir: Root of the cache (default ``$AGENTENVS_CACHE`` or
            ``~/.cache/agentenvs``; a temporary folder if that is not writable).
    """

    def __init__(
        self, seed: int = 0, count: int = 256, task_types: Any = None, cache_dir: str | os.PathLike[str] | None = None
    ) -> None:
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        self.seed = int(seed)
        types = normalize_task_types(task_types)
        self.records = [
            GameRecord(
                task_id=f"generated/{i:05d}-{types[i % len(types)]}", path=Path(), task_type=types[i % len(types)]
            )
            for i in range(count)
        ]
        self._by_id = {r.task_id: r for r in self.records}
        root = Path(cache_dir or os.environ.get("AGENTENVS_CACHE") or Path.home() / ".cache" / "agentenvs")
        self.folder = root / "alfworld" / f"generated-v{GENERATOR_VERSION}" / f"seed{self.seed}"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            self.folder = Path(tempfile.mkdtemp(prefix="agentenvs-alfworld-"))
        self._engine = None

    def path(self, task_id: str) -> Path:
        """Where ``task_id``'s game file is (or will be) written."""
        return self.folder / task_id / "game.tw-pddl"

    def is_ready(self, task_id: str) -> bool:
        """Whether ``task_id`` is already generated and verified."""
        return self.path(task_id).is_file()

    def game_file(self, task_id: str) -> Path:
        """``task_id``'s verified game file, generating it on first use."""
        path = self.path(task_id)
        if path.is_file():
            return path
        record = self._by_id[task_id]
        index = int(task_id.split("/")[1].split("-")[0])
        if self._engine is None:
            from agentenvs.alfworld.engine import AlfredEngine

            self._engine = AlfredEngine(translation_cache_size=0)
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f".draft-{os.getpid()}.tw-pddl")
        for attempt in range(50):
            game_seed = np.random.SeedSequence([self.seed, index, TASK_TYPES.index(record.task_type), attempt])
            game = generate_game(int(game_seed.generate_state(1)[0]), record.task_type)
            plan = verify_and_solve(game, self._engine, scratch)
            if plan:
                game.update(solvable=True, walkthrough=plan)
                scratch.write_text(json.dumps(game))
                os.replace(scratch, path)  # atomic: parallel envs may generate the same game
                return path
        raise RuntimeError(f"could not generate a solvable game for {task_id}")
