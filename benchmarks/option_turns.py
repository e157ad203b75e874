"""WebShop's option turns: how often an agent's option click picks a value the goal asks for.

An option turn is a valid ``click[value]`` taken on a product page (the page the previous turn
left, ``info["page"] == "item"``; ``search`` before the first turn) that is none of the page's
navigation buttons nor ``Buy Now``. Its accuracy is the share of those clicks whose value is one
of the goal's option values (compared case-insensitively, as the env's reward does).

Used by ``benchmarks/credit_learning.py`` (``--preset race``) on the held-out episodes each run
writes, and by ``benchmarks/warm_start_turns.py`` for the names of the non-option buttons.

Example:
    >>> from agentenvs.core.trajectory import Trajectory, Turn
    >>> turns = [Turn("", "", action, None, 0.0, True, {"page": page}) for action, page in
    ...          [("search[red shirt]", "results"), ("click[B01]", "item"), ("click[large]", "item"),
    ...           ("click[Buy Now]", "done")]]
    >>> count_option_clicks([Trajectory("7", 0, turns, True, 1.0)], lambda task_id: ["Large"])
    OptionClicks(clicks=1, right=1)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from agentenvs.core.trajectory import Trajectory, TrajectoryGroup, read_jsonl

BUY = "click[Buy Now]"
NOT_OPTIONS = frozenset(
    {
        "click[Back to Search]",
        "click[< Prev]",
        "click[Next >]",
        "click[Description]",
        "click[Features]",
        "click[Reviews]",
    }
)
"""The product page's buttons that are not option values (``Buy Now`` aside)."""
_CLICK = re.compile(r"click\[(.*)\]", re.DOTALL)
_EVALUATION = re.compile(r"eval_step_(\d+)\.jsonl")


@dataclasses.dataclass(frozen=True)
class OptionClicks:
    """Option clicks counted over some episodes, and how many picked a value the goal asks for."""

    clicks: int
    right: int

    @property
    def accuracy(self) -> float | None:
        """``right / clicks`` (None without clicks)."""
        return self.right / self.clicks if self.clicks else None


def option_values(trajectory: Trajectory) -> list[str]:
    """The values of the option clicks of one episode, in order."""
    values = []
    page = "search"
    for turn in trajectory.turns:
        match = _CLICK.fullmatch(turn.action.strip())
        if turn.valid and page == "item" and match and turn.action not in NOT_OPTIONS and turn.action != BUY:
            values.append(match.group(1))
        page = str(turn.info.get("page", page))
    return values


def count_option_clicks(
    trajectories: Iterable[Trajectory], goal_options: Callable[[str], Collection[str]]
) -> OptionClicks:
    """Option clicks of ``trajectories``; ``goal_options(task_id)`` gives each episode's goal values."""
    clicks = right = 0
    for trajectory in trajectories:
        wanted = {value.lower() for value in goal_options(trajectory.task_id)}
        for value in option_values(trajectory):
            clicks += 1
            right += value.lower() in wanted
    return OptionClicks(clicks, right)


def webshop_goal_options(env_kwargs: dict[str, object]) -> Callable[[str], list[str]]:
    """``task_id -> goal option values`` of the WebShop-v0 that ``env_kwargs`` make."""
    import gymnasium as gym

    import agentenvs  # noqa: F401  (registers the envs)

    env = gym.make("WebShop-v0", **env_kwargs)
    goals = env.unwrapped.goals  # type: ignore[attr-defined]  # WebShopEnv's generated goals
    env.close()

    def options(task_id: str) -> list[str]:
        wanted = goals[int(task_id)].goal_options
        return list(wanted.values() if isinstance(wanted, dict) else wanted)

    return options


def run_option_clicks(run_dir: Path, goal_options: Callable[[str], Collection[str]]) -> dict[int, OptionClicks]:
    """Step -> option clicks of every held-out evaluation a run wrote (``trajectories/eval_step_N.jsonl``)."""
    counts = {}
    for path in sorted((run_dir / "trajectories").glob("eval_step_*.jsonl")):
        match = _EVALUATION.fullmatch(path.name)
        if match:
            episodes = [
                episode
                for record in read_jsonl(path)
                for episode in (record.trajectories if isinstance(record, TrajectoryGroup) else [record])
            ]
            counts[int(match.group(1))] = count_option_clicks(episodes, goal_options)
    return counts
