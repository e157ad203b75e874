"""``python -m agentenvs.searchqa baselines``: scripted baselines play SearchQA-v0 and report EM.

(``agentenvs play`` is the game for people; these are scripted agents, hence the other name.)

Example::

    python -m agentenvs.searchqa baselines --episodes 100
    python -m agentenvs.searchqa baselines --dataset hotpotqa --data-path ../shared/data/searchqa --agents expert
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import gymnasium as gym
import tyro

import agentenvs  # noqa: F401  (registers SearchQA-v0)
from agentenvs.searchqa.env import SearchQAEnv
from agentenvs.searchqa.scripted import ExpertAgent, NoSearchAgent, ScriptedAgent, TopTitleAgent, play_episodes

PROG = "python -m agentenvs.searchqa"
AGENTS: dict[str, type[ScriptedAgent]] = {
    "expert": ExpertAgent,
    "top-title": TopTitleAgent,
    "no-search": NoSearchAgent,
}
AgentName = Literal["expert", "top-title", "no-search"]


@dataclass
class BaselinesArgs:
    """Play episodes with the scripted baselines and print EM."""

    episodes: int = 100
    """Episodes per agent (at least 1)."""
    seed: int = 0
    """Seed of the first episode (then +1 per episode)."""
    dataset: Literal["generated", "hotpotqa", "nq"] = "generated"
    """The questions: the seeded fictional knowledge base, HotpotQA or NQ files."""
    data_path: str | None = None
    """Folder with the dataset's files (None: $AGENTENVS_SEARCHQA_DATA, or the generated one)."""
    split: Literal["train", "test", "all"] | None = None
    """Which questions (None: the env's default)."""
    agents: tuple[AgentName, ...] = ("no-search", "top-title", "expert")
    """The scripted agents to play, in order."""


def parse(argv: Sequence[str]) -> BaselinesArgs:
    """Parses ``baselines [flags]``; a bad flag or value exits with status 2 and the reason."""
    args = tyro.extras.subcommand_cli_from_dict(
        {"baselines": BaselinesArgs}, prog=PROG, description=__doc__.splitlines()[0], args=list(argv)
    )
    if args.episodes < 1:
        print(f"{PROG} baselines: error: --episodes must be >= 1, got {args.episodes}", file=sys.stderr)
        raise SystemExit(2)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    env = gym.make("SearchQA-v0", dataset=args.dataset, data_path=args.data_path, split=args.split)
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
