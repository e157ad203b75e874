"""Learning curves (matplotlib PNG) from a run's ``metrics.jsonl``.

Example:
    >>> import json, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> rows = [{"step": 0, "eval/success_rate": 0.0}, {"step": 1, "train/success_rate": 0.5, "train/mean_reward": 0.4}]
    >>> _ = (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> plot_learning_curve(folder / "metrics.jsonl", folder / "curve.png").is_file()
    True
"""

from __future__ import annotations

import json
import os
from pathlib import Path

CURVES = (
    ("train/success_rate", "train success"),
    ("train/mean_reward", "train reward R"),
    ("train/invalid_rate", "train invalid-action rate"),
    ("eval/success_rate", "eval success (held-out)"),
)


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, float]]:
    """The records of a metrics JSONL file."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def plot_learning_curve(
    metrics_path: str | os.PathLike[str], output_path: str | os.PathLike[str], title: str | None = None
) -> Path:
    """Draws success, reward and invalid rate per step; returns the PNG path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    figure, axis = plt.subplots(figsize=(7, 4), dpi=120)
    for key, label in CURVES:
        points = [(r["step"], r[key]) for r in records if key in r]
        if points:
            steps, values = zip(*points, strict=True)
            style = "o-" if key.startswith("eval/") else "-"
            axis.plot(steps, values, style, label=label, markersize=4)
    axis.set_xlabel("training step")
    axis.set_ylabel("rate / reward")
    axis.grid(alpha=0.3)
    axis.legend(loc="best", fontsize=8)
    if title:
        axis.set_title(title)
    figure.tight_layout()
    output = Path(output_path)
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output)
    plt.close(figure)
    return output
