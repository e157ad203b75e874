"""Game discovery: splits, task types, the official layout and its error messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentenvs.alfworld.data import (
    TASK_TYPES,
    find_games,
    normalize_task_types,
    read_task_sentence,
    resolve_split_dir,
    split_folder,
    task_type_of,
)


def _write_game(root: Path, task_id: str, solvable: bool = True) -> Path:
    path = root / task_id / "game.tw-pddl"
    path.parent.mkdir(parents=True)
    grammar = json.dumps({"task": [{"rhs": "Your task is to: put a mug in desk."}]})
    path.write_text(json.dumps({"grammar": grammar, "solvable": solvable, "walkthrough": []}))
    return path


def test_task_types_accept_names_and_alfworld_ids() -> None:
    assert normalize_task_types(None) == TASK_TYPES
    assert normalize_task_types([6, "look_at_obj_in_light", 2]) == ("pick_two_obj_and_place", "look_at_obj_in_light")
    assert normalize_task_types(1) == ("pick_and_place_simple",)
    with pytest.raises(ValueError, match="task_types"):
        normalize_task_types([7])
    with pytest.raises(ValueError, match="task_types"):
        normalize_task_types(["pick_and_place"])


def test_split_names_follow_alfworld() -> None:
    assert split_folder("eval_in_distribution") == "valid_seen"
    assert split_folder("eval_out_of_distribution") == "valid_unseen"
    assert split_folder("train") == "train"
    assert split_folder("valid_seen") == "valid_seen"
    with pytest.raises(ValueError, match="split"):
        split_folder("test")


def test_task_type_of_reads_the_folder_name() -> None:
    assert (
        task_type_of("pick_heat_then_place_in_recep-Apple-None-DiningTable-26/trial_T1")
        == "pick_heat_then_place_in_recep"
    )
    assert task_type_of("somewhere/else") is None


def test_find_games_filters_like_the_official_env(tmp_path: Path) -> None:
    split = tmp_path / "json_2.1.1" / "valid_seen"
    _write_game(split, "pick_and_place_simple-Mug-None-Desk-308/trial_A")
    _write_game(split, "look_at_obj_in_light-CD-None-DeskLamp-302/trial_B")
    _write_game(split, "pick_and_place_simple-Mug-None-Desk-309/trial_C", solvable=False)
    _write_game(split, "pick_and_place_with_movable_recep-Mug-Cup-Desk-1/trial_D")
    _write_game(split, "pick_heat_then_place_in_recep-AppleSliced-None-Desk-1/trial_E")
    games = find_games(tmp_path, "eval_in_distribution")
    assert [g.task_id for g in games] == [
        "look_at_obj_in_light-CD-None-DeskLamp-302/trial_B",
        "pick_and_place_simple-Mug-None-Desk-308/trial_A",
    ]
    assert [g.task_type for g in find_games(tmp_path, "eval_in_distribution", [2])] == ["look_at_obj_in_light"]
    assert resolve_split_dir(tmp_path / "json_2.1.1", "eval_in_distribution") == split
    assert read_task_sentence(games[0].path) == "put a mug in desk."


def test_no_games_error_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        find_games(tmp_path, "train")


def test_real_valid_seen_has_140_games(alfworld_data: Path) -> None:
    games = find_games(alfworld_data, "eval_in_distribution")
    assert len(games) == 140
    assert {g.task_type for g in games} == set(TASK_TYPES)
    heat = find_games(alfworld_data, "eval_in_distribution", ["pick_heat_then_place_in_recep"])
    assert 0 < len(heat) < 140 and all(g.task_id.startswith("pick_heat") for g in heat)
