"""Rollout workers on Ray: N actors, each with a copy of the policy, play shards of the groups.

:class:`RolloutWorkers` starts ``num_workers`` Ray actors (:class:`RolloutWorker`). Each builds
its own policy with the same ``policy_factory`` (the same model and settings as the trainer's)
and a :class:`~agents.collection.collector.Collector` for its shard of the groups (whole groups, in order:
:func:`~agentenvs.core.ray_vector.group_shards`). Before a collection the trainer's trainable weights (the LoRA adapter, or
all weights) are put once in Ray's object store and every worker loads them, so the workers
sample from the policy being trained. The group seeds are drawn here, as one collector draws
them, and each shard plays its groups' seeds; the shards' collections are gathered in shard
order and merged (:func:`~agents.collection.merge.merge_collections`): greedy decoding gives the
batch one process gives (tested, token ids compared). Sampling draws from each worker's
generator, reseeded per collection from ``sample_seed`` and the worker's index.

On a cluster the same code runs unchanged once the driver has called
``ray.init(address="auto")`` (see ``docs/scaling.md``): the actors are placed on any
node with a free CPU (``num_cpus``), or a GPU with ``num_gpus``.

Example:
    >>> import functools                                                                 # doctest: +SKIP
    >>> from agents.agent import build_policy                                            # doctest: +SKIP
    >>> workers = RolloutWorkers(functools.partial(build_policy, "tiny-random-qwen3", GRPOConfig()),
    ...                          "SearchQA-v0", num_workers=2, num_groups=4, group_size=2)  # doctest: +SKIP
    >>> batch, stats = workers.collect(seed=0, weights=policy.trainable_state_dict())    # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from agentenvs.core.groups import draw_group_seeds
from agentenvs.core.ray_vector import group_shards, import_ray, stop_actors
from agents.collection.collector import Collection, Collector
from agents.collection.merge import merge_collections
from agents.policy.protocol import Policy


class RolloutWorker:
    """One shard's policy copy and collector, in one Ray actor (:class:`RolloutWorkers` makes it remote).

    Args:
        policy_factory: Builds the policy (a picklable callable, e.g. ``functools.partial(build_policy, ...)``).
        env_id: A registered env id.
        num_groups: The shard's groups.
        group_size: Rollouts per group.
        collector_options: Other :class:`~agents.collection.collector.Collector` arguments (prompt builder, penalty, ...).
    """

    def __init__(
        self,
        policy_factory: Callable[[], Any],
        env_id: str,
        num_groups: int,
        group_size: int,
        collector_options: dict[str, Any],
    ) -> None:
        self.policy = policy_factory()
        self.collector = Collector(
            self.policy, env_id, num_groups=num_groups, group_size=group_size, **collector_options
        )

    def task_ids(self) -> tuple[str, ...]:
        return self.collector.task_ids

    def load_weights(self, state: dict[str, torch.Tensor]) -> None:
        """Loads the trainer's trainable weights (Ray resolves the object-store reference)."""
        self.policy.load_trainable_state_dict(state)

    def collect(
        self,
        task_ids: Sequence[str] | None,
        group_seeds: Sequence[int],
        greedy: bool,
        sample_seed: int | None,
        keep_trunk_hiddens: bool,
    ) -> Collection:
        """Plays the shard's groups with the given seeds (see :meth:`Collector.collect`)."""
        if sample_seed is not None:
            self.policy.generator.manual_seed(sample_seed)
        with self.policy.keeping_trunk_hiddens(keep_trunk_hiddens):
            return self.collector.collect(task_ids, greedy=greedy, group_seeds=group_seeds)

    def close(self) -> None:
        self.collector.close()


