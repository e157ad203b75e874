"""``python -m agentenvs``: command-line tools for the envs.

``pregenerate`` makes an env's generated games ahead of training, so that no reset
waits for a game to be generated and verified::

    python -m agentenvs pregenerate ALFWorld-v0 --count 256 --seed 0 --workers 2

The games land in the env's cache (``$AGENTENVS_CACHE`` or ``~/.cache/agentenvs``),
where ``gym.make("ALFWorld-v0", num_generated_games=256, generator_seed=0)`` finds them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence


def _pregenerate_alfworld(args: argparse.Namespace) -> int:
    from agentenvs.alfworld.generator import GeneratedGames
    from agentenvs.alfworld.verifier import PlannerLimits

    try:  # the checks name the argument; argparse shows it as a usage error
        limits = PlannerLimits(time_limit_s=args.time_limit, memory_limit_mb=args.memory_limit)
        games = GeneratedGames(seed=args.seed, count=args.count, cache_dir=args.cache_dir, planner_limits=limits)
        if args.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {args.workers}")
    except (TypeError, ValueError) as error:
        args.parser.error(str(error))
    with games:
        report = games.pregenerate(workers=args.workers, progress=not args.quiet)
        folder = games.folder
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


PREGENERATORS: dict[str, Callable[[argparse.Namespace], int]] = {"ALFWorld-v0": _pregenerate_alfworld}
"""Envs whose games can be generated ahead of time, and how."""


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="python -m agentenvs", description="Command-line tools for the agentenvs envs."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pregenerate = commands.add_parser(
        "pregenerate", help="generate an env's games into its cache ahead of training", description=__doc__
    )
    pregenerate.formatter_class = argparse.RawDescriptionHelpFormatter
    pregenerate.add_argument("env", choices=sorted(PREGENERATORS), help="the env whose games to generate")
    pregenerate.add_argument("--count", type=int, default=256, help="games in the pool (num_generated_games)")
    pregenerate.add_argument("--seed", type=int, default=0, help="seed of the pool (generator_seed)")
    pregenerate.add_argument("--workers", type=int, default=1, help="games verified at once, one process each")
    pregenerate.add_argument("--cache-dir", default=None, help="cache root (default $AGENTENVS_CACHE)")
    pregenerate.add_argument(
        "--time-limit", type=float, default=20.0, help="seconds one game's verification may take (planner_time_limit_s)"
    )
    pregenerate.add_argument(
        "--memory-limit", type=int, default=1024, help="MiB one game's verification may add (planner_memory_limit_mb)"
    )
    pregenerate.add_argument("--quiet", action="store_true", help="no progress bar")
    pregenerate.set_defaults(run=lambda args: PREGENERATORS[args.env](args), parser=pregenerate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; returns the exit status."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
