"""``python -m agentenvs``: command-line tools for the envs (typed dataclass arguments parsed by tyro).

::

    python -m agentenvs list                         # registered ids, their datasets and splits
    python -m agentenvs info WebShop-v0              # spec, action format, observation modes, tasks
    python -m agentenvs play ALFWorld-v0             # play in the terminal: a number or free text
    python -m agentenvs serve SearchQA-v0 --port 8000   # OpenEnv server on 127.0.0.1
    python -m agentenvs pregenerate ALFWorld-v0 --count 256 --seed 0 --workers 2

``info``, ``play`` and ``serve`` take env arguments as ``--env-arg KEY=VALUE`` (the value
read as JSON where it parses, else as text), e.g. ``--env-arg split=test --env-arg max_turns=8``.
What ``list`` and ``info`` show is read from each env class (its constructor's ``Literal``
annotations and argument docs, ``held_out_split``), so it follows the envs as they change.
A bad value is one line on stderr and exit status 2; ``--help`` lists every flag.

Example:
    >>> args = parse(["play", "SearchQA-v0", "--env-arg", "split=test", "--env-arg", "top_k=3", "--seed", "4"])
    >>> type(args).__name__, args.env, args.seed, env_kwargs(args.env_arg)
    ('PlayArgs', 'SearchQA-v0', 4, {'split': 'test', 'top_k': 3})
    >>> parse(["serve", "SearchQA-v0", "--max-sessions", "2", "--expose-privileged"]).expose_privileged
    True
    >>> parse(["pregenerate", "ALFWorld-v0", "--count", "8", "--time-limit", "5"]).time_limit
    5.0
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import gymnasium as gym

# Imported at module load, not lazily: tyro scans ``builtins`` when first imported and
# fails if ``builtins._`` then holds an unhashable tuple (as doctest runs leave it).
import tyro
from gymnasium.envs.registration import load_env_creator

from agentenvs.core.actions import ACTION_FORMATS
from agentenvs.core.env import TextEnv
from agentenvs.core.registration import agentenvs_ids

if TYPE_CHECKING:
    from agentenvs.alfworld.generator import GenerationReport

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
    """Seconds one game's verification may take (planner_time_limit_s)."""
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


# -- what an env declares, read from its class (nothing here is a table to keep in step) -------------


@dataclass(frozen=True)
class Choice:
    """The values a constructor argument declares (its ``Literal`` annotation, else its Args doc)."""

    argument: str
    values: tuple[str, ...]
    default: str | None

    def shown(self) -> str:
        return ", ".join(f"{value} (default)" if value == self.default else value for value in self.values)


@dataclass(frozen=True)
class Declaration:
    """What ``list`` and ``info`` show of one registered env before it is built."""

    env_id: str
    entry_point: str
    env_class: type
    summary: str
    datasets: Choice | None
    splits: Choice | None
    held_out_split: str | None
    observation_modes: Choice | None
    takes_action_format: bool
    lists_admissible_actions: bool


DATASET_ARGUMENTS = ("dataset", "source")
"""The constructor arguments that choose where tasks come from (ALFWorld calls it ``source``)."""


def _literal_values(hint: Any) -> tuple[str, ...]:
    """The string values of a ``Literal`` annotation, through ``| None`` and aliases."""
    if typing.get_origin(hint) is typing.Literal:
        return tuple(value for value in typing.get_args(hint) if isinstance(value, str))
    return tuple(value for arg in typing.get_args(hint) for value in _literal_values(arg))


def _argument_doc(env_class: type, argument: str) -> str:
    """The text of ``argument``'s entry in the class docstring's ``Args:`` section ("" if none)."""
    doc = inspect.getdoc(env_class) or ""
    args = doc.split("Args:", 1)[1] if "Args:" in doc else ""
    match = re.search(rf"^([ \t]*){re.escape(argument)}:(.*(?:\n\1[ \t]+.*)*)", args, flags=re.MULTILINE)
    return " ".join(match.group(2).split()) if match else ""


def _choice(env_class: type, parameters: Any, hints: dict[str, Any], argument: str) -> Choice | None:
    if argument not in parameters:
        return None
    values = _literal_values(hints.get(argument))
    if not values:  # an argument typed ``str``: the quoted values its doc names
        values = tuple(dict.fromkeys(re.findall(r'``"([^"`]+)"``', _argument_doc(env_class, argument))))
    if not values:
        return None
    default = parameters[argument].default
    return Choice(argument, values, default if isinstance(default, str) else None)


def _summary(env_id: str, env_class: type) -> str:
    """The first line of the env module's docstring, without its ``ENV_ID:`` prefix."""
    module = sys.modules.get(env_class.__module__)
    line = ((module.__doc__ if module else None) or env_class.__doc__ or env_id).strip().splitlines()[0]
    return line.removeprefix(f"{env_id}:").strip()


