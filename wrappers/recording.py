"""Recording episodes of any agentenvs env as :class:`~agentenvs.core.Trajectory` objects.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = RecordTrajectory(gym.make("SearchQA-v0"), group_id=0)
    >>> _ = env.reset(seed=0)
    >>> _ = env.step("<answer>nobody</answer>")
    >>> trajectory = env.trajectories[-1]
    >>> trajectory.turns[0].action, trajectory.success
    ('<answer>nobody</answer>', False)
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym

from agentenvs.core.trajectory import ActionSpan, Trajectory, Turn, to_json_value


class RecordTrajectory(gym.Wrapper[str, str, str, str]):
    """Turns each episode into a :class:`Trajectory` (kept in :attr:`trajectories`).

    A trajectory is complete when the episode terminates or truncates; an episode
    cut short by ``reset`` is recorded too, marked ``metadata["complete"] = False``.

    Args:
        env: Any env following the agentenvs info contract.
        group_id: Group id written on every trajectory.
        max_kept: Keep at most this many finished trajectories (oldest dropped).
    """

    def __init__(self, env: gym.Env[str, str], group_id: int = 0, max_kept: int | None = None) -> None:
        super().__init__(env)
        self.group_id = group_id
        self.max_kept = max_kept
        self.trajectories: list[Trajectory] = []
        self._current: Trajectory | None = None
        self._observation = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        if self._current is not None and self._current.turns:
            self._finish(complete=False)
        observation, info = self.env.reset(seed=seed, options=options)
        self._observation = observation
        self._current = Trajectory(
            task_id=str(info["task_id"]),
            group_id=self.group_id,
            turns=[],
            success=False,
            score=0.0,
            task=str(info.get("task", "")),
            initial_observation=observation,
            metadata={"env_id": self.env.spec.id if self.env.spec else type(self.env.unwrapped).__name__, "seed": seed},
        )
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, raw_reward, terminated, truncated, info = self.env.step(action)
        reward = float(raw_reward)
        if self._current is None:
            return observation, reward, terminated, truncated, info
        span = info.get("action_span")
        self._current.turns.append(
            Turn(
                observation=self._observation,
                raw_output=action if isinstance(action, str) else repr(action),
                action=str(info.get("action", "")),
                action_span=None if span is None else ActionSpan(int(span[0]), int(span[1])),
                reward=float(reward),
                valid=bool(info.get("action_valid", True)),
                info=cast(dict[str, Any], to_json_value(info)),
            )
        )
        self._observation = observation
        self._current.success = bool(info.get("won", False))
        # The env's outcome is the sum of its rewards; no trainer shaping here, so reward equals it.
        self._current.score = self._current.reward = float(sum(turn.reward for turn in self._current.turns))
        if terminated or truncated:
            self._current.final_observation = observation
            self._current.metadata["truncated"] = bool(truncated)
            self._finish(complete=True)
        return observation, reward, terminated, truncated, info

    def _finish(self, complete: bool) -> None:
        assert self._current is not None
        self._current.metadata["complete"] = complete
        if not complete:
            self._current.final_observation = self._observation
        self.trajectories.append(self._current)
        if self.max_kept is not None and len(self.trajectories) > self.max_kept:
            del self.trajectories[: len(self.trajectories) - self.max_kept]
        self._current = None

    def pop_trajectories(self) -> list[Trajectory]:
        """Returns and forgets the finished trajectories."""
        finished, self.trajectories = self.trajectories, []
        return finished
