"""ALFWorld-v0 vs the official ``AlfredTWEnv`` (TextWorld gym env): reset/step time and RSS.

Both play the same valid_seen games in this process, walkthrough commands as actions.
Prints per-reset and per-step means and the ratios ours/official, for a first visit of
each game (no prefetch), for seeded resets with prefetch while an agent "thinks"
(``--think`` seconds per step, GIL released as during LLM generation), and for a
second visit (translation cached). ``--rss-resets N`` prints resident memory over N
resets of each env; ``--all-walkthroughs`` replays all 140 games through ALFWorld-v0.

    .venv/bin/python benchmarks/alfworld_speed.py --games 20 --rss-resets 200 --all-walkthroughs
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import time
from pathlib import Path

import gymnasium as gym

import agentenvs  # noqa: F401
from agentenvs.alfworld.data import find_games


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def official_env(game_files: list[Path]):
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    config = {
        "env": {
            "goal_desc_human_anns_prob": 0,
            "task_types": [1, 2, 3, 4, 5, 6],
            "domain_randomization": False,
            "expert_type": "handcoded",
        },
        "general": {"training_method": "dqn"},
        "rl": {"training": {"max_nb_steps_per_episode": 50}},
        "dataset": {
            "data_path": "",
            "eval_id_data_path": "",
            "eval_ood_data_path": "",
            "num_train_games": -1,
            "num_eval_games": -1,
        },
    }
    with contextlib.redirect_stdout(io.StringIO()):
        env = AlfredTWEnv(config, train_eval="eval_in_distribution")
    env.game_files = [str(p) for p in game_files]
    return env.init_env(batch_size=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--data",
        default=os.environ.get("AGENTENVS_SHARED_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")),
    )
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--think", type=float, default=0.2, help="simulated agent seconds per step")
    parser.add_argument("--all-walkthroughs", action="store_true")
    parser.add_argument("--rss-resets", type=int, default=0, help="resets of each env for the RSS curve")
    args = parser.parse_args()
    data = Path(args.data) / "alfworld"
    games = find_games(data, "eval_in_distribution")[: args.games]
    files = [g.path for g in games]

    # Both envs play the same games, episode by episode interleaved, so that load from
    # other processes on a shared machine hits both alike.
    official = official_env(files)
    by_file = {str(g.path): g.task_id for g in games}
    # privileged=True: the walkthrough comes from info["game_file"] (and the infos are as before it was opt-in)
    ours = gym.make("ALFWorld-v0", data_path=data, split="eval_in_distribution", prefetch=False, privileged=True)
    ours.unwrapped._task_ids = tuple(g.task_id for g in games)
    seeded = gym.make(
        "ALFWorld-v0",
        data_path=data,
        split="eval_in_distribution",
        prefetch=True,
        translation_cache_size=0,
        privileged=True,
    )
    seeded.unwrapped._task_ids = tuple(g.task_id for g in games)
    times = {name: [[], []] for name in ("official", "first visit", "second visit", "seeded + prefetch")}

    def play_official() -> str:
        t = time.perf_counter()
        _, infos = official.reset()
        times["official"][0].append(time.perf_counter() - t)
        game_file = infos["extra.gamefile"][0]
        for command in json.loads(Path(game_file).read_text())["walkthrough"]:
            time.sleep(args.think)
            t = time.perf_counter()
            official.step([command])
            times["official"][1].append(time.perf_counter() - t)
        return game_file

    def play(env, name: str, **reset_kwargs) -> None:
        t = time.perf_counter()
        _, info = env.reset(**reset_kwargs)
        times[name][0].append(time.perf_counter() - t)
        for command in json.loads(Path(info["game_file"]).read_text())["walkthrough"]:
            time.sleep(args.think)
            t = time.perf_counter()
            env.step(command)
            times[name][1].append(time.perf_counter() - t)

    seeded.reset(seed=0)
    for _ in files:
        game_file = play_official()
        play(ours, "first visit", options={"task_id": by_file[game_file]})
        play(ours, "second visit", options={"task_id": by_file[game_file]})
        time.sleep(args.think)
        play(seeded, "seeded + prefetch")
    official.close()
    off_reset, off_step = (sum(v) / len(v) for v in times["official"])
    print(
        f"{len(files)} games, agent think time {args.think}s per step (sleep: the GIL is free, as during LLM generation)"
    )
    print(f"official AlfredTWEnv: reset {off_reset * 1000:.0f} ms, step {off_step * 1000:.1f} ms")
    for name, (resets, steps) in times.items():
        if name != "official":
            reset, step = sum(resets) / len(resets), sum(steps) / len(steps)
            print(
                f"ALFWorld-v0 {name}: reset {reset * 1000:.0f} ms ({reset / off_reset:.2f}x), step {step * 1000:.1f} ms ({step / off_step:.2f}x)"
            )
    ours.close()
    seeded.close()

    if args.rss_resets:
        # "new env per game" is the pattern that leaks (TextWorld#367): a gym env registered
        # and made for each game, as scripts that choose their own game order do.
        for name in ("official, one env", "official, new env per game", "ALFWorld-v0"):
            env = None
            if name == "official, one env":
                env = official_env(files)
            elif name == "ALFWorld-v0":
                env = gym.make("ALFWorld-v0", data_path=data, split="eval_in_distribution")
            rss0, marks = rss_mb(), []
            for i in range(args.rss_resets):
                if name == "official, new env per game":
                    per_game = official_env([files[i % len(files)]])
                    per_game.reset()
                    per_game.close()
                elif name == "official, one env":
                    env.reset()
                else:
                    env.reset(options={"task_id": games[i % len(games)].task_id})
                if (i + 1) % max(1, args.rss_resets // 4) == 0:
                    marks.append(f"{i + 1}: +{rss_mb() - rss0:.0f} MB")
            if env is not None:
                env.close()
            print(f"RSS {name}: " + ", ".join(marks))

    if args.all_walkthroughs:
        env = gym.make("ALFWorld-v0", data_path=data, split="eval_in_distribution", prefetch=False, privileged=True)
        won = 0
        for task_id in env.unwrapped.task_ids:
            _, info = env.reset(options={"task_id": task_id})
            for command in json.loads(Path(info["game_file"]).read_text())["walkthrough"]:
                info = env.step(command)[4]
            won += bool(info["won"])
        print(f"walkthroughs won: {won}/{len(env.unwrapped.task_ids)}")


if __name__ == "__main__":
    main()
