"""The prefetch helper: a fresh child per process that translates games, shared by engines, gone with its parent."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentenvs.alfworld.data import find_games
from agentenvs.alfworld.engine import AlfredEngine
from agentenvs.alfworld.translation import translate_game_file
from agentenvs.alfworld.translator import TranslatorProcess, shared_translator


def _games(alfworld_data: Path, count: int) -> list[str]:
    return [str(game.path) for game in find_games(alfworld_data, "eval_in_distribution")[:count]]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie awaiting its reaper counts as gone
        return f.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_child_is_a_fresh_interpreter_and_translates_as_this_process_does(alfworld_data: Path) -> None:
    game = _games(alfworld_data, 1)[0]
    translator = TranslatorProcess()
    try:
        key, translation = translator.translate(game)
        assert translator.pid is not None
        with open(f"/proc/{translator.pid}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[1:3] == [b"-m", b"agentenvs.alfworld.translator"]  # exec'd, not forked
        here_key, here = translate_game_file(game)
        assert key == here_key and translation.sas == here.sas
        with pytest.raises(RuntimeError, match="translating /nonexistent failed: FileNotFoundError"):
            translator.translate("/nonexistent")
        assert translator.translate(game)[0] == key  # a failed request leaves the child serving
        first = translator.pid
        os.kill(first, 9)  # killed from outside between requests: the next one starts a fresh child
        assert translator.translate(game)[0] == key and translator.pid not in (None, first)
    finally:
        translator.close()


def test_every_engine_of_a_process_shares_one_helper_that_outlives_their_close(alfworld_data: Path) -> None:
    games = _games(alfworld_data, 2)
    engines = [AlfredEngine(translation_cache_size=0) for _ in games]
    for engine, game in zip(engines, games, strict=True):
        engine.prepare(game)
    for engine, game in zip(engines, games, strict=True):
        assert engine.start(game)[0]  # takes the prefetched translation
    helper = shared_translator()
    pid = helper.process.pid
    assert pid is not None
    for engine in engines:
        engine.close()
    assert helper.process.pid == pid and _alive(pid)


SCRIPT = """
import os, sys, time
from agentenvs.alfworld.translator import shared_translator
shared_translator().submit(sys.argv[1]).result()
print(shared_translator().process.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_helper_exits_when_its_parent_is_killed(alfworld_data: Path) -> None:
    game = _games(alfworld_data, 1)[0]
    parent = subprocess.Popen([sys.executable, "-c", SCRIPT, game], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        helper = int(parent.stdout.readline())
        assert _alive(helper)
        parent.kill()  # SIGKILL: no atexit, no cleanup in the parent
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(helper) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(helper)
    finally:
        parent.kill()
        parent.wait()
