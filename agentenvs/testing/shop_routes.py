"""Hostile HTTP requests for the shop's routes (:mod:`agentenvs.webshop.app`).

:func:`hostile_requests` draws seeded requests that mix well-formed route parts (a live
session, a real ASIN, valid options) with malformed ones: Unicode digits, huge segments,
nested JSON, surrogate escapes (``%ED%A0%80``), overlong UTF-8, path traversal, missing
or extra segments, odd methods and form data. :func:`fuzz_routes` sends them through
Flask's test client and collects every 5xx. The app promises a 4xx with a message for
bad input, never a 500.

Used by ``tests/fuzz`` and ``benchmarks/fuzz_envs.py``.

Example:
    >>> from agentenvs.webshop.app import create_app
    >>> from agentenvs.webshop.engine import WebShopEngine
    >>> app = create_app(WebShopEngine.generated(num_products=50, cache_index=False))
    >>> report = fuzz_routes(app, requests=50, seed=0)
    >>> report.requests, report.server_errors
    (50, [])
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from flask import Flask

from agentenvs.webshop.pages import SUB_PAGES

__all__ = ["METHODS", "RouteFuzzReport", "fuzz_routes", "hostile_requests"]

METHODS = ("GET", "GET", "GET", "POST", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS")

_RAW_SEGMENTS = (
    "%ED%A0%80",
    "%ED%BF%BF",
    "%C0%AF",
    "%FF%FE",
    "%00",
    "%0A",
    "%0D%0A",
    "..",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2f",
    "%252e%252e%252f",
    "%C2%B2",
    "%E2%91%A2",
    "%D9%A1",
    "%EF%BC%91",
    "%F0%9F%98%80",
    "%",
    "%Z1",
    "%E2%82",
    "+",
    "%20",
    "~",
    "*",
    "%7B%7D",
    "null",
    "-1",
    "0",
    "1e3",
    "0x10",
    "1.5",
    " 1",
)
_TEXTS = (
    "",
    " ",
    "socks",
    "red shoes size 9",
    "\ud800",
    "a\udfffb",
    "\x00",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "²",
    "③",
    "١",
    "１",
    "1" * 5000,
    "9" * 10,
    "x" * 600,
    "x" * 20_000,
    "ß" * 300,
    "'; DROP TABLE goals; --",
)


def _quoted(text: str) -> str:
    """``text`` percent-encoded as UTF-8, lone surrogates included (as a client could send them)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def _options_values(rng: random.Random, product_options: dict[str, list[str]]) -> str:
    """A quoted options segment: valid, malformed, nested or with surrogate escapes."""
    name = next(iter(product_options), "color")
    value = product_options.get(name, ["black"])[0]
    depth = rng.choice((10, 200, 600, 999))
    candidates = (
        json.dumps({name: value}),
        "{}",
        json.dumps({name: "no such value"}),
        json.dumps({name: [value]}),
        json.dumps({name: {"a": value}}),
        json.dumps({name: 3}),
        json.dumps({name: None}),
        "[1, 2]",
        "not json",
        "[" * depth + "]" * depth,
        '{"a":' * (depth // 5) + "1" + "}" * (depth // 5),
        '{"\\ud800": "x"}',
        json.dumps({name: "\\ud800"}).replace("\\\\", "\\"),
        '{"a": "\\u0000"}',
        "{" * 3000,
        '{"a": 1e999}',
        '{"a": NaN}',
        '"just a string"',
        "1" * 4400,
    )
    return _quoted(rng.choice(candidates))


def _segment(rng: random.Random, good: str) -> str:
    """``good`` (quoted) most of the time, else a hostile segment."""
    roll = rng.random()
    if roll < 0.6:
        return _quoted(good)
    if roll < 0.75:
        return rng.choice(_RAW_SEGMENTS)
    return _quoted(rng.choice(_TEXTS))


def hostile_requests(
    rng: random.Random, *, asins: list[str], options: dict[str, dict[str, list[str]]], session_ids: list[str]
) -> Iterator[tuple[str, str, str | None]]:
    """Endless ``(method, path, urlencoded form body or None)`` triples for the shop's routes.

    Args:
        rng: The seeded source of randomness.
        asins: Real product ids (so some requests pass the product check).
        options: Each product's options (so some options pass).
        session_ids: Live sessions (so some requests pass the session check).
    """
    while True:
        method = rng.choice(METHODS)
        sid = _segment(rng, rng.choice(session_ids))
        asin_value = rng.choice(asins)
        asin = _segment(rng, asin_value)
        query, page = _segment(rng, "socks"), _segment(rng, str(rng.choice((1, 2, 1000, 1001))))
        sub_page = _segment(rng, rng.choice(SUB_PAGES))
        opts = _options_values(rng, options.get(asin_value, {})) if rng.random() < 0.8 else _segment(rng, "{}")
        path = rng.choice(
            (
                f"/{sid}",
                f"/search_results/{sid}/{query}/{page}",
                f"/item_page/{sid}/{asin}/{query}/{page}/{opts}",
                f"/item_sub_page/{sid}/{asin}/{query}/{page}/{sub_page}/{opts}",
                f"/done/{sid}/{asin}/{opts}",
                f"/search_results/{sid}/{query}",
                f"/item_page/{sid}/{asin}",
                f"/done/{sid}",
                "/",
                "//",
                "/static/../../x",
                f"/search_results/{sid}/{query}/{page}/extra/segments",
                f"/{sid}/{sid}/{sid}",
                "/" + "a/" * 200,
            )
        )
        if rng.random() < 0.1:
            path += "?" + rng.choice(("page=%ED%A0%80", "x=" + "y" * 5000, "a=1&a=2", "%", "q=%00"))
        form = None
        if method == "POST" and rng.random() < 0.7:
            # A urlencoded body, percent-encoded by hand: a client can send any bytes, surrogate escapes too.
            key = rng.choice(("search_query", "search_query", "other", "%ED%A0%80", ""))
            form = f"{key}={_quoted(rng.choice(_TEXTS)) if rng.random() < 0.8 else rng.choice(_RAW_SEGMENTS)}"
        yield method, path, form


@dataclass
class RouteFuzzReport:
    """What :func:`fuzz_routes` sent and got.

    Attributes:
        requests: Requests sent.
        statuses: How many responses had each status code.
        server_errors: ``(method, path, status, body start)`` of each 5xx (or raised request).
    """

    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[tuple[str, str, int, str]] = field(default_factory=list)


def fuzz_routes(app: Flask, *, requests: int, seed: int) -> RouteFuzzReport:
    """Sends ``requests`` hostile requests to ``app`` through its test client; collects the 5xx.

    The app runs with ``TESTING`` off, as in production: an unhandled error is a 500
    response here, not an exception.
    """
    rng = random.Random(seed)
    app.testing = False
    client = app.test_client()
    engine_products: dict[str, Any] = app.extensions["webshop_engine"].products
    asins = sorted(engine_products)
    options = {asin: engine_products[asin].options for asin in asins}
    session_ids = ["fixed_0-fuzz", "fixed_1-fuzz", "fuzz-session"]  # bare fixed_<n> only redirects
    for sid in session_ids:
        client.get(f"/{sid}")
    report = RouteFuzzReport()
    stream = hostile_requests(rng, asins=asins, options=options, session_ids=session_ids)
    for _ in range(requests):
        method, path, form = next(stream)
        try:
            response = client.open(
                path,
                method=method,
                data=form,
                content_type="application/x-www-form-urlencoded" if form is not None else None,
            )
            status, body = response.status_code, response.get_data()[:200].decode("utf-8", "replace")
        except Exception as error:  # the test client re-raises what the app could not turn into a response
            status, body = 599, repr(error)[:200]
        report.requests += 1
        report.statuses[status] += 1
        if status >= 500:
            report.server_errors.append((method, path[:300], status, body))
    return report
