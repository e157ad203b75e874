"""``python -m agentenvs list | info | play | serve`` (``pregenerate``: tests/agentenvs/alfworld/test_pregenerate.py)."""

from __future__ import annotations

import io
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.__main__ import declaration, main
from agentenvs.core.env import Outcome, TextEnv

REPO_ROOT = Path(__file__).resolve().parents[3]


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str | None = None, monkeypatch=None) -> str:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    assert main(argv) == 0
    return capsys.readouterr().out


def test_list_shows_every_env_with_the_datasets_and_splits_its_class_declares(capsys):
    out = run_main(["list"], capsys)
    assert out.index("ALFWorld-v0") < out.index("SearchQA-v0") < out.index("WebShop-v0")
    assert "dataset=  generated (default), hotpotqa, nq" in out
    assert "split=  train, test, all; held out: test" in out
    assert "dataset=  generated (default), official" in out
    assert "split=  train (default), eval, test, all; held out: test" in out
    # ALFWorld's split is typed str: its values come from the argument's doc.
    assert "source=  data, generated" in out
    assert (
        "split=  train (default), eval_in_distribution, eval_out_of_distribution; held out: eval_in_distribution"
    ) in out


class ToyEnv(TextEnv):
    """A toy env (module docstring aside).

    Args:
        dataset: Where tasks come from.
        split: ``"north"`` or ``"south"``, the half of the map.
    """

    held_out_split = "south"

    def __init__(
        self, *, dataset: Literal["maps", "dreams"] = "maps", split: str = "north", render_mode: str | None = None
    ) -> None:
        super().__init__(max_turns=2, render_mode=render_mode)

    @property
    def task_ids(self) -> list[str]:
        return ["a", "b"]

    def _task_text(self, task_id: str) -> str:
        return task_id

    def _begin(self, task_id: str) -> tuple[str, dict[str, Any]]:
        return task_id, {}

    def _act(self, action: str) -> Outcome:
        return Outcome(observation=action, terminated=True)


def test_declarations_follow_the_env_class():
    gym.register("ToyDeclared-v0", entry_point=ToyEnv)
    try:
        found = declaration("ToyDeclared-v0")
    finally:
        del gym.registry["ToyDeclared-v0"]
    assert (found.datasets.argument, found.datasets.values, found.datasets.default) == (
        "dataset",
        ("maps", "dreams"),
        "maps",
    )
    assert (found.splits.values, found.splits.default, found.held_out_split) == (("north", "south"), "north", "south")
    assert found.observation_modes is None and not found.takes_action_format and not found.lists_admissible_actions


