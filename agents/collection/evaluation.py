"""Held-out evaluation: a policy plays the first ``episodes`` held-out tasks once each.

Shared by the RL trainer and behaviour cloning, so that "before", "after the warm start"
and "after RL" are measured on the same tasks, with the same decoding and the same
summary. Sampling (``greedy=False``) draws from a generator seeded by ``seed``, and the
policy's own generator is put back afterwards: evaluating never changes what training
samples next.

Example:
    >>> held_out_tasks(["a", "b", "c"], 2), held_out_tasks(["a", "b"], 5)
    (['a', 'b'], ['a', 'b', 'a', 'b', 'a'])
    >>> format_evaluation({"eval/success_rate": 0.125, "eval/mean_score": 0.4681, "eval/invalid_rate": 0.078})
    'success 0.125 | score 0.468 | invalid 0.078'
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from agentenvs.core.trajectory import write_jsonl
from agents.collection.collector import Collector


def held_out_tasks(task_ids: Sequence[str], episodes: int) -> list[str]:
    """The first ``episodes`` tasks of the pool (cycled when the pool is smaller)."""
    if not task_ids:
        raise ValueError("the evaluation env has no tasks")
    return [str(task_ids[i % len(task_ids)]) for i in range(episodes)]


def evaluate_policy(
    policy: Any,
    collector: Collector,
    *,
    episodes: int,
    seed: int,
    greedy: bool = True,
    sample_seed: int = 0,
    prefix: str = "",
    trajectories_path: str | Path | None = None,
) -> dict[str, float]:
    """Success rate, mean score, episode length, invalid-action rate and wall time.

    Args:
        policy: The policy the collector drives (its ``generator`` is swapped while sampling).
        collector: A collector with ``num_groups == episodes`` and ``group_size == 1``.
        episodes: Tasks to play (:func:`held_out_tasks` of the collector's pool).
        seed: Seeds the envs' reset.
        greedy: Decode greedily.
        sample_seed: Seeds sampling when not greedy.
        prefix: Put before every metric name (e.g. ``"eval/"``).
        trajectories_path: Where to write the episodes as JSON lines (None: nowhere).
    """
    tasks = held_out_tasks(collector.task_ids, episodes)
    saved_generator = policy.generator
    policy.generator = torch.Generator(device=saved_generator.device).manual_seed(sample_seed)
    try:
        batch, stats = collector.collect(tasks, seed=seed, greedy=greedy)
    finally:
        policy.generator = saved_generator
    if trajectories_path is not None:
        Path(trajectories_path).parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(trajectories_path, batch.groups)
    return {
        f"{prefix}success_rate": stats.success_rate,
        f"{prefix}mean_score": stats.mean_score,
        f"{prefix}mean_episode_length": stats.mean_episode_length,
        f"{prefix}invalid_rate": stats.invalid_rate,
        f"time/{prefix.strip('/') or 'eval'}_s": stats.seconds,
    }


def format_evaluation(record: dict[str, float], prefix: str = "eval/") -> str:
    """An evaluation's success, score and invalid-action rate (and wall time) as one short line."""
    shown = [
        f"{name} {record[prefix + key]:.3f}"
        for name, key in (("success", "success_rate"), ("score", "mean_score"), ("invalid", "invalid_rate"))
        if prefix + key in record
    ]
    seconds = record.get(f"time/{prefix.strip('/') or 'eval'}_s")
    if seconds is not None:
        shown.append(f"{seconds:.0f} s")
    return " | ".join(shown)
