"""The rollout data model: action spans, turns, trajectories and trajectory groups.

Everything here is plain data that round-trips through JSON lines without loss, so
rollouts can be stored, inspected and replayed. Text stays in Python strings (never
fixed-width numpy arrays, which truncate).

Example:
    >>> span = ActionSpan(start=21, end=30)
    >>> turn = Turn(observation="Question: ...", raw_output="<think>x</think><search>who won</search>",
    ...             action="<search>who won</search>", action_span=span, reward=0.0, valid=True)
    >>> traj = Trajectory(task_id="q1", group_id=0, turns=[turn], success=False, score=0.0)
    >>> Trajectory.from_dict(traj.to_dict()) == traj
    True
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.core.privileged import privileged_of

JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]


def to_json_value(value: Any) -> JSONValue:
    """Converts numpy scalars/arrays, tuples and nested containers to JSON values.

    Raises:
        TypeError: for objects with no JSON form (the message names the type).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return [to_json_value(item) for item in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [to_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json_value(item) for key, item in value.items()}
    if hasattr(value, "to_dict"):
        return to_json_value(value.to_dict())
    raise TypeError(f"cannot store a {type(value).__name__} in a trajectory (not JSON-serialisable)")


@dataclass(frozen=True)
class ActionSpan:
    """Where the executable action lies inside a model's raw output.

    Attributes:
        start: Character offset of the action's first character in the raw output.
        end: Character offset one past the action's last character.
        token_start: Index of the first response token overlapping the action
            (filled by the agent side once the output is tokenised).
        token_end: One past the last response token overlapping the action.
    """

    start: int
    end: int
    token_start: int | None = None
    token_end: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"ActionSpan needs 0 <= start <= end, got start={self.start}, end={self.end}")
        if (self.token_start is None) != (self.token_end is None):
            raise ValueError("ActionSpan token_start and token_end must be set together")
        if self.token_start is not None and self.token_end is not None and not 0 <= self.token_start <= self.token_end:
            raise ValueError(
                f"ActionSpan needs 0 <= token_start <= token_end, got {self.token_start}, {self.token_end}"
            )

    def text_of(self, raw_output: str) -> str:
        """The action's characters in ``raw_output``."""
        return raw_output[self.start : self.end]

    def with_tokens(self, token_start: int, token_end: int) -> ActionSpan:
        """A copy with token offsets filled in."""
        return ActionSpan(self.start, self.end, token_start, token_end)

    def to_dict(self) -> dict[str, int | None]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ActionSpan | None:
        return None if data is None else cls(**data)


