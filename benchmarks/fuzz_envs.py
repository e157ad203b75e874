"""Nightly fuzz: every registered env with hostile model outputs, and the shop's HTTP routes.

Per env (all its observation modes and action formats, the steps split evenly between
them): fuzzed outputs sent, exceptions and broken invariants (see
:mod:`agentenvs.testing.fuzzing`), steps/s, episodes, accepted actions and the process's
RSS after the env (current and peak). Then the shop's routes
(:mod:`agentenvs.testing.shop_routes`): requests sent, status counts and 5xx. Exit status 1
when anything failed, so a scheduler can alert on it.

ALFWorld replays its first seeded game (generating games is not what is fuzzed).

Run: ``python benchmarks/fuzz_envs.py [--steps 10000] [--requests 5000] [--seed 0] [--envs WebShop-v0 ...]``
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import time
from typing import Any

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.registration import agentenvs_ids
from agentenvs.testing.fuzzing import FuzzReport, env_variants, fuzz_env
from agentenvs.testing.shop_routes import fuzz_routes
from agentenvs.webshop.app import create_app
from agentenvs.webshop.engine import WebShopEngine

QUIET: dict[str, dict[str, Any]] = {"ALFWorld-v0": {"prefetch": False}}
"""No prefetch process: the fuzz replays one game."""


def rss_mib() -> tuple[float, float]:
    """Current and peak resident memory of this process, in MiB (current needs psutil)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    try:
        import psutil
    except ImportError:
        return float("nan"), peak
    return psutil.Process().memory_info().rss / 2**20, peak


def fuzz_one_env(env_id: str, steps: int, seed: int) -> tuple[FuzzReport, int]:
    """All of ``env_id``'s variants, ``steps`` outputs in all; the merged report and the variant count."""
    variants = env_variants(env_id)
    total = FuzzReport()
    for index, variant in enumerate(variants):
        share = steps // len(variants) + (index < steps % len(variants))
        env = gym.make(env_id, privileged=True, **variant, **QUIET.get(env_id, {})).unwrapped
        task_ids = None
        if env_id == "ALFWorld-v0":
            task_ids = [env.reset(seed=0)[1]["task_id"]]
        try:
            report = fuzz_env(env, steps=share, seed=seed + index, task_ids=task_ids)
        finally:
            env.close()
        total.steps += report.steps
        total.episodes += report.episodes
        total.valid_actions += report.valid_actions
        total.terminated += report.terminated
        total.seconds += report.seconds
        total.errors += [(f"{variant} {raw}", trace) for raw, trace in report.errors]
    return total, len(variants)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000, help="fuzzed outputs per env (split over its variants)")
    parser.add_argument("--requests", type=int, default=5_000, help="hostile HTTP requests to the shop")
    parser.add_argument("--seed", type=int, default=0, help="seed of the outputs and requests")
    parser.add_argument("--envs", nargs="*", default=None, help="env ids (default: every registered agentenvs id)")
    parser.add_argument("--show", type=int, default=3, help="failures to print in full per env")
    args = parser.parse_args()
    failed = False
    print(
        f"{'env':<14}{'variants':>9}{'outputs':>9}{'episodes':>9}{'accepted':>9}{'exceptions':>11}"
        f"{'steps/s':>9}{'RSS MiB':>9}{'peak MiB':>9}"
    )
    for env_id in args.envs or agentenvs_ids():
        report, variants = fuzz_one_env(env_id, args.steps, args.seed)
        current, peak = rss_mib()
        rate = report.steps / report.seconds if report.seconds else float("nan")
        print(
            f"{env_id:<14}{variants:>9}{report.steps:>9}{report.episodes:>9}{report.valid_actions:>9}"
            f"{len(report.errors):>11}{rate:>9.0f}{current:>9.0f}{peak:>9.0f}",
            flush=True,
        )
        for raw, trace in report.errors[: args.show]:
            print(f"  output {raw}\n  " + trace.strip().replace("\n", "\n  "))
        failed |= bool(report.errors)

    logging.getLogger("agentenvs.webshop.app").setLevel(logging.CRITICAL)  # each 5xx is counted below instead
    app = create_app(WebShopEngine.generated(num_products=1000, cache_index=True))
    start = time.perf_counter()
    routes = fuzz_routes(app, requests=args.requests, seed=args.seed)
    seconds = time.perf_counter() - start
    statuses = ", ".join(f"{status}: {count}" for status, count in sorted(routes.statuses.items()))
    print(
        f"\nshop routes: {routes.requests} requests in {seconds:.1f} s ({routes.requests / seconds:.0f}/s), "
        f"5xx: {len(routes.server_errors)}\n  statuses: {statuses}"
    )
    for method, path, status, body in routes.server_errors[: args.show]:
        print(f"  {status} {method} {path}\n    {body}")
    failed |= bool(routes.server_errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
