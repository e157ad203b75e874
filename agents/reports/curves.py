"""Learning-curve data of a run folder: smoothed training series, held-out points with intervals.

What the learning-curve PNG (:mod:`agents.reports.plotting`) and the viewer draw, from the files the
trainer writes: ``config.json``, ``metrics.jsonl`` (read up to its last complete record, so a
running run can be shown) and ``trajectories/eval_step_<N>.jsonl`` (each held-out episode's
outcome, for the intervals).

- Training series are smoothed with TensorBoard's debiased exponential moving average
  (:func:`smooth`).
- Held-out success gets a 95% Wilson score interval over the evaluation's episodes
  (:func:`wilson_interval`), held-out score a 95% normal interval of the mean
  (:func:`mean_interval`); without the episodes' file, success falls back to the rate and
  ``eval_episodes`` of ``config.json`` and score has no interval.

Example:
    >>> smooth([0.0, 1.0, 1.0], weight=0.5)
    [0.0, 0.6666666666666666, 0.8571428571428571]
    >>> [round(x, 4) for x in wilson_interval(8, 10)]
    [0.4902, 0.9433]
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.runs.credit_record import read_records

Z_95 = 1.959963984540054
"""The two-sided 95% quantile of the standard normal."""
TRAIN_SERIES = ("train/mean_reward", "train/success_rate", "train/invalid_rate")
CREDIT_ACTIVITY_SUFFIXES = ("abs_mean", "coverage", "fraction", "groups_with_rubric", "shaping_to_advantage")
"""A rule's ``<rule>/<name>`` statistics drawn as credit activity: names ending so (sizes and shares)."""


PLOTTABLE = 1e300
"""The largest magnitude a curve shows (two points of ±1e308 make an axis span that overflows)."""


def smooth(values: Sequence[float], weight: float = 0.6) -> list[float]:
    """TensorBoard's debiased EMA: ``m_t = w·m_{t−1} + (1 − w)·x_t``, reported as ``m_t / (1 − w^t)``.

    The debiasing keeps the first points from being pulled towards 0. ``weight=0`` returns the
    values; non-finite values are carried through without entering the average.

    Raises:
        ValueError: unless ``0 <= weight < 1``.
    """
    if not 0 <= weight < 1:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    out, average, count = [], 0.0, 0
    for value in values:
        if not math.isfinite(value):
            out.append(value)
            continue
        count += 1
        average = weight * average + (1 - weight) * value
        out.append(average / (1 - weight**count))
    return out


def wilson_interval(successes: float, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a success rate (``successes`` of ``trials``).

    Raises:
        ValueError: for ``trials < 1`` or ``successes`` outside ``[0, trials]``.
    """
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need trials >= 1 and 0 <= successes <= trials, got {successes} of {trials}")
    rate = successes / trials
    denominator = 1 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(values: Sequence[float], z: float = Z_95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean ± z standard errors (sample std, n − 1); one value: no width.

    >>> [round(x, 4) for x in mean_interval([1.0, 2.0, 3.0])]  # 2 ± 1.96 · 1 / √3
    [2.0, 0.8684, 3.1316]

    Raises:
        ValueError: for no values.
    """
    if not values:
        raise ValueError("mean_interval needs at least one value")
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, mean, mean
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    half = z * math.sqrt(variance / len(values))
    return mean, mean - half, mean + half


@dataclass(frozen=True)
class HeldOut:
    """One held-out evaluation: success and score with their 95% intervals (None: unknown)."""

    step: int
    success: float
    success_interval: tuple[float, float] | None
    score: float | None
    score_interval: tuple[float, float] | None
    episodes: int | None


@dataclass
class RunCurves:
    """A run's curves: its settings, metrics records and held-out evaluations."""

    name: str
    folder: Path
    settings: dict[str, Any] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    held_out: list[HeldOut] = field(default_factory=list)

    @property
    def rule(self) -> str:
        """The run's credit rule (``config.credit``; "" when unknown)."""
        return str(self.settings.get("config", {}).get("credit", ""))

    def series(self, key: str) -> tuple[list[int], list[float]]:
        """``(steps, values)`` of one metric over the records that have it; a value no plot can
        hold (beyond ±:data:`PLOTTABLE`, where an axis's span overflows) is NaN, a gap."""
        points = [
            (int(r["step"]), float(r[key]) if abs(float(r[key])) <= PLOTTABLE else math.nan)
            for r in self.records
            if isinstance(r.get(key), (int, float)) and "step" in r
        ]
        return [s for s, _ in points], [v for _, v in points]

    def credit_activity_keys(self) -> list[str]:
        """``advantage_abs_mean`` and the rule's size/share statistics present in the records."""
        prefix = f"{self.rule}/" if self.rule else None
        keys = {"advantage_abs_mean"} if any("advantage_abs_mean" in r for r in self.records) else set()
        for record in self.records:
            for key in record:
                if prefix and key.startswith(prefix) and key.endswith(CREDIT_ACTIVITY_SUFFIXES):
                    keys.add(key)
        return sorted(keys)


def episode_outcomes(path: str | os.PathLike[str]) -> list[tuple[bool, float]]:
    """``(success, score)`` of every episode in an evaluation's trajectories file."""
    outcomes = []
    for record in read_records(path):
        for trajectory in record.get("trajectories", [record]):
            if "success" in trajectory:
                outcomes.append((bool(trajectory["success"]), float(trajectory.get("score", 0.0))))
    return outcomes


def held_out_points(
    folder: Path,
    records: Sequence[dict[str, Any]],
    episodes: int | None,
    read_outcomes: Callable[[Path], list[tuple[bool, float]]] = episode_outcomes,
) -> list[HeldOut]:
    """Each evaluation in ``records`` with its intervals (from its episodes' file when there is one).

    ``read_outcomes`` reads an episodes' file (the viewer passes one that checks every record).
    """
    points = []
    for record in records:
        if not isinstance(record.get("eval/success_rate"), (int, float)):
            continue
        step = int(record["step"])
        success = float(record["eval/success_rate"])
        score = record.get("eval/mean_score")
        path = folder / "trajectories" / f"eval_step_{step}.jsonl"
        outcomes = read_outcomes(path) if path.is_file() else []
        if outcomes:
            wins = sum(won for won, _ in outcomes)
            _, low, high = mean_interval([value for _, value in outcomes])
            points.append(
                HeldOut(step, success, wilson_interval(wins, len(outcomes)), score, (low, high), len(outcomes))
            )
        else:
            interval = wilson_interval(round(success * episodes), episodes) if episodes else None
            points.append(HeldOut(step, success, interval, score, None, episodes))
    return points


def load_run(
    folder: str | os.PathLike[str], name: str | None = None, *, metrics_file: str = "metrics.jsonl"
) -> RunCurves:
    """A run folder's curves (``config.json`` and the metrics file may be missing: empty curves).

    Raises:
        NotADirectoryError: when ``folder`` is not a folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"run folder {folder} does not exist")
    settings: dict[str, Any] = {}
    config_path = folder / "config.json"
    if config_path.is_file():
        try:
            loaded = json.loads(config_path.read_text(encoding="utf-8"))
            settings = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            settings = {}
    metrics = folder / metrics_file
    records = read_records(metrics) if metrics.is_file() else []
    episodes = settings.get("config", {}).get("eval_episodes")
    held_out = held_out_points(folder, records, episodes if isinstance(episodes, int) else None)
    return RunCurves(name or folder.name, folder, settings, records, held_out)
