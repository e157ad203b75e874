"""The viewer in a real headless browser (Debian's chromium driven by Playwright) over two runs
made by tiny-model ``learn()`` (``conftest.py``): navigate to a trajectory, check the heatmap
against the logged values, overlay the runs. Assertions are on the DOM, not on screenshots."""

from __future__ import annotations

import json
import threading

import pytest
from werkzeug.serving import make_server

from agents.viewer import create_app
from agents.viewer.heatmap import blend, colour, contrast, value_scales
from tests.agents.viewer.conftest import probe_values
from tests.support.browser import headless_chromium


@pytest.fixture(scope="module")
def browser():
    with headless_chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def viewer(runs):
    server = make_server("127.0.0.1", 0, create_app(list(runs)), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


def rgba(css: str) -> tuple[float, ...]:
    inside = css[css.index("(") + 1 : css.index(")")]
    values = tuple(float(part) for part in inside.split(","))
    return values if len(values) == 4 else (*values, 1.0)  # the browser keeps alpha in 1/255 steps


def test_navigate_to_a_trajectory_and_read_the_logged_advantages_off_the_heatmap(browser, viewer, runs):
    probe, _ = runs
    records = [json.loads(line) for line in (probe / "credit" / "step_1.jsonl").read_text().splitlines()]
    page = browser.new_page()
    page.goto(viewer)
    page.click("#runs a:text-is('probe')")
    page.wait_for_selector("#rule:text-is('viewer_probe')")
    page.click("#steps tr[data-step='1'] a.step-link")
    page.wait_for_selector("section.group")
    assert page.locator("a.card").count() == len(records) == 4  # record_groups=2 groups of 2
    page.click("a.card[data-index='3']")
    page.wait_for_selector("pre.heatmap")
    assert page.url.endswith("/run/probe/step/1/trajectory/3")  # the permalink
    record = records[3]
    scales = value_scales(record["turns"])
    assert page.is_checked("input[name=colour-by][value=shaping]")  # A − A_i first: the probe's credit varies
    page.check("input[name=colour-by][value=advantage]")
    for turn in record["turns"]:
        tokens = page.locator(f"section.turn[data-turn='{turn['turn']}'] span.tok")
        assert tokens.count() == len(turn["token_ids"]) > 0
        shown = tokens.evaluate_all(
            "spans => spans.map(s => [s.dataset.advantage, s.dataset.delta, s.dataset.weight,"
            " getComputedStyle(s).backgroundColor])"
        )
        for k, (advantage, delta, weight, background) in enumerate(shown):
            assert float(advantage) == pytest.approx(turn["values"]["advantage"][k], abs=1e-6)
            assert float(delta) == pytest.approx(turn["values"]["delta"][k], abs=1e-6)
            assert float(weight) == pytest.approx(turn["values"]["weight"][k], abs=1e-6)
            assert rgba(background) == pytest.approx(
                rgba(colour(float(advantage), scale=scales["advantage"])), abs=4e-3
            )
    # The logged values are the probe rule's: row r, token t -> 0.5 - 0.25 r + 0.125 t (a real
    # learn() wrote them); positive ones are blue, negative red.
    first = record["turns"][0]
    values = first["values"]["advantage"]
    rows = {round((0.5 + 0.125 * t - v) / 0.25) for t, v in enumerate(values)}
    assert len(rows) == 1
    expected, _, _ = probe_values(rows.pop() + 1, len(values))
    assert values == pytest.approx(expected[-1].tolist(), abs=1e-6)
    # Hover: the token's A, Δ and weight.
    token = page.locator(f"section.turn[data-turn='{first['turn']}'] span.tok").nth(1)
    token.hover()
    tooltip = page.inner_text("#tooltip")
    assert f"A     {first['values']['advantage'][1]:.4f}" in tooltip
    assert (
        f"Δ     {first['values']['delta'][1]:.4f}" in tooltip and f"w     {first['values']['weight'][1]:.4f}" in tooltip
    )
    # Colour by Δ instead.
    page.check("input[name=colour-by][value=delta]")
    background = token.evaluate("s => getComputedStyle(s).backgroundColor")
    assert rgba(background) == pytest.approx(rgba(colour(first["values"]["delta"][1], scale=scales["delta"])), abs=4e-3)
    if any(t["info"].get("privileged") for t in record["turns"]):
        assert "PI of row" in page.inner_text("main")
    page.close()


def test_overlay_two_runs(browser, viewer):
    page = browser.new_page()
    page.goto(viewer)
    page.click("#compare")
    page.wait_for_selector("#curves[data-loaded=true]", timeout=60_000)
    ids = page.locator("#curves svg g[id]").evaluate_all("groups => groups.map(g => g.id)")
    for name in ("probe", "plain"):
        assert f"{name}:train/mean_reward:smoothed" in ids and f"{name}:eval/success_rate" in ids
    assert "probe:eval/success_rate:interval" in ids  # held-out intervals from the episodes
    legend = page.text_content("#curves") or ""
    assert "probe" in legend and "plain" in legend
    differing = page.inner_text("#differing")
    assert "credit" in differing and "viewer_probe" in differing and "grpo" in differing
    page.close()


def test_filter_a_step_and_open_a_held_out_episode(browser, viewer, runs):
    probe, _ = runs
    page = browser.new_page()
    page.goto(f"{viewer}/run/probe/step/1")
    page.select_option("#outcome-filter", "success")
    page.click("form.filters button")
    page.wait_for_load_state()
    assert "outcome=success" in page.url
    wins = sum(json.loads(line)["success"] for line in (probe / "credit" / "step_1.jsonl").read_text().splitlines())
    assert page.locator("a.card").count() == wins  # the tiny random model never wins: none shown
    page.goto(f"{viewer}/run/probe")
    page.click("a.eval-link:text-is('step 1')")
    page.wait_for_selector("#episodes")
    assert page.locator("#episodes tbody tr").count() == 2  # eval_episodes=2
    page.click("#episodes tbody tr[data-index='1'] a")
    page.wait_for_selector("section.turn")
    assert page.url.endswith("/run/probe/eval/1/trajectory/1")
    assert page.locator("section.turn").count() >= 1
    page.close()


@pytest.fixture()
def long_trajectory(run_folder):
    """The run folder with TASPO's winning trajectory stretched to 6 turns of long observations and
    odd characters in its first output (as a random vocabulary decodes); its record index."""
    path = run_folder / "credit" / "step_1.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    index = next(i for i, r in enumerate(records) if r["success"])
    turns = records[index]["turns"]
    page = "\n".join(f"[button] product B0{k:04d} | a long WebShop results line, {k} of 14" for k in range(14))
    stretched = [{**turns[k % len(turns)], "turn": k, "observation": page} for k in range(6)]
    first = stretched[0]
    assert first["raw_output"].startswith("<think>ok</think>")
    stretched[0] = {**first, "raw_output": "<think>\x07中</think>" + first["raw_output"][17:]}
    records[index]["turns"] = stretched
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return run_folder, index


def _serve(folder):
    server = make_server("127.0.0.1", 0, create_app([folder]), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_trajectory_page_reads_at_a_glance_in_a_1400_by_1000_window(browser, long_trajectory):
    folder, index = long_trajectory
    server = _serve(folder)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"http://127.0.0.1:{server.server_port}/run/taspo-run/step/1/trajectory/{index}")
        page.wait_for_selector("pre.heatmap")
        # A − A_i, what TASPO changed token by token, is what the page shows first.
        assert page.is_checked("input[name=colour-by][value=shaping]") and page.is_visible("#shaping-note")
        tokens = page.locator("section.turn span.tok").evaluate_all(
            """spans => spans.map(s => {
                const style = getComputedStyle(s);
                return [style.boxShadow, style.color, style.backgroundColor,
                        getComputedStyle(s.closest("pre")).backgroundColor];
            })"""
        )
        assert len(tokens) > 50
        for shadow, text, background, page_background in tokens:
            assert "inset" in shadow and "1px 0px 0px" in shadow  # each token's start is drawn: a hairline
            shown = blend(background, blend(page_background))
            assert contrast(blend(text), shown) >= 4.5
        # Several turns fit the window: observation beside output, each observation a few lines high.
        tops = page.locator("section.turn").evaluate_all("sections => sections.map(s => s.getBoundingClientRect().top)")
        assert len(tops) == 6 and sum(top < 1000 for top in tops) >= 4
        sides = page.locator("section.turn").evaluate_all(
            """sections => sections.map(s => [s.querySelector('pre.observation').getBoundingClientRect().right,
                                             s.querySelector('pre.heatmap').getBoundingClientRect().left])"""
        )
        assert all(right <= left for right, left in sides)
        # What a font may not draw reads as an escape.
        assert page.locator("section.turn[data-turn='0'] .esc").all_inner_texts() == [
            "\\x07",
            "\\u4e2d",
        ]  # one token each
        # Switching to A recolours text and background together.
        page.check("input[name=colour-by][value=advantage]")
        assert page.is_hidden(".scale-range[data-name=shaping]")
        token = page.locator("section.turn span.tok").first
        expected = token.get_attribute("data-bg-advantage")
        assert rgba(token.evaluate("s => getComputedStyle(s).backgroundColor")) == pytest.approx(
            rgba(expected), abs=4e-3
        )
        page.close()
    finally:
        server.shutdown()


def test_a_uniform_outcome_trajectory_says_why_nothing_is_coloured(browser, run_folder):
    records = [json.loads(line) for line in (run_folder / "credit" / "step_1.jsonl").read_text().splitlines()]
    index = next(i for i, r in enumerate(records) if r["task_id"] == "toy2")  # the all-failed group
    server = _serve(run_folder)
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{server.server_port}/run/taspo-run/step/1/trajectory/{index}")
        page.wait_for_selector("pre.heatmap")
        assert page.is_visible("#no-credit") and "uniform outcome" in page.inner_text("#no-credit")
        assert page.inner_text(".scale-range:not([hidden])").strip() == "every token 0.000: nothing to colour"
        page.close()
    finally:
        server.shutdown()
