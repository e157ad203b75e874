"""The README's viewer screenshot: a short real run, then its most telling trajectory page in chromium.

    .venv/bin/python scripts/viewer_screenshot.py                       # train, then shoot
    .venv/bin/python scripts/viewer_screenshot.py --run runs/viewer-demo # shoot an existing run

Training uses a quick-start preset's settings (``agents.cli.quickstart.PRESETS``, default the
multi-turn WebShop run, SmolLM2-135M on the CPU), scaled down to minutes: a short expert warm
start where the preset has one (``--expert-episodes`` episodes, one epoch, no evaluation), then
``--steps`` RL steps of ``--groups`` × ``--group-size`` rollouts with another credit rule
(default GiGPO), recording every group. The page shown is the recorded multi-turn trajectory
whose tokens' advantages vary most (PI-scored, successful and longer ones first), coloured by
A − A_i (what the rule changed token by token on top of the outcome advantage), at 1400 × 1000.
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


def train(
    folder: Path, preset_name: str, credit: str, steps: int, *, groups: int, group_size: int, expert_episodes: int
) -> None:
    """A short run of a preset (warm start if it has one, then RL with ``credit``), recording every group."""
    from agents.agent import GRPOAgent
    from agents.cli.quickstart import PRESETS
    from agents.sft import SFTAgent

    preset = PRESETS[preset_name]
    model = preset.model
    if preset.sft is not None:
        sft_config = dataclasses.replace(
            preset.sft, output_dir=str(folder / "sft"), expert_episodes=expert_episodes, epochs=1, eval_episodes=0
        )
        SFTAgent(preset.model, preset.env, sft_config).learn()
        model = str(folder / "sft")
    config = dataclasses.replace(
        preset.rl,
        credit=credit,
        num_groups=groups,
        group_size=group_size,
        output_dir=str(folder / "rl"),
        record_groups=groups,
        eval_every=0,
        eval_episodes=1,
        save_every=0,
        tensorboard=False,
    )
    agent = GRPOAgent(model=model, env=preset.env, config=config)
    try:
        agent.learn(steps)
    finally:
        agent.close()


def spread(record: dict[str, Any]) -> tuple[bool, bool, bool, float]:
    """(scored with PI, won, more than one turn, standard deviation of its token advantages): how much there is to see."""
    values = [a for turn in record["turns"] for a in turn["values"]["advantage"]]
    has_pi = any(turn.get("info", {}).get("privileged") for turn in record["turns"])
    deviation = statistics.pstdev(values) if len(values) > 1 else 0.0
    return has_pi, bool(record["success"]), len(record["turns"]) > 1, deviation


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

            def change(values: list[float]) -> list[float]:
                return [abs(value - outcome) for value in values]

            # The tooltip of the most-changed token of the first two turns (in the window without scrolling).
            turn = max(record["turns"][:2], key=lambda t: max(change(t["values"]["advantage"]), default=0.0))
            changes = change(turn["values"]["advantage"])
            if changes:
                strongest = max(range(len(changes)), key=changes.__getitem__)
                page.locator(f"section.turn[data-turn='{turn['turn']}'] span.tok").nth(strongest).hover()
            output.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(output))  # the window, as a person first sees the page
            browser.close()
    finally:
        server.shutdown()
        thread.join()
    compress(output)
    print(f"{output}: run {folder}, step {step}, trajectory {index} ({record['rule']}, task {record['task_id']})")
    return output


def compress(image: Path) -> None:
    """Rewrites the PNG with a 256-colour palette (a third of the size; text and colours unchanged to the eye)."""
    from PIL import Image

    with Image.open(image) as shot:
        palette = shot.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    palette.save(image, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="an existing run folder (skips training)")
    parser.add_argument("--folder", type=Path, default=REPO / "runs" / "viewer-demo", help="where training writes")
    parser.add_argument("--preset", default="webshop", help="quick-start preset whose settings to train with")
    parser.add_argument("--credit", default="gigpo", help="credit rule")
    parser.add_argument("--steps", type=int, default=1, help="RL steps")
    parser.add_argument("--groups", type=int, default=2, help="tasks per RL step")
    parser.add_argument("--group-size", type=int, default=4, help="rollouts per task")
    parser.add_argument("--expert-episodes", type=int, default=16, help="expert episodes of the short warm start")
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "images" / "viewer-trajectory.png")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args()
    folder = args.run
    if folder is None:
        train(
            args.folder,
            args.preset,
            args.credit,
            args.steps,
            groups=args.groups,
            group_size=args.group_size,
            expert_episodes=args.expert_episodes,
        )
        folder = args.folder / "rl"
    shoot(folder, args.output, width=args.width, height=args.height)


if __name__ == "__main__":
    main()
