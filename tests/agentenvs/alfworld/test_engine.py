"""The reused engine: replays from its caches, plans, and wins walkthroughs."""

from __future__ import annotations

from pathlib import Path

from agentenvs.alfworld.data import find_games
from agentenvs.alfworld.engine import AlfredEngine


def test_replayed_game_is_identical_and_wins(alfworld_data: Path) -> None:
    game = find_games(alfworld_data, "eval_in_distribution")[0]
    engine = AlfredEngine()
    first = engine.start(game.path)
    for command in engine.walkthrough:
        _, _, done, infos = engine.step(command)
    assert infos["won"] and done
    assert engine.start(game.path) == first  # reset from the cached translation
    assert engine.plan()  # the planner finds a plan from the start state
