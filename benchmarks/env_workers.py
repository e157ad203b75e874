"""ALFWorld-v0 collection wall time with a scripted policy: envs in this process ("sync"), a
subprocess each ("async"), or whole groups in Ray actors ("ray", ``--workers`` of them).

Each mode builds ``--groups`` x ``--group-size`` envs with ``make_group_vec`` and plays
``--collections`` collections in lockstep, the same tasks and seeds in every mode. The scripted
policy follows the expert on even turns and takes a seeded random admissible command on odd
ones (longer, more varied episodes than the expert alone), so only the envs cost time: what
this measures is the env side of a collection, which Ray spreads over processes. The games
are generated (or found in the cache) by ``python -m agentenvs pregenerate`` in a child process
first, so no mode waits for generation and this process's caches start cold for every mode.
Prefetching is off in every mode (``AsyncVectorEnv`` workers cannot have it, and with the tasks
given it would translate games no reset asks for).
Prints each mode's build and collection seconds, the collections' ratios to sync, and whether
every mode played the same episodes.

    OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/env_workers.py --workers 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np
from gymnasium.wrappers.vector import DictInfoToList

import agentenvs  # noqa: F401  (registers ALFWorld-v0)
from agentenvs.core.groups import make_group_vec


def scripted_actions(infos: list[dict[str, Any]], turn: int, rng: np.random.Generator) -> list[str]:
    """The expert's command on even turns, a random admissible one on odd turns (``look`` when none)."""
    actions = []
    for info in infos:
        admissible = info.get("admissible_actions") or ["look"]
        expert = info.get("expert_action")
        actions.append(expert if expert and turn % 2 == 0 else str(admissible[int(rng.integers(len(admissible)))]))
    return actions


def play(mode: str, args: argparse.Namespace, tasks: list[list[str]]) -> tuple[float, float, list[Any]]:
    """Builds the envs in ``mode`` and plays the collections; returns build s, collection s, episodes."""
    started = time.perf_counter()
    envs = DictInfoToList(
        make_group_vec(
            "ALFWorld-v0",
            args.groups,
            args.group_size,
            seed=0,
            vectorization_mode=mode,
            num_workers=args.workers if mode == "ray" else None,
            max_turns=args.max_turns,
            prefetch=False,  # the tasks are given, so a prefetch (of the next seeded draw) would be wasted work
            privileged=True,  # the scripted agent follows info["expert_action"]
        )
    )
    built = time.perf_counter()
    episodes = []
    rng = np.random.default_rng(0)
    for collection, task_ids in enumerate(tasks):
        _, infos = envs.reset(seed=collection, options={"task_ids": task_ids})
        done = np.zeros(envs.num_envs, dtype=bool)
        record = [[info["task_id"]] for info in infos]
        for turn in range(args.max_turns):
            actions = scripted_actions(infos, turn, rng)
            _, rewards, terminated, truncated, infos = envs.step(actions)
            for i in np.flatnonzero(~done):
                record[i].append((actions[i], float(rewards[i])))
            done |= terminated | truncated
            if done.all():
                break
        episodes.append(record)
    finished = time.perf_counter()
    envs.close()
    return built - started, finished - built, episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--collections", type=int, default=3)
    parser.add_argument("--max-turns", type=int, default=15)
    parser.add_argument("--workers", type=int, default=2, help="Ray env workers")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    args = parser.parse_args()

    count = args.groups * args.collections
    subprocess.run(
        [sys.executable, "-m", "agentenvs", "pregenerate", "ALFWorld-v0", "--count", str(count), "--workers", "2"],
        check=True,
    )
    task_ids = _first_tasks(count)
    tasks = [task_ids[c * args.groups : (c + 1) * args.groups] for c in range(args.collections)]

    import ray

    ray_started = time.perf_counter()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray_seconds = time.perf_counter() - ray_started
    print(
        f"ALFWorld-v0, {args.groups} groups x {args.group_size} envs, {args.collections} collections of "
        f"{args.groups} new games, at most {args.max_turns} turns; {os.cpu_count()} CPUs on this machine; "
        f"ray.init {ray_seconds:.1f} s"
    )
    results = {}
    for mode in ("sync", "async", "ray"):
        results[mode] = play(mode, args, tasks)
        build, collect, episodes = results[mode]
        steps = sum(len(record) - 1 for collection in episodes for record in collection)
        label = f"ray ({args.workers} workers)" if mode == "ray" else mode
        print(f"{label:>16}: build {build:6.1f} s, collections {collect:6.1f} s ({steps} env steps)")
    ray.shutdown()
    sync = results["sync"][1]
    print(
        f"collection wall time ratio sync/async {sync / results['async'][1]:.2f}x, "
        f"sync/ray {sync / results['ray'][1]:.2f}x (>1: faster than sync); "
        f"same episodes in every mode: {results['sync'][2] == results['async'][2] == results['ray'][2]}"
    )


def _first_tasks(count: int) -> list[str]:
    """The first ``count`` task ids of the default generated pool (what ``pregenerate`` made)."""
    import gymnasium as gym

    env = gym.make("ALFWorld-v0")
    try:
        return list(env.unwrapped.task_ids[:count])  # type: ignore[attr-defined]
    finally:
        env.close()


if __name__ == "__main__":
    main()
