"""The README's viewer screenshot: a short real run, then its most telling trajectory page in chromium.

    .venv/bin/python scripts/viewer_screenshot.py                       # train, then shoot
    .venv/bin/python scripts/viewer_screenshot.py --run runs/viewer-demo # shoot an existing run

Training uses a quick-start preset's RL settings (``agents.cli.quickstart.PRESETS``, default the
one-turn SearchQA run, SmolLM2-135M on the CPU) with another credit rule (default ORSD), for a
few steps, recording every group. The page shown is the recorded trajectory whose tokens'
advantages vary most (PI-scored and successful ones first), coloured by A − A_i (what the rule
changed token by token on top of the outcome advantage), with the tooltip of its most-changed
token open.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agents.runs.credit_record import read_step, recorded_steps  # noqa: E402

CHROMIUM = os.environ.get("AGENTENVS_CHROMIUM", "/usr/bin/chromium")


def train(folder: Path, preset_name: str, credit: str, steps: int) -> None:
    """A short run of a preset's RL settings with ``credit``, recording every group."""
    from agents.agent import GRPOAgent
    from agents.cli.quickstart import PRESETS

    preset = PRESETS[preset_name]
    config = dataclasses.replace(
        preset.rl,
        credit=credit,
        output_dir=str(folder),
        record_groups=preset.rl.num_groups,
        eval_every=0,
        eval_episodes=8,
        save_every=0,
        tensorboard=False,
    )
    agent = GRPOAgent(model=preset.model, env=preset.env, config=config)
    try:
        agent.learn(steps)
    finally:
        agent.close()


def spread(record: dict[str, Any]) -> tuple[bool, bool, float]:
    """(scored with PI, won, standard deviation of its token advantages): how much there is to see."""
    values = [a for turn in record["turns"] for a in turn["values"]["advantage"]]
    has_pi = any(turn.get("info", {}).get("privileged") for turn in record["turns"])
    return has_pi, bool(record["success"]), statistics.pstdev(values) if len(values) > 1 else 0.0


def most_telling(folder: Path) -> tuple[int, int, dict[str, Any]]:
    """``(step, index, record)`` of the recorded trajectory with the most to show."""
    candidates = [
        (spread(record), step, index, record)
        for step in recorded_steps(folder)
        for index, record in enumerate(read_step(folder, step))
    ]
    if not candidates:
        raise SystemExit(f"{folder} has no credit records (train with record_groups > 0)")
    _, step, index, record = max(candidates, key=lambda c: c[0])
    return step, index, record


def shoot(folder: Path, output: Path, *, width: int, height: int) -> Path:
    """Serves the viewer on the run and screenshots the chosen trajectory page."""
    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    from agents.viewer import create_app

    step, index, record = most_telling(folder)
    app = create_app([folder])
    name = app.extensions["run_store"].runs()[0].name
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
            page.goto(f"http://127.0.0.1:{server.server_port}/run/{name}/step/{step}/trajectory/{index}")
            page.wait_for_selector("pre.heatmap")
            outcome = record["values"].get("advantage", 0.0)
            if page.locator("input[name=colour-by][value=shaping]").count():
                page.check("input[name=colour-by][value=shaping]")

            def change(values: list[float]) -> list[float]:
                return [abs(value - outcome) for value in values]

            turn = max(record["turns"], key=lambda t: max(change(t["values"]["advantage"]), default=0.0))
            changes = change(turn["values"]["advantage"])
            strongest = max(range(len(changes)), key=changes.__getitem__)
            token = page.locator(f"section.turn[data-turn='{turn['turn']}'] span.tok").nth(strongest)
            token.scroll_into_view_if_needed()
            token.hover()
            output.parent.mkdir(parents=True, exist_ok=True)
            page.mouse.move(0, 0)
            token.hover()
            page.screenshot(path=str(output), full_page=True)
            browser.close()
    finally:
        server.shutdown()
        thread.join()
    print(f"{output}: run {folder}, step {step}, trajectory {index} ({record['rule']}, task {record['task_id']})")
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="an existing run folder (skips training)")
    parser.add_argument("--folder", type=Path, default=REPO / "runs" / "viewer-demo", help="where training writes")
    parser.add_argument("--preset", default="searchqa", help="quick-start preset whose RL settings to train with")
    parser.add_argument("--credit", default="orsd", help="credit rule")
    parser.add_argument("--steps", type=int, default=2, help="training steps")
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "images" / "viewer-trajectory.png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    args = parser.parse_args()
    folder = args.run
    if folder is None:
        folder = args.folder
        train(folder, args.preset, args.credit, args.steps)
    shoot(folder, args.output, width=args.width, height=args.height)


if __name__ == "__main__":
    main()