def test_info_shows_spec_action_format_modes_splits_and_tasks(capsys):
    out = run_main(["info", "SearchQA-v0"], capsys)
    tasks = len(gym.make("SearchQA-v0").unwrapped.task_ids)
    assert "search_answer (fixed)" in out and "<search>q</search> or <answer>a</answer>" in out
    assert f"tasks:                    {tasks} " in out and "held-out split:           test" in out
    assert "observation modes:        text (the only one)" in out and "open set (None)" in out

    out = run_main(["info", "WebShop-v0", "--env-arg", "split=test", "--env-arg", 'observation_mode="html"'], capsys)
    tasks = len(gym.make("WebShop-v0", split="test").unwrapped.task_ids)
    assert f"tasks:                    {tasks} " in out
    limit = gym.make("WebShop-v0").spec.max_episode_steps
    assert f"max turns:                {limit} (gym.make's limit" in out and "max_episode_steps=None" not in out
    assert "text (default), text_rich, text_compact, html (observation_mode=)" in out
    assert "raw (default), think_action, think_action_strict, search_answer (action_format=)" in out
    assert "listed in info['admissible_actions']" in out
    # One name per split: the roles the recipes and results use, beside each split
    assert "    test:                   tuning set: where trainers evaluate by default" in out
    assert "    eval:                   report set: the recipe evaluates here" in out

    out = run_main(["info", "ALFWorld-v0"], capsys)
    assert "held-out split:           eval_in_distribution" in out and "datasets (source=):" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["info", "SearchQA-v0", "--env-arg", "top_k=0"], "top_k must be an integer >= 1"),
        (["info", "SearchQA-v0", "--env-arg", "nonsense"], "--env-arg takes KEY=VALUE"),
        (["info", "NoSuchEnv-v0"], "invalid choice"),
        (["play", "SearchQA-v0", "--episodes", "0"], "--episodes must be >= 1"),
        (["play", "SearchQA-v0", "--task", "nope"], "unknown task_id 'nope'"),
        (["serve", "SearchQA-v0", "--port", "70000"], "port must be an integer in [0, 65535]"),
        (["serve", "SearchQA-v0", "--session-timeout", "0"], "session_timeout_s must be"),
        (["serve", "SearchQA-v0", "--max-sessions-per-client", "0"], "max_sessions_per_client must be"),
        (["serve", "SearchQA-v0", "--request-timeout", "0"], "request_timeout_s must be"),
    ],
)
def test_bad_arguments_are_usage_errors_naming_them(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


HELP_LISTS = {
    "list": [],
    "info": ["ENV_ID", "--env-arg KEY=VALUE"],
    "play": ["ENV_ID", "--env-arg KEY=VALUE", "--seed INT", "--episodes INT", "--task"],
    "serve": [
        "--env-arg KEY=VALUE",
        "--host STR",
        "--port INT",
        "--max-sessions INT",
        "--session-timeout",
        "--request-timeout",
        "--expose-privileged",
    ],
    "pregenerate": ["--count INT", "--seed INT", "--workers INT", "--cache-dir", "--time-limit FLOAT", "--quiet"],
}


@pytest.mark.parametrize("command", [None, *HELP_LISTS])
def test_help_exits_0_listing_the_subcommands_or_the_flags(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"] if command is None else [command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    if command is None:
        assert "usage: python -m agentenvs" in out and "{list,info,play,serve,pregenerate}" in out
    else:
        assert f"usage: python -m agentenvs {command}" in out
        assert all(flag in out for flag in HELP_LISTS[command]), out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["info", "SearchQA-v0", "--env-arg", "top_k"], "error: --env-arg takes KEY=VALUE, got 'top_k'"),
        (
            ["play", "NoSuchEnv-v0"],
            "error: invalid choice: 'NoSuchEnv-v0' (choose from ALFWorld-v0, Bifurcation-v0, KeyDoor-v0, SearchQA-v0",
        ),
    ],
)
def test_a_bad_env_arg_or_env_id_is_one_line_and_exit_2_without_a_traceback(argv, message):
    done = subprocess.run(
        [sys.executable, "-m", "agentenvs", *argv],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=dict(os.environ),
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"python -m agentenvs {argv[0]}: error: ") and message in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_play_a_whole_episode_with_stdin_piped():
    env = gym.make("SearchQA-v0").unwrapped
    task_id = env.task_ids[0]
    answer = env.questions[task_id].answers[0]
    stdin = f"<search>{env.questions[task_id].question}</search>\n<answer>{answer}</answer>\n"
    done = subprocess.run(
        [sys.executable, "-m", "agentenvs", "play", "SearchQA-v0", "--task", task_id],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=dict(os.environ),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"task {task_id}" in done.stdout and "<information>Doc 1(Title:" in done.stdout
    assert "== episode over: won, return 1 ==" in done.stdout and "1 episode(s) played, 1 won" in done.stdout


def test_play_by_numbers_fills_placeholders_and_quit_or_eof_stops(capsys, monkeypatch):
    # 1 is search[<query>] (asks for the query), 99 is not on the list (asked again), then click the 3rd action.
    out = run_main(["play", "WebShop-v0"], capsys, stdin="1\nprotein bars\n99\n3\nquit\n", monkeypatch=monkeypatch)
    assert "    1. search[<query>]" in out and "query: " in out
    assert "no action 99: choose 1-" in out and "Back to Search [SEP] Page 1" in out
    assert "[reward 0, turn 2/15]" in out and "stopped: 0 episode(s) played, 0 won" in out
    assert "turn 3/15" not in out  # the out-of-range number took no turn: the list was shown again
    out = run_main(["play", "WebShop-v0", "--seed", "3"], capsys, stdin="", monkeypatch=monkeypatch)
    assert "== episode 1: task" in out and out.rstrip().endswith("stopped: 0 episode(s) played, 0 won")


def test_serve_on_a_free_loopback_port_plays_an_episode_and_stops_on_sigint():
    pytest.importorskip("openenv.core.env_server.http_server")
    from agentenvs.integrations.openenv import TextEnvClient

    server = subprocess.Popen(
        [sys.executable, "-m", "agentenvs", "serve", "SearchQA-v0", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=dict(os.environ),
    )
    try:
        assert server.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(server.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + 60
            line = ""
            while "serving" not in line and time.monotonic() < deadline and server.poll() is None:
                if selector.select(timeout=1):
                    line = server.stdout.readline()
        assert "serving SearchQA-v0 over OpenEnv at http://127.0.0.1:" in line, (line, server.poll())
        url = line.split(" at ", 1)[1].split()[0]
        with TextEnvClient(base_url=url, message_timeout_s=30).sync() as env:
            assert env.reset(seed=0).observation.text.startswith("Question:")
            assert env.step("<answer>nobody</answer>").done
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()


def test_every_env_with_splits_says_what_each_split_is_for():
    from agentenvs.cli.declarations import declaration
    from agentenvs.core.registration import agentenvs_ids

    for env_id in agentenvs_ids():
        found = declaration(env_id)
        if found.splits is None:
            continue
        assert set(found.split_roles) <= set(found.splits.values), env_id
        assert found.held_out_split in found.split_roles and "train" in found.split_roles, env_id