class RolloutWorkers:
    """``num_workers`` Ray actors playing shards of ``num_groups`` groups (see the module docstring).

    Args:
        policy_factory: Builds each worker's policy (picklable; the same model and settings as the trainer's).
        env_id: A registered env id.
        num_workers: Ray actors (at most ``num_groups``).
        num_groups: Tasks per collection.
        group_size: Rollouts per task.
        seed: Seeds the group-seed draw when ``collect`` gets no seed.
        num_cpus: CPUs Ray reserves for each worker.
        num_gpus: GPUs Ray reserves for each worker (its policy's device must then be ``"cuda"``).
        pad_token_id: Pads the merged batch (the policy's).
        start_timeout_s: How long the workers may take to start (Ray waits for free resources; models load).
        **collector_options: Other :class:`~agents.collection.collector.Collector` arguments.
    """

    def __init__(
        self,
        policy_factory: Callable[[], Any],
        env_id: str,
        *,
        num_workers: int,
        num_groups: int,
        group_size: int,
        seed: int | None = None,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        pad_token_id: int = 0,
        start_timeout_s: float = 600.0,
        **collector_options: Any,
    ) -> None:
        ray = import_ray()
        self.shards = group_shards(num_groups, num_workers)
        self.num_groups, self.group_size = num_groups, group_size
        self.pad_token_id = pad_token_id
        self._rng = np.random.default_rng(seed)
        remote = ray.remote(RolloutWorker).options(num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=0)
        self.workers = [
            remote.remote(policy_factory, env_id, len(shard), group_size, collector_options) for shard in self.shards
        ]
        try:
            self.task_ids: tuple[str, ...] = ray.get(
                [worker.task_ids.remote() for worker in self.workers], timeout=start_timeout_s
            )[0]
        except ray.exceptions.GetTimeoutError:  # e.g. not enough free CPUs or GPUs: say so rather than wait forever
            for worker in self.workers:
                ray.kill(worker, no_restart=True)
            raise RuntimeError(
                f"{num_workers} Ray rollout workers ({num_cpus} CPU, {num_gpus} GPU each) did not start within "
                f"start_timeout_s={start_timeout_s} s; free: {ray.available_resources()}"
            ) from None

    def collect(
        self,
        task_ids: Sequence[str] | None = None,
        *,
        seed: int | None = None,
        greedy: bool = False,
        weights: dict[str, torch.Tensor] | None = None,
        sample_seed: int | None = None,
        keep_trunk_hiddens: bool = False,
    ) -> Collection:
        """Plays one episode per member on all workers; returns the merged batch and stats.

        Args:
            task_ids: One task per group (None: drawn by each shard's envs).
            seed: Reseeds the group-seed draw (as ``Collector.collect(seed=...)``).
            greedy: Decode greedily.
            weights: Trainable weights every worker loads first (put once in the object store).
            sample_seed: Reseeds worker ``w``'s sampling generator with ``sample_seed + w``.
            keep_trunk_hiddens: The rows carry the frozen trunk's hidden states (``trunk_cache``).
        """
        ray = import_ray()
        started = time.perf_counter()
        if task_ids is not None and len(task_ids) != self.num_groups:
            raise ValueError(f"task_ids has {len(task_ids)} ids for {self.num_groups} groups")
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        group_seeds = draw_group_seeds(self._rng, self.num_groups)
        if weights is not None:
            state = ray.put({name: tensor.detach().cpu() for name, tensor in weights.items()})
            ray.get([worker.load_weights.remote(state) for worker in self.workers])
        references = [
            worker.collect.remote(
                None if task_ids is None else list(task_ids[shard.start : shard.stop]),
                group_seeds[shard.start : shard.stop],
                greedy,
                None if sample_seed is None else sample_seed + w,
                keep_trunk_hiddens,
            )
            for w, (worker, shard) in enumerate(zip(self.workers, self.shards, strict=True))
        ]
        parts = ray.get(references)  # in shard order, whichever finished first
        return merge_collections(parts, pad_token_id=self.pad_token_id, seconds=time.perf_counter() - started)

    @property
    def shares_policy_caches(self) -> bool:
        """False: the workers' prefills ran in other processes."""
        return False

    def collect_on_policy(
        self, task_ids: Sequence[str], *, seed: int, policy: Policy, keep_trunk_hiddens: bool
    ) -> Collection:
        """:meth:`collect` after every worker loads ``policy``'s trainable weights, sampling from
        seeds drawn from ``policy``'s generator (so the trained policy's seed decides them)."""
        return self.collect(
            task_ids,
            seed=seed,
            weights=policy.trainable_state_dict(),
            sample_seed=int(torch.randint(0, 2**31 - 1, (1,), generator=policy.generator)),
            keep_trunk_hiddens=keep_trunk_hiddens,
        )

    def close(self) -> None:
        """Closes the workers' envs and ends the actors."""
        stop_actors(self.workers)
        self.workers = []
