"""The current policy playing on from turn starts, in lockstep batches: VinePPO's Monte Carlo returns.

:class:`ContinuationRunner` puts one env per start at its state (:func:`~agents.reference.starts.put_at`),
then, as the collector does in ``rollout_mode="per_turn"``, builds each running env's prompt from
the task, the history the policy saw and the observation (the same :class:`~agentenvs.core.prompts.PromptBuilder`),
samples all of them in one ``policy.generate`` call and steps, until every play has ended (the
env's own turn limit, restored with the state, ends it). A play's return is the sum of its
turns' training rewards (:func:`~agents.rollout.turn_reward`: the env's, minus
``invalid_action_penalty`` per invalid turn, plus ``success_bonus`` on the winning one), as the
collector counts a trajectory's reward. Starts beyond ``width`` are played in further batches.

Example:
    >>> runner = ContinuationRunner(policy, "SearchQA-v0", width=16)     # doctest: +SKIP
    >>> runner.returns(turn_starts(batch)[:4])                            # doctest: +SKIP
    [0.0, 1.0, 1.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentenvs.core.checks import check_int
from agentenvs.core.prompts import PromptBuilder, history_action
from agentenvs.core.trajectory import to_json_value
from agents.reference.starts import EnvPool, TurnStart, put_at
from agents.rollout import turn_reward


class ContinuationRunner:
    """Plays a policy on from turn starts; one return per start (see the module docstring).

    Args:
        policy: Has ``generate(prompts, *, greedy, stop)`` (the policy being trained).
        env_id: The batch's env id.
        env_kwargs: The collector's env keywords.
        prompt_builder: The collector's prompt builder (default ``PromptBuilder()``).
        invalid_action_penalty: Subtracted from a play's return per invalid turn.
        success_bonus: Added to the reward of a play's winning turn (the collector's).
        width: Envs played at once (one ``generate`` call per turn over them).
        greedy: Decode greedily (default: sample, as training collection does).
    """

    def __init__(
        self,
        policy: Any,
        env_id: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        prompt_builder: PromptBuilder | None = None,
        invalid_action_penalty: float = 0.0,
        success_bonus: float = 0.0,
        width: int = 16,
        greedy: bool = False,
    ) -> None:
        self.policy = policy
        self.pool = EnvPool(env_id, env_kwargs)
        self.prompt_builder = prompt_builder or PromptBuilder()
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.success_bonus = float(success_bonus)
        self.width = check_int("ContinuationRunner", "width", width, minimum=1)
        self.greedy = bool(greedy)

    def returns(self, starts: Sequence[TurnStart]) -> list[float]:
        """The return of one play of the policy from each start, in order."""
        results: list[float] = []
        for first in range(0, len(starts), self.width):
            results += self._play(starts[first : first + self.width])
        return results

    def _play(self, starts: Sequence[TurnStart]) -> list[float]:
        envs = self.pool.take(starts)
        placed = [put_at(env, start) for env, start in zip(envs, starts, strict=True)]
        observations = [observation for observation, _ in placed]
        infos = [info for _, info in placed]
        histories = [list(start.history) for start in starts]
        action_format = str(envs[0].get_wrapper_attr("action_format"))
        max_turns = int(envs[0].get_wrapper_attr("max_turns"))
        stop = self.prompt_builder.stop_strings(action_format)
        totals = [0.0] * len(starts)
        done = [False] * len(starts)
        for _ in range(max_turns):  # each env ends within its own limit; this bounds a broken one
            running = [i for i in range(len(starts)) if not done[i]]
            if not running:
                break
            prompts = [
                self.prompt_builder.build(
                    task=str(infos[i].get("task", "")),
                    observation=observations[i],
                    history=histories[i],
                    admissible_actions=infos[i].get("admissible_actions"),
                    action_format=action_format,
                )
                for i in running
            ]
            generations = self.policy.generate(prompts, greedy=self.greedy, stop=stop)
            for i, generation in zip(running, generations, strict=True):
                observation, reward, terminated, truncated, raw_info = envs[i].step(generation.text)
                info = dict(to_json_value(raw_info))  # type: ignore[arg-type]
                totals[i] += turn_reward(
                    float(reward),
                    info,
                    invalid_action_penalty=self.invalid_action_penalty,
                    success_bonus=self.success_bonus,
                )
                histories[i].append((observations[i], history_action(generation.text, info)))
                observations[i], infos[i] = str(observation), info
                done[i] = bool(terminated or truncated)
        return totals

    def close(self) -> None:
        """Closes the envs."""
        self.pool.close()
