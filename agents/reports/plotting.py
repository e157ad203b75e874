"""Learning curves of one or more runs (matplotlib): the PNG a run writes and the viewer's SVG.

Six panels over training steps (:mod:`agents.reports.curves` computes what they show): training
reward R and success (each step faint, smoothed solid), held-out success and held-out score
(95% intervals shaded), the invalid-action rate (training smoothed, held-out dashed) and
credit activity (mean |advantage| and the rule's coverage/size statistics). Runs are told
apart by colour; every line carries a gid ``<run>:<metric>`` (``<run>:<metric>:smoothed``,
``...:interval``) that the SVG keeps, so tools can find them.

Example:
    >>> import json, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> rows = [{"step": 0, "eval/success_rate": 0.0}, {"step": 1, "train/success_rate": 0.5, "train/mean_reward": 0.4}]
    >>> _ = (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> plot_learning_curve(folder / "metrics.jsonl", folder / "curve.png").is_file()
    True
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.reports.curves import RunCurves, load_run, smooth
from agents.runs.credit_record import read_records

PANELS = (
    ("train/mean_reward", "train reward R"),
    ("train/success_rate", "train success"),
    ("eval/success_rate", "held-out success (95% CI)"),
    ("eval/mean_score", "held-out score (95% CI)"),
    ("invalid", "invalid-action rate"),
    ("credit", "credit activity"),
)
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
CREDIT_STYLES = ("-", "--", ":", "-.")
# rcParams are process-wide: renders hold this lock so that a concurrent one (the viewer serves
# requests on threads) cannot restore ``svg.fonttype`` under another's savefig.
_RENDER_LOCK = threading.Lock()


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a metrics JSONL file (up to its last complete record)."""
    return read_records(path)


def _train_panel(axis: Any, run: RunCurves, key: str, colour: str, smoothing: float) -> None:
    steps, values = run.series(key)
    if not steps:
        return
    (raw,) = axis.plot(steps, values, "-", color=colour, alpha=0.25, linewidth=1)
    raw.set_gid(f"{run.name}:{key}")
    (smoothed,) = axis.plot(steps, smooth(values, smoothing), "-", color=colour, linewidth=1.8)
    smoothed.set_gid(f"{run.name}:{key}:smoothed")


def plain(text: str) -> str:
    """``text`` shown as written: matplotlib reads ``$...$`` as math (a metric key such as
    ``grpo/$\\foo$`` would fail to draw), so each ``$`` is escaped."""
    return text.replace("$", r"\$")


def _held_out_panel(axis: Any, run: RunCurves, key: str, colour: str) -> None:
    if key == "eval/success_rate":
        points = [(p.step, p.success, p.success_interval) for p in run.held_out]
    else:
        points = [(p.step, p.score, p.score_interval) for p in run.held_out if p.score is not None]
    if not points:
        return
    steps = [s for s, _, _ in points]
    (line,) = axis.plot(steps, [v for _, v, _ in points], "o-", color=colour, markersize=4, linewidth=1.5)
    line.set_gid(f"{run.name}:{key}")
    bounded = [(s, i) for s, _, i in points if i is not None]
    if bounded:
        band = axis.fill_between(
            [s for s, _ in bounded], [i[0] for _, i in bounded], [i[1] for _, i in bounded], color=colour, alpha=0.15
        )
        band.set_gid(f"{run.name}:{key}:interval")


def _invalid_panel(axis: Any, run: RunCurves, colour: str, smoothing: float, several: bool) -> None:
    steps, values = run.series("train/invalid_rate")
    if steps:
        (line,) = axis.plot(steps, smooth(values, smoothing), "-", color=colour, linewidth=1.5, label="train")
        line.set_gid(f"{run.name}:train/invalid_rate:smoothed")
    steps, values = run.series("eval/invalid_rate")
    if steps:
        (line,) = axis.plot(steps, values, "o--", color=colour, markersize=3, linewidth=1, label="held-out")
        line.set_gid(f"{run.name}:eval/invalid_rate")
    if not several and axis.get_legend_handles_labels()[0]:
        axis.legend(loc="best", fontsize=6, frameon=False)


