"""The arguments of ``python -m agentenvs``: one dataclass per command, a field (with its one-line doc) per flag.

Example:
    >>> args = PlayArgs("SearchQA-v0", env_arg=("split=test", "top_k=3"))
    >>> env_kwargs(args.env_arg)
    {'split': 'test', 'top_k': 3}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import gymnasium as gym

# Imported at module load, not lazily: tyro scans ``builtins`` when first imported and
# fails if ``builtins._`` then holds an unhashable tuple (as doctest runs leave it).
import tyro

PROG = "python -m agentenvs"

# -- the commands' arguments: one dataclass each, a field per flag ---------------------------------

EnvId = Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="ENV_ID")]
"""A positional env id; checked against the registry by :func:`parse`, so a wrong one is one line."""

EnvArgPairs = Annotated[tuple[str, ...], tyro.conf.UseAppendAction, tyro.conf.arg(metavar="KEY=VALUE")]
"""``--env-arg KEY=VALUE``, one pair per flag, the flag repeated for more."""


@dataclass
class ListArgs:
    """The registered envs, their datasets and splits."""

    name: ClassVar[str] = "list"


@dataclass
class EnvArgs:
    """The arguments of a command that builds one env: its id and its ``gym.make`` keywords."""

    env: EnvId
    """A registered env id (python -m agentenvs list shows them)."""
    env_arg: EnvArgPairs = ()
    """A gym.make argument as KEY=VALUE (VALUE read as JSON where it parses, else as text); repeatable."""


@dataclass
class InfoArgs(EnvArgs):
    """An env's spec, action format, observation modes, splits and number of tasks."""

    name: ClassVar[str] = "info"


@dataclass
class PlayArgs(EnvArgs):
    """Play an env in the terminal (a number from the list, or free text)."""

    name: ClassVar[str] = "play"
    seed: int = 0
    """Seed of the first episode (then +1 per episode)."""
    episodes: int = 1
    """Episodes to play."""
    task: str | None = None
    """A task id to play (default: drawn with the seed)."""


@dataclass
class ServeArgs(EnvArgs):
    """Serve an env over OpenEnv's HTTP/WebSocket protocol."""

    name: ClassVar[str] = "serve"
    host: str = "127.0.0.1"
    """Address to listen on (default loopback)."""
    port: int = 8000
    """Port (0 picks a free one; the URL is printed)."""
    max_sessions: int = 16
    """WebSocket sessions at once."""
    max_sessions_per_client: int | None = None
    """Sessions one remote address may hold at once (default: all of --max-sessions on a loopback
    --host, where every client has the same address; half of them, at least 1, elsewhere)."""
    session_timeout: float | None = 300.0
    """Seconds a session may stay idle before it is destroyed and its slot freed."""
    request_timeout: float | None = 10.0
    """Seconds an HTTP request's headers, then its body, may take to arrive; a slower one gets 408."""
    expose_privileged: bool = False
    """Send info['privileged'] (answers, targets, expert plans) to clients; off: clients are agents."""


@dataclass
class PregenerateArgs:
    """Generate an env's games into its cache ahead of training, so that no reset waits for one."""

    name: ClassVar[str] = "pregenerate"
    env: EnvId
    """The env whose games to generate (ALFWorld-v0)."""
    count: int = 256
    """Games in the pool (gym.make's num_generated_games)."""
    seed: int = 0
    """Seed of the pool (gym.make's generator_seed)."""
    workers: int = 1
    """Games verified at once, one process each."""
    cache_dir: str | None = None
    """Cache root (default $AGENTENVS_CACHE, else ~/.cache/agentenvs), where gym.make finds the games."""
    time_limit: float = 20.0
    """CPU seconds one game's verification may take (planner_time_limit_s; at least 10)."""
    memory_limit: int = 1024
    """MiB one game's verification may add (planner_memory_limit_mb)."""
    quiet: bool = False
    """No progress bar."""


Command = ListArgs | InfoArgs | PlayArgs | ServeArgs | PregenerateArgs
COMMANDS: tuple[type[Command], ...] = (ListArgs, InfoArgs, PlayArgs, ServeArgs, PregenerateArgs)
"""The subcommands, in the order ``--help`` lists them."""


class UsageError(ValueError):
    """A bad command-line value: :func:`main` prints it as one line and exits with status 2."""


def env_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``--env-arg KEY=VALUE`` pairs as ``gym.make`` keywords (values read as JSON where they parse).

    >>> env_kwargs(["split=test", "max_turns=8", 'observation_mode="html"', "query=red shoes"])
    {'split': 'test', 'max_turns': 8, 'observation_mode': 'html', 'query': 'red shoes'}

    Raises:
        UsageError: for a pair without ``=`` or whose key is no Python name.
    """
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--env-arg takes KEY=VALUE, got {pair!r}")
        try:
            kwargs[key] = json.loads(text)
        except ValueError:
            kwargs[key] = text
    return kwargs


def make_env(args: EnvArgs) -> gym.Env:
    """The env of ``args.env`` with its ``--env-arg``s; a bad argument is a usage error naming it."""
    kwargs = env_kwargs(args.env_arg)
    try:
        return gym.make(args.env, **kwargs)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
