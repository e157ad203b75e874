import json
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor

from agents.reports.curves import load_run
from agents.reports.plotting import plot_learning_curve, plot_runs, render_runs
from tests.agents.reports.test_curves import write_run

SVG = "{http://www.w3.org/2000/svg}"

RECORDS = [
    {"step": 0, "eval/success_rate": 0.25, "eval/mean_score": 0.5, "eval/invalid_rate": 0.5},
    {
        "step": 1,
        "train/mean_reward": 0.1,
        "train/success_rate": 0.0,
        "train/invalid_rate": 0.4,
        "advantage_abs_mean": 0.2,
    },
    {
        "step": 2,
        "train/mean_reward": 0.3,
        "train/success_rate": 0.5,
        "train/invalid_rate": 0.2,
        "advantage_abs_mean": 0.4,
        "eval/success_rate": 0.5,
        "eval/mean_score": 0.75,
        "eval/invalid_rate": 0.25,
    },
]


def gids(svg: bytes) -> set[str]:
    return {element.get("id", "") for element in ElementTree.fromstring(svg).iter(f"{SVG}g")}


def test_the_svg_has_every_panels_lines_per_run_and_the_run_names_as_text(tmp_path):
    write_run(tmp_path / "a", RECORDS, {2: [(True, 1.0), (False, 0.5)]})
    write_run(tmp_path / "b", RECORDS[:2])
    svg = render_runs([load_run(tmp_path / "a"), load_run(tmp_path / "b")], image_format="svg")
    ids = gids(svg)
    for name in ("a", "b"):
        assert {
            f"{name}:train/mean_reward",
            f"{name}:train/mean_reward:smoothed",
            f"{name}:eval/success_rate",
            f"{name}:train/invalid_rate:smoothed",
            f"{name}:advantage_abs_mean:smoothed",
        } <= ids
    assert {"a:eval/success_rate:interval", "a:eval/mean_score:interval"} <= ids
    assert "b:eval/mean_score:interval" not in ids  # b has no episodes file, so no score interval
    text = svg.decode()
    assert ">a<" in text and ">b<" in text and "held-out success (95% CI)" in text


def test_plot_learning_curve_writes_a_png_and_plot_runs_an_svg(tmp_path):
    write_run(tmp_path / "a", RECORDS)
    png = plot_learning_curve(tmp_path / "a" / "metrics.jsonl", tmp_path / "out" / "curve.png", title="t")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = plot_runs([tmp_path / "a"], tmp_path / "curve.svg")
    assert b"<svg" in svg.read_bytes()[:400]
    json.loads((tmp_path / "a" / "config.json").read_text())  # untouched


def test_svgs_drawn_on_several_threads_at_once_all_keep_their_text(tmp_path):
    # The viewer draws on request threads; rcParams (svg.fonttype) are process-wide.
    write_run(tmp_path / "a", RECORDS, {2: [(True, 1.0), (False, 0.5)]})
    write_run(tmp_path / "b", RECORDS)
    runs = [load_run(tmp_path / "a"), load_run(tmp_path / "b")]
    with ThreadPoolExecutor(max_workers=4) as pool:
        svgs = list(pool.map(lambda _: render_runs(runs, image_format="svg"), range(12)))
    assert all(">a<" in svg.decode() and "held-out success (95% CI)" in svg.decode() for svg in svgs)
