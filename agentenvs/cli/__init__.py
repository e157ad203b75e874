"""``python -m agentenvs``: command-line tools for the envs (typed dataclass arguments parsed by tyro).

::

    python -m agentenvs list                         # registered ids, their datasets and splits
    python -m agentenvs info WebShop-v0              # spec, action format, observation modes, tasks
    python -m agentenvs play ALFWorld-v0             # play in the terminal: a number or free text
    python -m agentenvs serve SearchQA-v0 --port 8000   # OpenEnv server on 127.0.0.1
    python -m agentenvs pregenerate ALFWorld-v0 --count 256 --seed 0 --workers 2

``info``, ``play`` and ``serve`` take env arguments as ``--env-arg KEY=VALUE`` (the value
read as JSON where it parses, else as text), e.g. ``--env-arg split=test --env-arg max_turns=8``.
What ``list`` and ``info`` show is read from each env class (:mod:`agentenvs.cli.declarations`),
so it follows the envs as they change. A bad value is one line on stderr and exit status 2;
``python -m agentenvs <command> --help`` lists every flag.

Modules: :mod:`~agentenvs.cli.args` (a dataclass per command), :mod:`~agentenvs.cli.app`
(``parse`` and ``main``: list, info, serve, pregenerate), :mod:`~agentenvs.cli.play` (the
terminal game), :mod:`~agentenvs.cli.declarations`.
"""

from agentenvs.cli.app import main, parse
from agentenvs.cli.args import (
    Command,
    InfoArgs,
    ListArgs,
    PlayArgs,
    PregenerateArgs,
    ServeArgs,
    UsageError,
    env_kwargs,
)
from agentenvs.cli.declarations import Choice, Declaration, declaration

__all__ = [
    "Choice",
    "Command",
    "Declaration",
    "InfoArgs",
    "ListArgs",
    "PlayArgs",
    "PregenerateArgs",
    "ServeArgs",
    "UsageError",
    "declaration",
    "env_kwargs",
    "main",
    "parse",
]
