"""What ``env.unwrapped.snapshot()`` and ``restore()`` cost, per env, next to one ``step``.

For each env an episode is played with seeded random actions (the expert's half the time) to a
depth (turns taken); at that state the script times ``snapshot()`` and ``restore()`` (the median of
``--repeats`` calls, in µs) and one ``step`` (the mean over the episode's steps), and prints the
ratios. Every env's restore replays the episode's actions from its start
(:mod:`agentenvs.core.snapshots`): it grows with the depth, about one reset plus one step per turn.

Run: ``nice -n 19 python benchmarks/env_snapshots.py [--repeats 50] [--depths 0 5 10]``; results and the
CPU they were measured on in ``benchmarks/results/env_snapshots.md``.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.testing.machine import cpu_model

ENVS: dict[str, Callable[[], gym.Env]] = {
    "WebShop-v0": lambda: gym.make("WebShop-v0", max_turns=50),
    "SearchQA-v0": lambda: gym.make("SearchQA-v0", max_turns=50),
    "ALFWorld-v0": lambda: gym.make("ALFWorld-v0", num_generated_games=2, prefetch=False, max_turns=50),
    "Bifurcation-v0": lambda: gym.make("Bifurcation-v0", length=12, fork_at=6),
}


def _action(env: gym.Env, rng: np.random.Generator, info: dict[str, Any]) -> str:
    if rng.random() < 0.5 and (expert := env.unwrapped.expert_action()):
        return expert
    actions = info.get("admissible_actions") or []
    if not actions or actions == ["search[<query>]"]:
        words = info["task"].split()
        query = " ".join(words[: int(rng.integers(1, len(words) + 1))])
        return f"<search>{query}</search>" if env.spec and env.spec.id == "SearchQA-v0" else f"search[{query}]"
    return actions[int(rng.integers(len(actions)))]


def _median_us(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def measure(name: str, depth: int, repeats: int, seed: int = 0) -> dict[str, float] | None:
    """Times snapshot, restore and step at ``depth`` turns (None when no seeded episode lasts that long)."""
    env = ENVS[name]()
    rng = np.random.default_rng(seed)
    try:
        for attempt in range(20):
            _, info = env.reset(seed=seed + attempt)
            step_seconds = []
            for _ in range(depth):
                action = _action(env, rng, info)
                start = time.perf_counter()
                _, _, terminated, truncated, info = env.step(action)
                step_seconds.append(time.perf_counter() - start)
                if terminated or truncated:
                    break
            if len(step_seconds) == depth and not (terminated or truncated if depth else False):
                break
        else:
            return None
        if not step_seconds:  # depth 0: time steps from a copy of the start
            snapshot = env.unwrapped.snapshot()
            for _ in range(5):
                env.unwrapped.restore(snapshot)
                start = time.perf_counter()
                env.step(_action(env, rng, info))
                step_seconds.append(time.perf_counter() - start)
            env.unwrapped.restore(snapshot)
        snapshot = env.unwrapped.snapshot()
        snapshot_us = _median_us(env.unwrapped.snapshot, repeats)
        restore_us = _median_us(lambda: env.unwrapped.restore(snapshot), repeats)
        step_us = statistics.mean(step_seconds) * 1e6
        return {
            "snapshot_us": snapshot_us,
            "restore_us": restore_us,
            "step_us": step_us,
            "pickled_bytes": float(len(pickle.dumps(snapshot))),
        }
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50, help="calls timed per measure (ALFWorld: a fifth)")
    parser.add_argument("--depths", type=int, nargs="+", default=[0, 5, 10])
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    args = parser.parse_args()
    print(cpu_model())
    print(
        f"{'env':<12} {'depth':>5} {'snapshot µs':>12} {'restore µs':>11} {'step µs':>9} "
        f"{'snap/step':>9} {'restore/step':>12} {'bytes':>7}"
    )
    for name in args.envs:
        repeats = max(1, args.repeats // 5) if name == "ALFWorld-v0" else args.repeats
        for depth in args.depths:
            row = measure(name, depth, repeats)
            if row is None:
                print(f"{name:<12} {depth:>5} (no seeded episode lasted {depth} turns)")
                continue
            print(
                f"{name:<12} {depth:>5} {row['snapshot_us']:>12.1f} {row['restore_us']:>11.1f} {row['step_us']:>9.1f} "
                f"{row['snapshot_us'] / row['step_us']:>9.3f} {row['restore_us'] / row['step_us']:>12.2f} "
                f"{row['pickled_bytes']:>7.0f}"
            )


if __name__ == "__main__":
    main()
