"""``python -m agentenvs play``: a person plays an env in the terminal (a number from the list, or free text)."""

from __future__ import annotations

import re

from agentenvs.cli.args import PlayArgs, UsageError, make_env
from agentenvs.core.env import TextEnv

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


def play(args: PlayArgs) -> int:
    """A person plays: each turn shows the observation and the numbered admissible actions."""
    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    env = make_env(args)
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
            except ValueError as error:  # an unknown task id, named
                raise UsageError(str(error)) from None
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
