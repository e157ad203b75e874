"""A person's purchase in a real headless browser (Debian's chromium driven by Playwright)."""

from __future__ import annotations

import threading
from html import escape

import pytest
from werkzeug.serving import make_server

from agentenvs.webshop.app import create_app
from agentenvs.webshop.engine import WebShopEngine
from tests.support.browser import headless_chromium


@pytest.fixture()
def browser():
    with headless_chromium() as launched:
        yield launched


@pytest.fixture()
def shop(engine: WebShopEngine):
    app = create_app(engine)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield app, f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


@pytest.mark.slow
def test_search_open_choose_buy_in_a_browser(browser, shop, engine: WebShopEngine, tmp_path):
    app, base = shop
    goals = app.extensions["webshop_sessions"].goals
    index = next(i for i, g in enumerate(goals) if len(g.goal_options) == 2)
    goal = goals[index]
    page = browser.new_page()
    page.goto(f"{base}/fixed_{index}")
    session_id = page.url.rsplit("/", 1)[1]  # /fixed_<n> redirects to a fresh session of our own
    assert goal.instruction_text in page.inner_text("#instruction-text")
    page.fill("#search_input", goal.instruction_text)
    page.click("button:has-text('Search')")
    page.wait_for_selector("text=Total results")
    while page.locator(f"a.product-link:text-is('{goal.asin}')").count() == 0:
        page.click("button:has-text('Next >')")
        page.wait_for_load_state()
    page.click(f"a.product-link:text-is('{goal.asin}')")
    page.wait_for_selector("button:has-text('Buy Now')")
    assert engine.products[goal.asin].title in page.inner_text("h2")
    for value in goal.goal_options.values():
        page.click(f"label:text-is('{value}')")
        page.wait_for_selector(f"input[value='{escape(value)}']:checked", state="attached")
    page.click("button:has-text('Buy Now')")
    page.wait_for_selector("#reward")
    screenshot = tmp_path / "webshop-reward.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.stat().st_size > 0
    assert "Thank you for shopping with us!" in page.inner_text("body")
    assert page.inner_text("#reward pre") == "1.0"
    assert app.extensions["webshop_sessions"].get(session_id).reward.total == 1.0
