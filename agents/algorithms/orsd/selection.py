"""ORSD bundle selection: keep the bundle whose satisfaction best tracks task success.

For a bundle with satisfaction matrix S (items × trajectories; NaN = not judged), a
trajectory's satisfied fraction is ``f_i = nanmean_k S[k, i]`` (items never judged are
dropped first). Its alignment with the success labels y ∈ {0, 1} is one of

* ``point_biserial`` (default): the Pearson correlation r(f, y)
  = (mean f | y=1 − mean f | y=0) · sqrt(p(1−p)) / std(f), with p = mean y and population
  std; 0 when f is constant. Range [−1, 1].
* ``accuracy``: balanced accuracy of the rule "f ≥ threshold ⇒ success", minus 0.5
  (TPR/2 + TNR/2 − 0.5). Range [−0.5, 0.5].
* ``auc``: the Mann–Whitney probability that a random success has a higher f than a random
  failure (ties count one half), minus 0.5. Range [−0.5, 0.5].

All three are 0 at chance, positive when satisfying the rubric goes with winning, and
invariant to the order of trajectories. The selected bundle is the one with the largest
alignment strictly above ``min_alignment`` (ties: the first). Alignments within
``ALIGNMENT_TOLERANCE`` of each other count as tied, and one within it of ``min_alignment`` as
not above it: the same value computed over trajectories in another order can differ in its
last bits (0.5 vs 0.5000000000000001), and the choice must not depend on that order. A group
whose trajectories all succeeded or all failed, or where no bundle clears the bar, gets no
rubric (plain GRPO).

Example:
    >>> point_biserial(np.array([1.0, 0.5, 0.0, 0.0]), np.array([1, 1, 0, 0]))
    0.9045340337332909
    >>> auc_alignment(np.array([1.0, 0.5, 0.5, 0.0]), np.array([1, 0, 1, 0]))
    0.375
"""

from __future__ import annotations

import math
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from agents.algorithms.orsd.rubrics import RubricBundle

AlignmentMetric = Literal["point_biserial", "accuracy", "auc"]
ALIGNMENT_METRICS: tuple[str, ...] = typing.get_args(AlignmentMetric)
ALIGNMENT_TOLERANCE = 1e-9
"""Alignments closer than this are equal for selection (far above rounding, far below any real gap:
with at most a few hundred trajectories distinct alignments differ by more than 1e-6)."""


def point_biserial(fraction: np.ndarray, success: np.ndarray) -> float:
    """Pearson correlation between satisfied fraction and 0/1 success (0 if either is constant)."""
    f, y = np.asarray(fraction, dtype=float), np.asarray(success, dtype=float)
    if f.std() == 0.0 or y.std() == 0.0:
        return 0.0
    r = ((f - f.mean()) * (y - y.mean())).mean() / (f.std() * y.std())
    return float(np.clip(r, -1.0, 1.0))  # rounding can land a hair outside


def accuracy_alignment(fraction: np.ndarray, success: np.ndarray, threshold: float = 0.5) -> float:
    """Balanced accuracy of ``f ≥ threshold ⇒ success`` minus 0.5 (0 when a class is missing)."""
    predicted, y = np.asarray(fraction) >= threshold, np.asarray(success).astype(bool)
    if y.all() or not y.any():
        return 0.0
    return float(0.5 * predicted[y].mean() + 0.5 * (~predicted[~y]).mean() - 0.5)


def auc_alignment(fraction: np.ndarray, success: np.ndarray) -> float:
    """P(f_win > f_loss) + ½·P(f_win = f_loss) − 0.5 over all win/loss pairs (0 when a class is missing)."""
    f, y = np.asarray(fraction, dtype=float), np.asarray(success).astype(bool)
    wins, losses = f[y], f[~y]
    if not len(wins) or not len(losses):
        return 0.0
    diff = wins[:, None] - losses[None, :]
    return float((diff > 0).mean() + 0.5 * (diff == 0).mean() - 0.5)


def alignment(fraction: np.ndarray, success: np.ndarray, metric: str = "point_biserial") -> float:
    """The named alignment metric (see the module docstring)."""
    if metric == "point_biserial":
        return point_biserial(fraction, success)
    if metric == "accuracy":
        return accuracy_alignment(fraction, success)
    if metric == "auc":
        return auc_alignment(fraction, success)
    raise ValueError(f"metric must be one of {ALIGNMENT_METRICS}, got {metric!r}")


def satisfied_fraction(matrix: np.ndarray) -> np.ndarray | None:
    """Per-trajectory mean over the items judged for every trajectory; None if no item is."""
    matrix = np.asarray(matrix, dtype=float)
    judged = ~np.isnan(matrix).any(axis=1)
    if matrix.ndim != 2 or not judged.any():
        return None
    return matrix[judged].mean(axis=0)


@dataclass(frozen=True)
class Selection:
    """The outcome of selection for one group.

    Attributes:
        bundle: The selected bundle, or None (the group gets plain GRPO).
        index: Its index among the candidates (-1 if none).
        alignments: Alignment of each candidate (NaN for a bundle with no judged item).
        reason: ``selected``, ``uniform_outcome``, ``no_candidates`` or ``no_positive_alignment``.
    """

    bundle: RubricBundle | None
    index: int
    alignments: tuple[float, ...]
    reason: str


def select_rubric_bundle(
    bundles: Sequence[RubricBundle],
    matrices: Sequence[np.ndarray],
    success: Sequence[bool] | np.ndarray,
    *,
    metric: str = "point_biserial",
    min_alignment: float = 0.0,
) -> Selection:
    """Picks the candidate whose satisfied fraction best aligns with ``success``.

    Raises:
        ValueError: for an unknown metric, or when bundles and matrices do not match.
    """
    if metric not in ALIGNMENT_METRICS:
        raise ValueError(f"metric must be one of {ALIGNMENT_METRICS}, got {metric!r}")
    if len(bundles) != len(matrices):
        raise ValueError(f"got {len(bundles)} bundles but {len(matrices)} satisfaction matrices")
    y = np.asarray(success, dtype=bool)
    if y.all() or not y.any():
        return Selection(None, -1, tuple(math.nan for _ in bundles), "uniform_outcome")
    if not bundles:
        return Selection(None, -1, (), "no_candidates")
    scores = []
    for bundle, matrix in zip(bundles, matrices, strict=True):
        if np.shape(matrix) != (len(bundle.items), len(y)):
            raise ValueError(
                f"matrix shape {np.shape(matrix)} != (items, trajectories) = {(len(bundle.items), len(y))}"
            )
        fraction = satisfied_fraction(matrix)
        scores.append(math.nan if fraction is None else alignment(fraction, y, metric))
    judged = [score for score in scores if not math.isnan(score)]
    if not judged or max(judged) <= min_alignment + ALIGNMENT_TOLERANCE:
        return Selection(None, -1, tuple(scores), "no_positive_alignment")
    top = max(judged)
    best = next(i for i, score in enumerate(scores) if score >= top - ALIGNMENT_TOLERANCE)  # NaN >= x is False
    return Selection(bundles[best], best, tuple(scores), "selected")


def judged_bundle(bundle: RubricBundle, matrix: np.ndarray) -> RubricBundle:
    """The bundle without the items that were not judged for every trajectory (what becomes PI)."""
    judged = ~np.isnan(np.asarray(matrix, dtype=float)).any(axis=1)
    return RubricBundle(
        tuple(item for item, keep in zip(bundle.items, judged, strict=True) if keep), bundle.source, bundle.raw
    )
