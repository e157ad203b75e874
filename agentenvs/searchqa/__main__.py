"""``python -m agentenvs.searchqa play``: scripted agents play SearchQA-v0 and report EM.

Example::

    python -m agentenvs.searchqa play --episodes 100
    python -m agentenvs.searchqa play --dataset hotpotqa --data-path ../shared/data/searchqa --agents expert
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import gymnasium as gym

import agentenvs  # noqa: F401  (registers SearchQA-v0)
from agentenvs.searchqa.env import SearchQAEnv
from agentenvs.searchqa.scripted import ExpertAgent, NoSearchAgent, ScriptedAgent, TopTitleAgent, play_episodes

AGENTS: dict[str, type[ScriptedAgent]] = {
    "expert": ExpertAgent,
    "top-title": TopTitleAgent,
    "no-search": NoSearchAgent,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentenvs.searchqa", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    play = commands.add_parser("play", help="play episodes with scripted agents and print EM")
    play.add_argument("--episodes", type=int, default=100)
    play.add_argument("--seed", type=int, default=0)
    play.add_argument("--dataset", choices=["generated", "hotpotqa", "nq"], default="generated")
    play.add_argument("--data-path", default=None)
    play.add_argument("--split", choices=["train", "test", "all"], default=None)
    play.add_argument("--agents", nargs="+", choices=sorted(AGENTS), default=["no-search", "top-title", "expert"])
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be >= 1")

    kwargs = {"dataset": args.dataset, "data_path": args.data_path}
    if args.split is not None:
        kwargs["split"] = args.split
    env = gym.make("SearchQA-v0", **kwargs)
    searchqa: SearchQAEnv = env.unwrapped  # type: ignore[assignment]  # gym.make's return type is the generic Env
    print(f"SearchQA-v0 dataset={args.dataset} tasks={len(searchqa.task_ids)} episodes={args.episodes}")
    for name in args.agents:
        start = time.perf_counter()
        results = play_episodes(env, AGENTS[name](), episodes=args.episodes, seed=args.seed)
        seconds = time.perf_counter() - start
        em = statistics.fmean(r.em for r in results)
        f1 = statistics.fmean(r.f1 for r in results)
        turns = statistics.fmean(r.turns for r in results)
        print(f"{name:>10}: EM {em:.3f}  F1 {f1:.3f}  turns {turns:.2f}  ({len(results) / seconds:.0f} episodes/s)")
    env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
