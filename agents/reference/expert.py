"""The env's expert playing on from turn starts: the returns behind QVal-style Q^E, V^E and A^E.

From a start the expert (``env.unwrapped.expert_action()``, written in the env's action format)
acts until the episode ends or it has no action (``None``: then the return is what it reached).
With :func:`~agents.reference.values.step_values` (one sample: the expert is deterministic) this
gives V^E(s_t), Q^E(s_t, a_t) = r_t + V^E(s_{t+1}) and A^E = Q^E − V^E (≤ 0 where the expert
is optimal; 0 for the expert's own action).

Example:
    >>> values = step_values(batch, ExpertPlayer("WebShop-v0"))            # doctest: +SKIP
    >>> values.advantages                                                  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentenvs.core.actions import render_action
from agents.reference.starts import EnvPool, TurnStart, put_at
from agents.rollout import turn_reward


class ExpertPlayer:
    """Plays the env's expert from turn starts, one env at a time (see the module docstring).

    Args:
        env_id: The batch's env id.
        env_kwargs: The collector's env keywords.
        invalid_action_penalty: Subtracted per invalid expert turn (as the collector counts).
        success_bonus: Added to the reward of the winning turn (as the collector counts).
    """

    def __init__(
        self,
        env_id: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        invalid_action_penalty: float = 0.0,
        success_bonus: float = 0.0,
    ) -> None:
        self.pool = EnvPool(env_id, env_kwargs)
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.success_bonus = float(success_bonus)

    def returns(self, starts: Sequence[TurnStart]) -> list[float]:
        """The expert's return from each start, in order."""
        return [self._play(start) for start in starts]

    def _play(self, start: TurnStart) -> float:
        (env,) = self.pool.take([start])
        put_at(env, start)
        action_format = str(env.get_wrapper_attr("action_format"))
        max_turns = int(env.get_wrapper_attr("max_turns"))
        total = 0.0
        for _ in range(max_turns):
            action = env.get_wrapper_attr("expert_action")()
            if action is None:
                break
            _, reward, terminated, truncated, info = env.step(render_action(action, action_format))
            total += turn_reward(
                float(reward),
                info,
                invalid_action_penalty=self.invalid_action_penalty,
                success_bonus=self.success_bonus,
            )
            if terminated or truncated:
                break
        return total

    def close(self) -> None:
        """Closes the env."""
        self.pool.close()
