"""The collector: a policy plays ``num_groups × group_size`` envs in lockstep.

Each turn the prompts of all still-running envs are generated in one batch; the
env projects each raw response onto an action (its info reports ``action``,
``action_span``, ``action_valid``), steps, and the loop ends when every episode
is done. The result is a :class:`~agents.rollout.RolloutBatch`: the trajectory
groups (text, infos, action spans with token offsets) and the per-turn tensors
the update needs.

Two rollout modes:

- ``"per_turn"``: every turn's prompt is built afresh (task, recent history, observation) and
  sampled on its own;
- ``"conversation"``: one chat per episode that grows turn by turn: the first prompt, the
  response, then as the next user message only the new observation (with the admissible
  actions and the format line, as the prompt builder renders a turn, but no history), and so
  on. The policy's :meth:`~agents.policy.transformers_policy.TransformersPolicy.conversations`
  sampler keeps the KV cache across turns and encodes only the new tokens. Rows stay per turn
  (each prompt is the conversation before it), so credit rules see the same batch either way.

Example:
    >>> from agents.policy import TransformersPolicy                                    # doctest: +SKIP
    >>> collector = Collector(TransformersPolicy("tiny-random-qwen3"),
    ...                       "SearchQA-v0", num_groups=2, group_size=2)               # doctest: +SKIP
    >>> batch, stats = collector.collect(seed=0)                                        # doctest: +SKIP
    >>> len(batch.groups), len(batch.trajectories)                                      # doctest: +SKIP
    (2, 4)
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol, cast, runtime_checkable

import numpy as np
from gymnasium.wrappers.vector import DictInfoToList

from agentenvs.core.groups import make_group_vec
from agentenvs.core.privileged import privileged_of
from agentenvs.core.prompts import PromptBuilder, history_action
from agentenvs.core.ray_vector import WORKER_ERROR_KEY
from agentenvs.core.registration import with_privileged
from agentenvs.core.trajectory import ActionSpan, Trajectory, TrajectoryGroup, Turn, to_json_value
from agents.policy.protocol import Policy
from agents.rollout import RolloutBatch, RolloutRow, turn_reward

ROLLOUT_MODES: tuple[str, ...] = ("per_turn", "conversation")


@dataclass
class CollectStats:
    """Summary of one collection.

    Attributes:
        success_rate: Share of trajectories that won.
        mean_score: Mean env score (sum of env rewards) per trajectory.
        mean_reward: Mean outcome reward R (the sum of a trajectory's turn rewards: score, minus invalid-action
            penalties, plus any success bonus).
        mean_episode_length: Mean turns per trajectory.
        invalid_rate: Share of turns whose action was invalid.
        mean_response_tokens: Mean response length in tokens.
        generated_tokens: Response tokens sampled.
        prompt_tokens: Prompt tokens fed (in conversation mode only each turn's new ones).
        seconds: Wall time of the collection.
        failed_episodes: Trajectories cut short because their env worker died (``vectorization_mode="ray"``).
    """

    success_rate: float
    mean_score: float
    mean_reward: float
    mean_episode_length: float
    invalid_rate: float
    mean_response_tokens: float
    generated_tokens: int
    prompt_tokens: int
    seconds: float
    failed_episodes: int = 0

    @classmethod
    def of(cls, batch: RolloutBatch, *, generated_tokens: int, prompt_tokens: int, seconds: float) -> CollectStats:
        """The summary of a collection's batch (one collector's, or merged shards')."""
        trajectories = batch.trajectories
        turns = max(len(batch), 1)
        return cls(
            success_rate=float(np.mean([t.success for t in trajectories])),
            mean_score=float(np.mean([t.score for t in trajectories])),
            mean_reward=float(np.mean([t.reward for t in trajectories])),
            mean_episode_length=float(np.mean([len(t) for t in trajectories])),
            invalid_rate=int((~batch.turn_valid).sum()) / turns,
            mean_response_tokens=generated_tokens / turns,
            generated_tokens=generated_tokens,
            prompt_tokens=prompt_tokens,
            seconds=seconds,
            failed_episodes=sum(WORKER_ERROR_KEY in t.metadata for t in trajectories),
        )

    def to_dict(self, prefix: str = "") -> dict[str, float]:
        return {f"{prefix}{key}": float(value) for key, value in vars(self).items()}


def _json_info(info: dict[str, Any]) -> dict[str, Any]:
    """A member's info as JSON values (numpy scalars as Python ones, at any depth), as ``Turn.info``
    holds it everywhere (``wrappers.RecordTrajectory`` stores the same form)."""
    return cast(dict[str, Any], to_json_value(info))


class Collection(NamedTuple):
    """What :meth:`Collector.collect` returns: the batch and its summary."""

    batch: RolloutBatch
    stats: CollectStats


@runtime_checkable
class TrainingCollector(Protocol):
    """What the trainer collects with: :class:`Collector` (this process) or
    :class:`~agents.collection.workers.RolloutWorkers` (Ray actors with policy copies)."""

    @property
    def task_ids(self) -> Sequence[str]:
        """The training tasks, one of which each group plays."""
        ...

    @property
    def shares_policy_caches(self) -> bool:
        """Whether the trained policy's prompt-KV store sees this collector's prefills (it runs
        in this process), so a credit rule can score on top of them."""
        ...

    def collect_on_policy(
        self, task_ids: Sequence[str], *, seed: int, policy: Policy, keep_trunk_hiddens: bool
    ) -> Collection:
        """Plays one episode per member with the current weights of ``policy`` (the policy being
        trained), sampling from its generator; rows carry trunk states when ``keep_trunk_hiddens``."""
        ...

    def close(self) -> None:
        """Releases the envs (and workers)."""
        ...


class Collector:
    """Runs a policy on groups of envs and records what the update needs.

    Args:
        policy: A policy with ``generate(prompts, *, greedy, stop)`` (e.g. ``TransformersPolicy``).
        env_id: A registered env id.
        num_groups: Tasks per collection.
        group_size: Rollouts per task.
        prompt_builder: Builds each turn's prompt (default: ``PromptBuilder()``).
        invalid_action_penalty: Subtracted from the reward of each invalid turn.
        success_bonus: Added to the reward of the turn that wins an episode (``info["won"]``),
            so the training reward tells a win from a near miss (WebShop scores a product
            bought without its option ~0.8, a win 1.0). Trajectories' ``score`` stays the env's.
        env_kwargs: Passed to every env, with ``privileged=True`` where the env takes it and
            they do not say (:func:`~agentenvs.core.registration.with_privileged`): the
            recorded turns carry ``info["privileged"]`` for credit rules and the viewer; the
            policy's prompts never show it.
        vectorization_mode: ``"sync"``, ``"async"`` or ``"ray"`` (env workers in Ray actors).
        num_workers: Ray env workers (``"ray"`` only; None: one per group).
        progress: Show a progress bar over turns (with the episodes still running).
        description: The bar's label (default ``"collect <env_id>"``; evaluations say ``"evaluate"``).
        rollout_mode: ``"per_turn"`` or ``"conversation"`` (see the module docstring; the
            policy then needs ``conversations()``).
        record_snapshots: Record every turn's env state before it acts (``env.unwrapped.snapshot()``,
            through the vector env's ``call``) in :attr:`RolloutRow.snapshot`, for credit rules that
            play on from turn states (``credit="vine"``). Every trajectory's ``metadata["seed"]``
            (its reset seed) is recorded either way, so its states can also be replayed from reset.
    """

    def __init__(
        self,
        policy: Any,
        env_id: str,
        *,
        num_groups: int,
        group_size: int,
        prompt_builder: PromptBuilder | None = None,
        invalid_action_penalty: float = 0.0,
        success_bonus: float = 0.0,
        env_kwargs: dict[str, Any] | None = None,
        vectorization_mode: Literal["sync", "async", "ray"] = "sync",
        progress: bool = False,
        rollout_mode: str = "per_turn",
        num_workers: int | None = None,
        description: str | None = None,
        record_snapshots: bool = False,
    ) -> None:
        if rollout_mode not in ROLLOUT_MODES:
            raise ValueError(f"rollout_mode must be one of {ROLLOUT_MODES}, got {rollout_mode!r}")
        self.rollout_mode = rollout_mode
        self.record_snapshots = bool(record_snapshots)
        self.policy = policy
        self.env_id = env_id
        self.groups = make_group_vec(
            env_id,
            num_groups,
            group_size,
            vectorization_mode=vectorization_mode,
            num_workers=num_workers,
            **with_privileged(env_id, env_kwargs or {}),
        )
        # Per-member info dicts, however deeply an env nests its info (WebShop's reward parts).
        self.envs = DictInfoToList(self.groups)
        self.num_groups, self.group_size = num_groups, group_size
        self.prompt_builder = prompt_builder or PromptBuilder()
        # A later turn of a conversation: the observation, actions and format line, no preamble or history.
        self.turn_builder = dataclasses.replace(self.prompt_builder, preamble="", history_length=0)
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.success_bonus = float(success_bonus)
        self.progress = progress
        self.description = description or f"collect {env_id}"
        vector = self.groups.env  # the Sync/AsyncVectorEnv under the group wrapper
        self.action_format: str = vector.get_attr("action_format")[0]
        self.max_turns: int = int(vector.get_attr("max_turns")[0])
        self.task_ids: tuple[str, ...] = tuple(vector.get_attr("task_ids")[0])
        self.stop = self.prompt_builder.stop_strings(self.action_format)

    def close(self) -> None:
        self.envs.close()

    @property
    def shares_policy_caches(self) -> bool:
        """True: this collector's policy is the trained one, in this process."""
        return True

    def collect_on_policy(
        self, task_ids: Sequence[str], *, seed: int, policy: Policy, keep_trunk_hiddens: bool
    ) -> Collection:
        """:meth:`collect` with the trained policy, which must be this collector's own."""
        if policy is not self.policy:
            raise ValueError("Collector.collect_on_policy: the policy must be the one this collector plays")
        with policy.keeping_trunk_hiddens(keep_trunk_hiddens):
            return self.collect(task_ids, seed=seed)

    def collect(
        self,
        task_ids: Sequence[str] | None = None,
        *,
        seed: int | None = None,
        greedy: bool = False,
        group_seeds: Sequence[int] | None = None,
    ) -> Collection:
        """Plays one episode in every env; returns the batch and its stats.

        Args:
            task_ids: One task per group (None: drawn by the envs from ``seed``).
            seed: Seeds the group envs' task/seed draw.
            greedy: Decode greedily (evaluation).
            group_seeds: One env seed per group instead of drawing them from ``seed`` (a shard
                of a larger collection plays its groups' seeds).
        """
        from tqdm.auto import tqdm

        start_time = time.perf_counter()
        options: dict[str, Any] | None = None if task_ids is None else {"task_ids": list(task_ids)}
        if group_seeds is not None:
            options = {**(options or {}), "group_seeds": [int(s) for s in group_seeds]}
        observations, reset_infos = self.envs.reset(seed=seed, options=options)
        count = self.num_groups * self.group_size
        infos = [_json_info(info) for info in reset_infos]
        observations = list(observations)
        initial = list(observations)
        # The env's PI as the first action was chosen (Turn.info holds it as of after each action);
        # credit rules that read env PI (agents.algorithms.privileged.environment) take it from here.
        initial_privileged = [privileged_of(info) for info in infos]
        history: list[list[tuple[str, str]]] = [[] for _ in range(count)]
        turns: list[list[Turn]] = [[] for _ in range(count)]
        pending: list[list[RolloutRow]] = [[] for _ in range(count)]
        done = [False] * count
        generated = prompt_tokens = 0
        conversation = self.policy.conversations() if self.rollout_mode == "conversation" else None
        fed = [0] * count  # conversation tokens each member's chat held before this turn
        bar = tqdm(total=self.max_turns, desc=self.description, unit="turn", leave=False, disable=not self.progress)
        for turn_index in range(self.max_turns):
            running = [i for i in range(count) if not done[i]]
            if not running:
                break
            builder = self.turn_builder if conversation is not None and turn_index > 0 else self.prompt_builder
            prompts = [
                builder.build(
                    task="" if builder is self.turn_builder else str(infos[i].get("task", "")),
                    observation=observations[i],
                    history=history[i],
                    admissible_actions=infos[i].get("admissible_actions"),
                    action_format=self.action_format,
                )
                for i in running
            ]
            if conversation is not None:
                generations = conversation.generate(running, prompts, greedy=greedy, stop=self.stop)
            else:
                generations = self.policy.generate(prompts, greedy=greedy, stop=self.stop)
            actions = [""] * count
            for i, generation in zip(running, generations, strict=True):
                actions[i] = generation.text
            snapshots = self.groups.env.call("snapshot") if self.record_snapshots else (None,) * count
            next_observations, rewards, terminated, truncated, step_infos = self.envs.step(actions)
            for i, generation in zip(running, generations, strict=True):
                member = _json_info(step_infos[i])
                valid = bool(member.get("action_valid", False))
                span = member.get("action_span")
                action_span = None
                token_span = None
                if valid and span is not None:
                    start, end = (
                        (span["start"], span["end"]) if isinstance(span, dict) else (int(span[0]), int(span[1]))
                    )
                    token_span = generation.token_span(start, end)
                    action_span = ActionSpan(start, end).with_tokens(*token_span)
                env_reward = float(rewards[i])
                turns[i].append(
                    Turn(
                        observation=observations[i],
                        raw_output=generation.text,
                        action=str(member.get("action", "")),
                        action_span=action_span,
                        reward=env_reward,
                        valid=valid,
                        info=member,
                    )
                )
                pending[i].append(
                    RolloutRow(
                        prompt=generation.prompt,
                        prompt_ids=generation.prompt_ids,
                        response_ids=generation.response_ids,
                        logprobs=generation.logprobs,
                        action_token_span=token_span,
                        trajectory_index=i,
                        turn_index=turn_index,
                        group_id=int(self.groups.group_ids[i]),
                        reward=turn_reward(
                            env_reward,
                            member,
                            invalid_action_penalty=self.invalid_action_penalty,
                            success_bonus=self.success_bonus,
                        ),
                        valid=valid,
                        trunk_hiddens=generation.trunk_hiddens,
                        snapshot=snapshots[i],
                    )
                )
                history[i].append((observations[i], history_action(generation.text, member)))
                observations[i] = str(next_observations[i])
                infos[i] = member
                generated += len(generation.response_ids)
                prompt_tokens += len(generation.prompt_ids) - fed[i]
                if conversation is not None:  # the next turn's prompt starts with this one's tokens
                    fed[i] = len(generation.prompt_ids) + len(generation.response_ids)
                done[i] = bool(terminated[i] or truncated[i])
            bar.update(1)
            bar.set_postfix(running=sum(not d for d in done))
        bar.close()

        trajectories = []
        known = self.groups.last_group_seeds
        reset_seeds: list[int | None] = [None] * self.num_groups if known is None else list(known)
        for i in range(count):
            score = float(sum(turn.reward for turn in turns[i]))
            invalid = sum(not turn.valid for turn in turns[i])
            trajectories.append(
                Trajectory(
                    task_id=str(infos[i].get("task_id", "")),
                    group_id=int(self.groups.group_ids[i]),
                    turns=turns[i],
                    success=bool(infos[i].get("won", False)),
                    score=score,
                    task=str(infos[i].get("task", "")),
                    initial_observation=initial[i],
                    final_observation=observations[i],
                    metadata={
                        "env_id": self.env_id,
                        "seed": reset_seeds[int(self.groups.group_ids[i])],
                        "invalid_turns": invalid,
                        "truncated": not bool(infos[i].get("won", False)) and len(turns[i]) >= self.max_turns,
                        **({WORKER_ERROR_KEY: infos[i][WORKER_ERROR_KEY]} if WORKER_ERROR_KEY in infos[i] else {}),
                    },
                    reward=math.fsum(row.reward for row in pending[i]),  # the turns' training rewards (turn_reward)
                    initial_privileged=initial_privileged[i],
                )
            )
        groups = [
            TrajectoryGroup(trajectories[block][0].task_id, g, trajectories[block])
            for g, block in enumerate(self.groups.group_slices())
        ]
        if conversation is not None:
            _share_trunk_hiddens(pending)
        rows = [row for member_rows in pending for row in member_rows]
        batch = RolloutBatch.from_groups(rows, groups, pad_token_id=self.policy.pad_token_id)
        stats = CollectStats.of(
            batch,
            generated_tokens=generated,
            prompt_tokens=prompt_tokens,
            seconds=time.perf_counter() - start_time,
        )
        return Collection(batch, stats)


def _share_trunk_hiddens(pending: list[list[RolloutRow]]) -> None:
    """In a conversation each turn's kept trunk states begin the next turn's: keep one copy, as views."""
    for member_rows in pending:
        last = member_rows[-1].trunk_hiddens if member_rows else None
        if last is None:
            continue
        for row in member_rows[:-1]:
            if row.trunk_hiddens is not None and row.trunk_hiddens.shape[0] <= last.shape[0]:
                row.trunk_hiddens = last[: row.trunk_hiddens.shape[0]]
