"""Finding ALFWorld games on disk: splits, task types and the official folder layout.

Games live under ``$ALFWORLD_DATA/json_2.1.1/<split>/<task-type-and-params>/<trial>/
game.tw-pddl``. Like the official ``AlfredTWEnv``, we keep only games marked solvable
and skip the "movable" and "Sliced" variants; the task type is read from the folder
name (``pick_and_place_simple-Mug-None-Desk-308``) so ``traj_data.json`` is not needed.

>>> normalize_task_types(["pick_and_place_simple", 2])
('pick_and_place_simple', 'look_at_obj_in_light')
>>> task_type_of("pick_two_obj_and_place-Pen-None-Sofa-205/trial_T1")
'pick_two_obj_and_place'
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentenvs.core.checks import is_integer

TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
"""The six ALFWorld task types; ALFWorld's configs number them 1..6 in this order."""

SPLIT_FOLDERS: dict[str, str] = {
    "train": "train",
    "eval_in_distribution": "valid_seen",
    "eval_out_of_distribution": "valid_unseen",
}
"""ALFWorld's split names and the ``json_2.1.1`` folder each one reads."""

GAME_FILE = "game.tw-pddl"
_TASK_SENTENCE = re.compile(r"Your task is to: ([^\"]*)\"")


@dataclass(frozen=True)
class GameRecord:
    """One playable game.

    Attributes:
        task_id: Path of the trial folder relative to the split folder.
        path: The ``game.tw-pddl`` file.
        task_type: One of :data:`TASK_TYPES`.
    """

    task_id: str
    path: Path
    task_type: str


def normalize_task_types(task_types: Iterable[str | int] | str | int | None) -> tuple[str, ...]:
    """Task type names from names or ALFWorld's 1-based ids (None means all six).

    Raises:
        TypeError: for something that is neither a name, an id nor a sequence of them.
        ValueError: for an unknown name or id, or no task type at all.
    """
    if task_types is None:
        return TASK_TYPES
    items: Iterable[Any]
    if isinstance(task_types, str) or is_integer(task_types):
        items = [task_types]
    elif isinstance(task_types, Iterable):
        items = task_types
    else:
        raise TypeError(f"task_types: expected task type names or ids 1-6 (one or a sequence), got {task_types!r}")
    names = []
    for task_type in items:
        if is_integer(task_type) and 1 <= int(task_type) <= len(TASK_TYPES):
            names.append(TASK_TYPES[int(task_type) - 1])
        elif isinstance(task_type, str) and task_type in TASK_TYPES:
            names.append(task_type)
        else:
            raise ValueError(f"task_types: unknown task type {task_type!r}; use ids 1-6 or one of {list(TASK_TYPES)}")
    if not names:
        raise ValueError("task_types: give at least one task type")
    return tuple(dict.fromkeys(names))


def task_type_of(task_id: str) -> str | None:
    """The task type encoded in a trial's folder path, or None."""
    for part in reversed(Path(task_id).parts):
        name = part.split("-", 1)[0]
        if name in TASK_TYPES:
            return name
    return None


def split_folder(split: str) -> str:
    """The ``json_2.1.1`` folder of ``split`` (ALFWorld names or the folder names themselves)."""
    if split in SPLIT_FOLDERS:
        return SPLIT_FOLDERS[split]
    if split in SPLIT_FOLDERS.values():
        return split
    raise ValueError(f"split: unknown split {split!r}; use one of {list(SPLIT_FOLDERS)}")


def resolve_split_dir(data_path: str | os.PathLike[str], split: str) -> Path:
    """The folder holding ``split``'s games under ``data_path``.

    ``data_path`` may be an ``$ALFWORLD_DATA`` root (holding ``json_2.1.1``), a
    ``json_2.1.1`` folder, or a folder of games itself.
    """
    root = Path(os.path.expandvars(os.fspath(data_path))).expanduser()
    folder = split_folder(split)
    for candidate in (root / "json_2.1.1" / folder, root / folder):
        if candidate.is_dir():
            return candidate
    return root


def find_games(
    data_path: str | os.PathLike[str], split: str, task_types: Iterable[str | int] | None = None
) -> list[GameRecord]:
    """All solvable games of ``split`` and ``task_types`` under ``data_path``, sorted by id.

    Raises:
        FileNotFoundError: when no game is found (the message names the folder searched).
    """
    wanted = set(normalize_task_types(task_types))
    split_dir = resolve_split_dir(data_path, split)
    games = []
    for game_file in sorted(split_dir.rglob(GAME_FILE)) if split_dir.is_dir() else []:
        trial_dir = game_file.parent
        task_id = trial_dir.relative_to(split_dir).as_posix()
        task_type = task_type_of(task_id)
        if task_type not in wanted or "movable" in task_id or "Sliced" in task_id:
            continue
        if not _is_solvable(game_file):
            continue
        games.append(GameRecord(task_id=task_id, path=game_file, task_type=task_type))
    if not games:
        raise FileNotFoundError(
            f"no ALFWorld games ({GAME_FILE}, solvable, task types {sorted(wanted)}) found under {split_dir} "
            f"(split={split!r}, data_path={os.fspath(data_path)!r}); expected the official layout "
            f"$ALFWORLD_DATA/json_2.1.1/{split_folder(split)}/<task>/<trial>/{GAME_FILE}"
        )
    return games


def _is_solvable(game_file: Path) -> bool:
    # Reading the whole JSON for one flag is slow on 3.5k games; the flag sits near the end.
    with open(game_file, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 4096))
        tail = f.read().decode("utf-8", "replace")
    match = re.search(r'"solvable"\s*:\s*(true|false)', tail)
    if match is None:
        with open(game_file) as f:
            return bool(json.load(f).get("solvable", False))
    return match.group(1) == "true"


def read_task_sentence(game_file: str | os.PathLike[str]) -> str:
    """The task sentence ("put a mug in desk.") of a game file, without loading the game."""
    with open(game_file) as f:
        grammar = json.load(f)["grammar"]
    match = _TASK_SENTENCE.search(grammar)
    return match.group(1).strip() if match else ""