def declaration(env_id: str) -> Declaration:
    """What ``env_id``'s class declares: datasets, splits, observation modes, action formats.

    >>> d = declaration("WebShop-v0")
    >>> d.datasets.values, d.held_out_split, d.observation_modes.default
    (('generated', 'official'), 'test', 'text')
    """
    entry_point = gym.spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    if not (inspect.isclass(creator) and issubclass(creator, TextEnv)):
        raise TypeError(f"{env_id} is not an agentenvs TextEnv")
    parameters = inspect.signature(creator).parameters
    try:
        hints = typing.get_type_hints(creator.__init__)
    except (NameError, TypeError):  # an annotation that only resolves under TYPE_CHECKING
        hints = {}
    dataset_argument = next((name for name in DATASET_ARGUMENTS if name in parameters), "dataset")
    return Declaration(
        env_id=env_id,
        entry_point=str(entry_point),
        env_class=creator,
        summary=_summary(env_id, creator),
        datasets=_choice(creator, parameters, hints, dataset_argument),
        splits=_choice(creator, parameters, hints, "split"),
        held_out_split=creator.held_out_split,
        observation_modes=_choice(creator, parameters, hints, "observation_mode"),
        takes_action_format="action_format" in parameters,
        lists_admissible_actions=creator._admissible_actions is not TextEnv._admissible_actions,
    )


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


# -- list, info, play, serve ---------------------------------------------------------------------


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


def _make(args: EnvArgs) -> gym.Env:
    """The env of ``args.env`` with its ``--env-arg``s; a bad argument is a usage error naming it."""
    kwargs = env_kwargs(args.env_arg)
    try:
        return gym.make(args.env, **kwargs)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None


def _info(args: InfoArgs) -> int:
    found = declaration(args.env)
    spec = gym.spec(args.env)
    print(f"{found.env_id}  {_plain(found.summary)}")
    rows: list[tuple[str, str]] = [
        ("entry point", found.entry_point),
        ("spec", f"max_episode_steps={spec.max_episode_steps}, kwargs={spec.kwargs}"),
    ]
    if found.datasets is not None:
        rows.append((f"datasets ({found.datasets.argument}=)", found.datasets.shown()))
    if found.splits is not None:
        rows.append(("splits (split=)", found.splits.shown()))
    rows.append(("held-out split", found.held_out_split or "none"))
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
        env = _make(args)
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
            ("max turns", str(text_env.max_turns)),
            ("tasks", f"{len(text_env.task_ids)} (with the env arguments given)"),
        ]
    for name, value in rows:
        print(f"  {name + ':':<26}{value}")
    return 0


QUIT_WORDS = ("quit", "exit")
_PLACEHOLDER = re.compile(r"<([^<>]+)>")


def _read(prompt: str) -> str | None:
    """A line from the player; None at end of input."""
    try:
        return input(prompt)
    except EOFError:
        print()
        return None


def _chosen_action(line: str, admissible: list[str] | None, action_format: str) -> str | None:
    """The action a line means: the numbered admissible action, else the text itself.

    A numbered action with a placeholder (``search[<query>]``) asks for its value; None: input ended.

    Raises:
        ValueError: for a number that is not on the list (the player is asked again).
    """
    text = line.strip()
    if not (admissible and text.isdigit()):
        return line
    if not 1 <= int(text) <= len(admissible):
        raise ValueError(f"no action {text}: choose 1-{len(admissible)}, or type an action")
    action = admissible[int(text) - 1]
    placeholder = _PLACEHOLDER.search(action)
    if placeholder is not None:
        value = _read(f"{placeholder.group(1)}: ")
        if value is None:
            return None
        action = action[: placeholder.start()] + value.strip() + action[placeholder.end() :]
    if action_format.startswith("think_action"):
        return f"<think>chosen from the list</think><action>{action}</action>"
    return action


def _play(args: PlayArgs) -> int:
    """A person plays: each turn shows the observation and the numbered admissible actions."""
    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    env = _make(args)
    text_env = env.unwrapped
    assert isinstance(text_env, TextEnv)
    played = won = 0
    print(f"{args.env}: type a number from the list or an action; '{QUIT_WORDS[0]}' or end of input stops.")
    with env:
        for episode in range(args.episodes):
            try:
                observation, info = env.reset(
                    seed=args.seed + episode, options=None if args.task is None else {"task_id": args.task}
                )
            except KeyError as error:
                raise UsageError(str(error.args[0])) from None
            print(f"\n== episode {episode + 1}: task {info['task_id']} ==\n{observation}")
            total, done = 0.0, False
            while not done:
                admissible = info["admissible_actions"]
                for number, action in enumerate(admissible or [], start=1):
                    print(f"  {number:>3}. {action}")
                line = _read("> ")
                if line is not None and line.strip().lower() in QUIT_WORDS:
                    line = None
                try:
                    action = None if line is None else _chosen_action(line, admissible, text_env.action_format)
                except ValueError as error:
                    print(error)
                    continue
                if action is None:
                    print(f"stopped: {played} episode(s) played, {won} won")
                    return 0
                observation, reward, terminated, truncated, info = env.step(action)
                total += float(reward)
                done = bool(terminated or truncated)
                valid = "" if info["action_valid"] else ", invalid action"
                print(f"{observation}\n[reward {reward:g}, turn {info['turn']}/{text_env.max_turns}{valid}]")
            played += 1
            won += bool(info["won"])
            ending = "won" if info["won"] else ("out of turns" if truncated else "not won")
            print(f"== episode over: {ending}, return {total:g} ==")
    print(f"{played} episode(s) played, {won} won")
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
            return _play(args)
        if isinstance(args, ServeArgs):
            return _serve(args)
        if isinstance(args, PregenerateArgs):
            return _pregenerate(args)
        return _list(args)
    except UsageError as error:
        _usage_exit(args.name, str(error))


if __name__ == "__main__":
    sys.exit(main())
