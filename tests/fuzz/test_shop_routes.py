"""The shop's HTTP routes answer hostile requests with a 4xx and a message, never a 5xx.

Seeded requests from :func:`agentenvs.testing.shop_routes.hostile_requests` (Unicode digits,
huge segments, nested JSON options, surrogate escapes such as ``%ED%A0%80``, traversal,
missing or extra segments, wrong methods) through Flask's test client with ``TESTING``
off, as in production.
"""

from __future__ import annotations

import logging

import pytest

from agentenvs.testing.shop_routes import fuzz_routes
from agentenvs.webshop.app import create_app
from agentenvs.webshop.engine import WebShopEngine

REQUESTS = 1500


@pytest.fixture(scope="module")
def engine() -> WebShopEngine:
    return WebShopEngine.generated(num_products=200, seed=3, cache_index=False)


@pytest.mark.parametrize("seed", [0, 1])
def test_hostile_requests_never_get_a_5xx(engine: WebShopEngine, seed: int, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.CRITICAL, logger="agentenvs.webshop.app")  # Flask logs each 500 it would send
    report = fuzz_routes(create_app(engine, max_sessions=100), requests=REQUESTS, seed=seed)
    assert report.server_errors == []
    assert report.requests == REQUESTS
    # The fuzz reaches the pages (200), the checks (400, 404) and the method table (405).
    assert {200, 400, 404, 405} <= set(report.statuses), report.statuses
    assert report.statuses[200] > REQUESTS // 50 and report.statuses[400] > REQUESTS // 20, report.statuses


def test_a_route_that_fails_is_reported(engine: WebShopEngine, caplog: pytest.LogCaptureFixture):
    """The harness itself: an app that 500s on a route must show up in ``server_errors``."""
    caplog.set_level(logging.CRITICAL)
    app = create_app(engine)

    @app.route("/search_results/<session_id>/<keywords>/<page>/extra/segments")
    def broken(session_id: str, keywords: str, page: str) -> str:
        raise RuntimeError("boom")

    report = fuzz_routes(app, requests=REQUESTS, seed=0)
    assert report.server_errors and all(status == 500 for _, _, status, _ in report.server_errors)
