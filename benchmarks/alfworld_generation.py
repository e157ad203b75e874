"""ALFWorld-v0's generated pool: time and memory to pre-generate it, and RSS over resets.

Pre-generates a pool (default: the env's default, 256 games of seed 0) into a fresh
temporary cache and prints the per-game generation seconds (max, p50, p95; drawing and
verifying, the planner process's start excluded), the planner processes' peak resident
memory, and the rejected draws with their reasons. ``--check-determinism`` generates
the pool again into a second cache with another worker count and compares every game
file byte for byte. ``--resets N`` then makes the env on that cache and prints its
resident memory over N seeded resets across the whole pool (one step each).

    .venv/bin/python benchmarks/alfworld_generation.py --workers 2 --check-determinism --resets 1000
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.alfworld.generator import GeneratedGames, GenerationReport
from agentenvs.alfworld.verifier import PlannerLimits


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def pregenerate(cache: Path, args: argparse.Namespace, workers: int) -> tuple[GenerationReport, Path]:
    limits = PlannerLimits(time_limit_s=args.time_limit, memory_limit_mb=args.memory_limit)
    with GeneratedGames(seed=args.seed, count=args.count, cache_dir=cache, planner_limits=limits) as games:
        return games.pregenerate(workers=workers, progress=args.progress), games.folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--memory-limit", type=int, default=1024)
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--check-determinism", action="store_true", help="generate again with other workers, compare")
    parser.add_argument("--resets", type=int, default=0, help="seeded resets of the env for the RSS curve")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="alfworld-generation-") as tmp:
        report, folder = pregenerate(Path(tmp) / "a", args, args.workers)
        generated = report.generated
        print(
            f"{len(generated)} games (seed {args.seed}) generated in {report.seconds:.0f} s with {args.workers} "
            f"workers; limits {args.time_limit:g} s of CPU, {args.memory_limit} MiB"
        )
        print(
            f"per game: max {report.seconds_quantile(1.0):.2f} s, p50 {report.seconds_quantile(0.5):.2f} s, "
            f"p95 {report.seconds_quantile(0.95):.2f} s; peak planner RSS {report.peak_rss_mb:.0f} MB"
        )
        slowest = sorted(generated, key=lambda g: g.seconds, reverse=True)[:5]
        print("slowest: " + ", ".join(f"{g.task_id} {g.seconds:.2f} s ({g.attempts} draws)" for g in slowest))
        reasons = Counter(reason for g in generated for reason in g.rejections)
        print(f"draws verified again (wall-clock safety net): {report.retries}")
        print(f"rejected draws: {report.rejections}" + "".join(f"\n  {n} x {r}" for r, n in reasons.most_common()))
        by_type: dict[str, list[float]] = {}
        for g in generated:
            by_type.setdefault(g.task_id.split("-", 1)[1], []).append(g.seconds)
        for task_type, seconds in sorted(by_type.items()):
            print(f"  {task_type}: max {max(seconds):.2f} s, mean {sum(seconds) / len(seconds):.2f} s")

        if args.check_determinism:
            other = max(1, 3 - args.workers)
            _, folder_b = pregenerate(Path(tmp) / "b", args, other)
            files = sorted(p.relative_to(folder) for p in folder.rglob("game.tw-pddl"))
            same = sum((folder / f).read_bytes() == (folder_b / f).read_bytes() for f in files)
            print(f"determinism: {same}/{len(files)} game files identical with {args.workers} and {other} workers")

        if args.resets:
            env = gym.make(
                "ALFWorld-v0", num_generated_games=args.count, generator_seed=args.seed, cache_dir=Path(tmp) / "a"
            )
            env.reset(seed=0)
            rss0, marks, start, seen = rss_mb(), [], time.monotonic(), set()
            for i in range(args.resets):
                _, info = env.reset()
                seen.add(info["task_id"])
                env.step("look")
                if (i + 1) % max(1, args.resets // 10) == 0:
                    marks.append(f"{i + 1}: {rss_mb():.0f} MB")
            seconds = time.monotonic() - start
            env.close()
            print(
                f"RSS over {args.resets} seeded resets of ALFWorld-v0 across the pool ({seconds / args.resets * 1000:.0f} "
                f"ms per reset + step, {len(seen)} distinct games): start {rss0:.0f} MB; " + ", ".join(marks)
            )


if __name__ == "__main__":
    main()
