"""The command line of the envs: ``python -m agentenvs <command>`` parsed by tyro, then run.

Example:
    >>> args = parse(["play", "SearchQA-v0", "--env-arg", "split=test", "--env-arg", "top_k=3", "--seed", "4"])
    >>> type(args).__name__, args.env, args.seed, args.env_arg
    ('PlayArgs', 'SearchQA-v0', 4, ('split=test', 'top_k=3'))
    >>> parse(["serve", "SearchQA-v0", "--max-sessions", "2", "--expose-privileged"]).expose_privileged
    True
    >>> parse(["pregenerate", "ALFWorld-v0", "--count", "8", "--time-limit", "5"]).time_limit
    5.0
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import gymnasium as gym

# Imported at module load, not lazily: tyro scans ``builtins`` when first imported and
# fails if ``builtins._`` then holds an unhashable tuple (as doctest runs leave it).
import tyro

from agentenvs.cli.args import (
    COMMANDS,
    PROG,
    Command,
    InfoArgs,
    ListArgs,
    PlayArgs,
    PregenerateArgs,
    ServeArgs,
    UsageError,
    env_kwargs,
    make_env,
)
from agentenvs.cli.declarations import declaration
from agentenvs.cli.play import play
from agentenvs.core.actions import ACTION_FORMATS
from agentenvs.core.env import TextEnv
from agentenvs.core.registration import agentenvs_ids

if TYPE_CHECKING:
    from agentenvs.alfworld.generator import GenerationReport


# -- pregenerate -----------------------------------------------------------------------------------


def _pregenerate_alfworld(args: PregenerateArgs) -> tuple[GenerationReport, Path]:
    from agentenvs.alfworld.generator import GeneratedGames
    from agentenvs.alfworld.verifier import PlannerLimits

    try:  # the checks name the argument: a usage error
        limits = PlannerLimits(time_limit_s=args.time_limit, memory_limit_mb=args.memory_limit)
        games = GeneratedGames(seed=args.seed, count=args.count, cache_dir=args.cache_dir, planner_limits=limits)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    with games:
        return games.pregenerate(workers=args.workers, progress=not args.quiet), games.folder


PREGENERATORS: dict[str, Callable[[PregenerateArgs], tuple[GenerationReport, Path]]] = {
    "ALFWorld-v0": _pregenerate_alfworld
}
"""Envs whose games can be generated ahead of time, and how (the report and the cache folder)."""


def _pregenerate(args: PregenerateArgs) -> int:
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    report, folder = PREGENERATORS[args.env](args)
    generated = report.generated
    print(
        f"{args.env}: {len(report.games)} games in {folder} ({len(generated)} generated now, "
        f"{len(report.games) - len(generated)} already there) in {report.seconds:.1f} s"
    )
    if generated:
        peak = report.peak_rss_mb
        print(
            f"per game: max {report.seconds_quantile(1.0):.2f} s, p50 {report.seconds_quantile(0.5):.2f} s, "
            f"p95 {report.seconds_quantile(0.95):.2f} s; rejected draws: {report.rejections}; "
            f"peak planner RSS: {'n/a' if peak is None else f'{peak:.0f} MB'}"
        )
    return 0


# -- list, info, serve ---------------------------------------------------------------------------


def _plain(text: str) -> str:
    """Docstring markup as a terminal shows it."""
    return text.replace("``", "")


def _list(args: ListArgs) -> int:
    for env_id in agentenvs_ids():
        try:
            found = declaration(env_id)
        except Exception as error:  # an env whose module does not import here: say so, list the rest
            print(f"{env_id}\n  (cannot be read here: {type(error).__name__}: {error})")
            continue
        print(f"{env_id}  {_plain(found.summary)}")
        if found.datasets is not None:
            print(f"  {found.datasets.argument}=  {found.datasets.shown()}")
        if found.splits is not None:
            held_out = f"; held out: {found.held_out_split}" if found.held_out_split else ""
            print(f"  split=  {found.splits.shown()}{held_out}")
    return 0


def _info(args: InfoArgs) -> int:
    found = declaration(args.env)
    spec = gym.spec(args.env)
    print(f"{found.env_id}  {_plain(found.summary)}")
    rows: list[tuple[str, str]] = [
        ("entry point", found.entry_point),
        ("registered kwargs", str(spec.kwargs)),
    ]
    if found.datasets is not None:
        rows.append((f"datasets ({found.datasets.argument}=)", found.datasets.shown()))
    if found.splits is not None:
        rows.append(("splits (split=)", found.splits.shown()))
        rows += [(f"  {name}", role) for name, role in found.split_roles.items()]
    rows.append(
        (
            "held-out split",
            f"{found.held_out_split} (trainers evaluate here unless told another)" if found.held_out_split else "none",
        )
    )
    rows.append(
        (
            "observation modes",
            f"{found.observation_modes.shown()} (observation_mode=)"
            if found.observation_modes
            else "text (the only one)",
        )
    )
    rows.append(
        (
            "admissible actions",
            "listed in info['admissible_actions']" if found.lists_admissible_actions else "open set (None)",
        )
    )
    try:
        env = make_env(args)
    except UsageError:
        raise
    except Exception as error:  # missing data or packages: the declaration above still holds
        for name, value in rows:
            print(f"  {name + ':':<26}{value}")
        print(f"  {'tasks:':<26}unavailable: {type(error).__name__}: {error}")
        return 1
    with env:
        text_env = env.unwrapped
        assert isinstance(text_env, TextEnv)
        formats = (
            ", ".join(f"{name} (default)" if name == text_env.action_format else name for name in ACTION_FORMATS)
            + " (action_format=)"
            if found.takes_action_format
            else f"{text_env.action_format} (fixed)"
        )
        doc = (ACTION_FORMATS[text_env.action_format].parse.__doc__ or "").strip().splitlines()
        rows += [
            ("action format", formats),
            ("  it reads", _plain(doc[0]) if doc else text_env.action_format),
            ("action space", str(env.action_space)),
            ("observation space", str(env.observation_space)),
            ("max turns", f"{text_env.max_turns} (gym.make's limit, env.spec.max_episode_steps; max_turns= sets it)"),
            ("tasks", f"{len(text_env.task_ids)} (with the env arguments given)"),
        ]
    for name, value in rows:
        print(f"  {name + ':':<26}{value}")
    return 0


def _serve(args: ServeArgs) -> int:
    from agentenvs.integrations.openenv import serve

    kwargs = env_kwargs(args.env_arg)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: serving on {args.host}, beyond loopback; the server has no authentication", file=sys.stderr)
    try:
        serve(
            args.env,
            host=args.host,
            port=args.port,
            max_sessions=args.max_sessions,
            max_sessions_per_client=args.max_sessions_per_client,
            session_timeout_s=args.session_timeout,
            request_timeout_s=args.request_timeout,
            expose_privileged=args.expose_privileged,
            **kwargs,
        )
    except ImportError as error:
        print(f"{PROG} serve: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # uvicorn shuts down on Ctrl-C, then raises it again
        pass
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    print("stopped")
    return 0


# -- parsing and dispatch --------------------------------------------------------------------------


def _usage_exit(command: str, message: str) -> typing.NoReturn:
    """Ends the run the way a bad flag does: ``message`` as one line on stderr, exit status 2."""
    print(f"{PROG} {command}: error: {' '.join(message.split())}", file=sys.stderr)
    raise SystemExit(2)


def parse(argv: Sequence[str]) -> Command:
    """Parses ``<command> [flags]``; exits with status 2 and the reason on a bad command, flag or env id."""
    args = typing.cast(
        Command,
        tyro.extras.subcommand_cli_from_dict(
            {command.name: command for command in COMMANDS},
            prog=PROG,
            description="Command-line tools for the agentenvs envs.",
            args=list(argv),
        ),
    )
    if not isinstance(args, ListArgs):  # checked here, not by a ``Literal``: tyro's own errors are a box
        ids = sorted(PREGENERATORS) if isinstance(args, PregenerateArgs) else agentenvs_ids()
        if args.env not in ids:
            _usage_exit(args.name, f"invalid choice: {args.env!r} (choose from {', '.join(ids)})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; returns the exit status (a usage error exits with status 2)."""
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        if isinstance(args, InfoArgs):
            return _info(args)
        if isinstance(args, PlayArgs):
            return play(args)
        if isinstance(args, ServeArgs):
            return _serve(args)
        if isinstance(args, PregenerateArgs):
            return _pregenerate(args)
        return _list(args)
    except UsageError as error:
        _usage_exit(args.name, str(error))