@dataclass
class Turn:
    """One agent step: what it saw, what it wrote, what ran, what came back.

    Attributes:
        observation: The observation the agent acted on.
        raw_output: The model's full output for this turn.
        action: The executable action parsed from ``raw_output`` ("" if none).
        action_span: Where ``action`` lies in ``raw_output`` (None if invalid).
        reward: Reward the env returned for this step.
        valid: Whether the env accepted the action.
        info: The env's info for this step, as JSON values (it describes the state
            after the action: the next observation's admissible actions, privileged
            information, ...).
    """

    observation: str
    raw_output: str
    action: str
    action_span: ActionSpan | None
    reward: float
    valid: bool
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def privileged(self) -> dict[str, Any] | None:
        """The env's privileged information of this step, ``info["privileged"]`` (None when absent).

        What the env knew and the agent did not see (gold answers, the target product,
        the expert plan, ...; each env documents its schema): the PI a credit rule may
        condition on. Like the rest of :attr:`info` it is as of after the action (ALFWorld's
        remaining expert plan starts at the next command), so the PI the agent's decision
        at turn ``i`` was taken under is turn ``i - 1``'s (the reset info's for turn 0).
        """
        return privileged_of(self.info)

    def to_dict(self) -> dict[str, Any]:
        return {
            "observation": self.observation,
            "raw_output": self.raw_output,
            "action": self.action,
            "action_span": None if self.action_span is None else self.action_span.to_dict(),
            "reward": float(self.reward),
            "valid": bool(self.valid),
            "info": to_json_value(self.info),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        return cls(
            observation=data["observation"],
            raw_output=data["raw_output"],
            action=data["action"],
            action_span=ActionSpan.from_dict(data.get("action_span")),
            reward=float(data["reward"]),
            valid=bool(data["valid"]),
            info=dict(data.get("info", {})),
        )


@dataclass
class Trajectory:
    """One episode of one task.

    Attributes:
        task_id: The task the episode played.
        group_id: Index of the trajectory group the episode belongs to.
        turns: The steps, in order.
        success: Whether the task was won.
        score: The episode's outcome as the env scores it (the sum of the env's rewards unless the
            env says otherwise).
        task: The task text (instruction or question).
        initial_observation: The observation returned by ``reset``.
        final_observation: The observation after the last step.
        metadata: Free-form JSON values (env id, seed, truncation, ...).
        reward: The return a trainer optimises: ``score`` less its shaping (the collector
            subtracts ``invalid_action_penalty`` per invalid turn). Equal to ``score`` when not given (NaN).
        initial_privileged: The env's ``info["privileged"]`` at ``reset`` (each ``Turn.info`` holds
            it as of after that turn's action), or None where the env gives none.

    Names: ``success`` is the env's ``info["won"]`` at the episode's end; ``score`` the env's
    outcome; ``reward`` the trainer's return. Nothing else names these three.
    """

    task_id: str
    group_id: int
    turns: list[Turn]
    success: bool
    score: float
    task: str = ""
    initial_observation: str = ""
    final_observation: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    reward: float = math.nan
    initial_privileged: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if math.isnan(self.reward):  # not given: no shaping
            self.reward = float(self.score)

    def __len__(self) -> int:
        return len(self.turns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "group_id": int(self.group_id),
            "turns": [turn.to_dict() for turn in self.turns],
            "success": bool(self.success),
            "score": float(self.score),
            "task": self.task,
            "initial_observation": self.initial_observation,
            "final_observation": self.final_observation,
            "metadata": to_json_value(self.metadata),
            "reward": float(self.reward),
            "initial_privileged": to_json_value(self.initial_privileged),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        return cls(
            task_id=data["task_id"],
            group_id=int(data["group_id"]),
            turns=[Turn.from_dict(turn) for turn in data["turns"]],
            success=bool(data["success"]),
            score=float(data["score"]),
            task=data.get("task", ""),
            initial_observation=data.get("initial_observation", ""),
            final_observation=data.get("final_observation", ""),
            metadata=dict(data.get("metadata", {})),
            reward=float(data.get("reward", math.nan)),
            initial_privileged=data.get("initial_privileged"),
        )


@dataclass
class TrajectoryGroup:
    """G rollouts of the same task (the unit GRPO-style credit is computed over).

    Raises:
        ValueError: if a member trajectory belongs to another task or group.
    """

    task_id: str
    group_id: int
    trajectories: list[Trajectory]

    def __post_init__(self) -> None:
        for index, trajectory in enumerate(self.trajectories):
            if trajectory.task_id != self.task_id:
                raise ValueError(
                    f"trajectory {index} has task_id {trajectory.task_id!r}, group {self.group_id} "
                    f"is for task {self.task_id!r}"
                )
            if trajectory.group_id != self.group_id:
                raise ValueError(f"trajectory {index} has group_id {trajectory.group_id}, expected {self.group_id}")

    def __len__(self) -> int:
        return len(self.trajectories)

    def __iter__(self) -> Iterator[Trajectory]:
        return iter(self.trajectories)

    @property
    def success_rate(self) -> float:
        if not self.trajectories:
            return math.nan
        return sum(t.success for t in self.trajectories) / len(self.trajectories)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "group_id": int(self.group_id),
            "trajectories": [t.to_dict() for t in self.trajectories],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrajectoryGroup:
        return cls(
            task_id=data["task_id"],
            group_id=int(data["group_id"]),
            trajectories=[Trajectory.from_dict(t) for t in data["trajectories"]],
        )


Record = Trajectory | TrajectoryGroup


def write_jsonl(path: str | Path, records: Iterable[Record]) -> int:
    """Writes trajectories or groups to a JSON-lines file; returns how many were written."""
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(), ensure_ascii=False, allow_nan=True))
            handle.write("\n")
            count += 1
    return count


def read_jsonl(path: str | Path) -> list[Record]:
    """Reads what :func:`write_jsonl` wrote (each line a Trajectory or a TrajectoryGroup)."""
    records: list[Record] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not valid JSON ({error.msg})") from error
            records.append(TrajectoryGroup.from_dict(data) if "trajectories" in data else Trajectory.from_dict(data))
    return records