def _credit_panel(axis: Any, run: RunCurves, colour: str, smoothing: float, several: bool) -> None:
    for number, key in enumerate(run.credit_activity_keys()):
        steps, values = run.series(key)
        (line,) = axis.plot(
            steps,
            smooth(values, smoothing),
            CREDIT_STYLES[number % len(CREDIT_STYLES)],
            color=colour,
            linewidth=1.3,
            label=plain(key if not several else f"{run.name}: {key}"),
        )
        line.set_gid(f"{run.name}:{key}:smoothed")
    if run.credit_activity_keys():
        axis.legend(loc="best", fontsize=6, frameon=False)


def learning_curve_figure(runs: Sequence[RunCurves], *, title: str | None = None, smoothing: float = 0.6) -> Any:
    """The six-panel figure of ``runs`` (overlaid, one colour each), a plain :class:`~matplotlib.figure.Figure`.

    It is made without pyplot, so no global figure registry holds it and threads can draw at once.
    """
    import matplotlib.lines
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 6.4), dpi=110)
    axes = figure.subplots(2, 3, sharex=True)
    several = len(runs) > 1
    for number, run in enumerate(runs):
        colour = COLOURS[number % len(COLOURS)]
        for axis, (key, _) in zip(axes.flat, PANELS, strict=True):
            if key.startswith("train/"):
                _train_panel(axis, run, key, colour, smoothing)
            elif key.startswith("eval/"):
                _held_out_panel(axis, run, key, colour)
            elif key == "invalid":
                _invalid_panel(axis, run, colour, smoothing, several)
            else:
                _credit_panel(axis, run, colour, smoothing, several)
    for axis, (_, label) in zip(axes.flat, PANELS, strict=True):
        axis.set_title(label, fontsize=9)
        axis.grid(alpha=0.3)
        axis.tick_params(labelsize=7)
    for axis in axes[1]:
        axis.set_xlabel("training step", fontsize=8)
    if several:
        handles = [
            matplotlib.lines.Line2D([], [], color=COLOURS[n % len(COLOURS)], label=plain(run.name))
            for n, run in enumerate(runs)
        ]
        figure.legend(handles=handles, loc="upper right", fontsize=8, ncols=min(len(runs), 4), frameon=False)
    if title:
        figure.suptitle(plain(title), fontsize=10, x=0.01, ha="left")
    figure.tight_layout(rect=(0, 0, 1, 0.96 if (title or several) else 1), h_pad=0.6)
    return figure


def render_runs(
    runs: Sequence[RunCurves], *, title: str | None = None, smoothing: float = 0.6, image_format: str = "png"
) -> bytes:
    """The runs' learning curves as an image (``image_format``: ``png`` or ``svg``, text kept as text)."""
    import matplotlib

    buffer = io.BytesIO()
    with _RENDER_LOCK, matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "agents"}):
        learning_curve_figure(runs, title=title, smoothing=smoothing).savefig(buffer, format=image_format)
    return buffer.getvalue()


def plot_runs(
    folders: Sequence[str | os.PathLike[str]],
    output_path: str | os.PathLike[str],
    *,
    title: str | None = None,
    smoothing: float = 0.6,
) -> Path:
    """Writes the learning curves of several run folders, overlaid, to ``output_path`` (format from its suffix)."""
    output = Path(output_path)
    image = render_runs(
        [load_run(folder) for folder in folders],
        title=title,
        smoothing=smoothing,
        image_format=output.suffix.lstrip(".") or "png",
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(image)
    return output


def plot_learning_curve(
    metrics_path: str | os.PathLike[str], output_path: str | os.PathLike[str], title: str | None = None
) -> Path:
    """Draws one run's curves from its metrics file (its folder's other files give the intervals); returns the PNG."""
    metrics_path = Path(metrics_path)
    run = load_run(metrics_path.parent, metrics_file=metrics_path.name)
    output = Path(output_path)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(render_runs([run], title=title))
    return output
