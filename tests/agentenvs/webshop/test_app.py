"""The Flask shop: a whole purchase, per-session state, and bad input answered with a 4xx."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from html import escape
from urllib.parse import quote

import pytest
from werkzeug.serving import make_server

from agentenvs.webshop.app import create_app
from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.pages import item_url, options_token


@pytest.fixture()
def app(engine: WebShopEngine):
    return create_app(engine, max_sessions=50)


def goal_index_with_options(engine: WebShopEngine, app) -> int:
    goals = app.extensions["webshop_sessions"].goals
    return next(i for i, g in enumerate(goals) if len(g.goal_options) == 2)


def test_whole_purchase(app, engine: WebShopEngine):
    client = app.test_client()
    index = goal_index_with_options(engine, app)
    sid = f"fixed_{index}-t"  # a session of our own on goal ``index``
    goal = app.extensions["webshop_sessions"].goals[index]
    page = client.get(f"/{sid}")
    assert page.status_code == 200 and escape(goal.instruction_text) in page.get_data(as_text=True)
    response = client.post(f"/{sid}", data={"search_query": goal.instruction_text})
    assert response.status_code == 302
    results = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "Page 1 (Total results: 50)" in results
    url = item_url(sid, goal.asin, goal.instruction_text.lower(), 1, dict(goal.goal_options))
    item = client.get(url).get_data(as_text=True)
    assert escape(engine.products[goal.asin].title) in item and " checked>" in item
    done = re.search(r'action="(/done/[^"]+)"', item).group(1)
    finished = client.post(done.replace("&#34;", '"')).get_data(as_text=True)
    assert "Your score (min 0.0, max 1.0)<pre>1.0</pre>" in finished
    store = app.extensions["webshop_sessions"]
    assert store.get(sid).done and store.get(sid).reward.total == 1.0


def test_sessions_are_independent(app):
    client = app.test_client()
    client.get("/fixed_0-t")
    client.get("/fixed_1-t")
    store = app.extensions["webshop_sessions"]
    goal = store.get("fixed_0-t").goal
    asin = goal.asin
    client.post(f"/done/fixed_0-t/{asin}/{quote(options_token({}))}")
    assert store.get("fixed_0-t").done and not store.get("fixed_1-t").done
    assert store.get("fixed_1-t").goal is store.goals[1]
    # a reload of the done page keeps the first purchase
    first = store.get("fixed_0-t").reward
    other = next(a for a in app.extensions["webshop_sessions"].goals[5:] if a.asin != asin).asin
    client.post(f"/done/fixed_0-t/{other}/{quote(options_token({}))}")
    assert store.get("fixed_0-t").reward is first


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/search_results/nobody/socks/1", 404),  # unknown session
        ("/search_results/fixed_0-t/" + "x" * 600 + "/1", 400),  # oversized query
        ("/search_results/fixed_0-t/socks/0", 400),
        ("/search_results/fixed_0-t/socks/abc", 400),
        ("/search_results/fixed_0-t/%20/1", 400),
        ("/item_page/fixed_0-t/..%2F..%2Fetc%2Fpasswd/socks/1/%7B%7D", 404),  # path traversal
        ("/../../etc/passwd", 404),
        ("/static/../../../etc/passwd", 404),
        ("/bad%20id!", 400),
        ("/fixed_99999999", 404),
        ("/item_page/fixed_0-t/ASIN/socks/1/not-json", 400),  # malformed options
        ("/item_sub_page/fixed_0-t/ASIN/socks/1/Secrets/%7B%7D", 404),
        ("/item_sub_page/fixed_0-t/ASIN/socks/1/..%2F..%2Fapp.py/%7B%7D", 404),
    ],
)
def test_bad_input_gets_a_4xx_with_a_message(app, engine: WebShopEngine, url: str, status: int):
    client = app.test_client()
    client.get("/fixed_0-t")
    asin = next(iter(engine.products))
    response = client.get(url.replace("ASIN", asin))
    assert response.status_code == status
    if response.mimetype == "text/plain":
        assert str(response.status_code) in response.get_data(as_text=True)


def test_malformed_clicks(app, engine: WebShopEngine):
    client = app.test_client()
    client.get("/fixed_0-t")
    asin = next(a for a, p in engine.products.items() if p.options)
    name = next(iter(engine.products[asin].options))
    for options, fragment in [
        ("not-json", "JSON object"),
        ("[1, 2]", "JSON object"),
        (json.dumps({name: "no such value"}), "no option"),
        (json.dumps({"nope": "x"}), "no option"),
        ("{" * 3000, "too long"),
    ]:
        response = client.get(f"/item_page/fixed_0-t/{asin}/socks/1/{quote(options, safe='')}")
        assert response.status_code == 400 and fragment in response.get_data(as_text=True)
        response = client.post(f"/done/fixed_0-t/{asin}/{quote(options, safe='')}")
        assert response.status_code == 400
    assert not app.extensions["webshop_sessions"].get("fixed_0-t").done
    response = client.post("/fixed_0-t", data={"search_query": "y" * 501})
    assert response.status_code == 400 and "longer than" in response.get_data(as_text=True)
    assert client.post("/fixed_0-t", data={"search_query": "q" * 20_000}).status_code == 413


def test_session_store_is_bounded(engine: WebShopEngine):
    app = create_app(engine, max_sessions=3)
    client = app.test_client()
    statuses = [client.get(f"/s{i}").status_code for i in range(6)]
    assert statuses == [200, 200, 200, 429, 429, 429]  # all three are live: none is evicted
    assert len(app.extensions["webshop_sessions"]) == 3
    assert client.get("/search_results/s0/x/1").status_code == 200


def test_concurrent_sessions_over_loopback(app, engine: WebShopEngine):
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    goals = app.extensions["webshop_sessions"].goals
    errors: list[str] = []

    def shopper(i: int) -> None:
        try:
            for _ in range(5):
                with urllib.request.urlopen(f"{base}/fixed_{i}") as reply:  # redirected to a new session
                    text = reply.read().decode()
                    session_id = reply.url.rsplit("/", 1)[1]
                if escape(goals[i].instruction_text) not in text:
                    errors.append(f"session {i} saw another goal")
                query = quote(goals[i].instruction_text.lower(), safe="")
                with urllib.request.urlopen(f"{base}/search_results/{session_id}/{query}/1") as reply:
                    if escape(goals[i].instruction_text) not in reply.read().decode():
                        errors.append(f"session {i} results show another goal")
        except Exception as error:  # noqa: BLE001 - collected and reported below
            errors.append(repr(error))

    try:
        threads = [threading.Thread(target=shopper, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        server.shutdown()
        thread.join()
    assert errors == []


def _nested(depth: int) -> str:
    return quote("[" * depth + "]" * depth, safe="")


@pytest.mark.parametrize(
    "url",
    [
        "/search_results/fixed_0-t/socks/%C2%B2",  # '²': isdigit() but int() fails
        "/search_results/fixed_0-t/socks/%E2%91%A2",  # '③'
        "/search_results/fixed_0-t/socks/%D9%A1",  # '١' (Arabic-Indic one): int() reads it
        "/search_results/fixed_0-t/socks/%EF%BC%91",  # '１' (fullwidth one)
        "/search_results/fixed_0-t/socks/" + "1" * 5000,  # beyond int()'s digit limit
        "/search_results/fixed_0-t/socks/%201",
        "/item_page/fixed_0-t/ASIN/socks/%C2%B2/%7B%7D",
        "/item_page/fixed_0-t/ASIN/socks/1/" + _nested(999),  # within 2,000 characters: RecursionError
        "/item_sub_page/fixed_0-t/ASIN/socks/1/Description/" + _nested(999),
        "/done/fixed_0-t/ASIN/" + _nested(999),
        "/item_page/fixed_0-t/ASIN/socks/1/" + quote('{"size": "\\ud800"}', safe=""),  # surrogate escape in a value
        "/item_page/fixed_0-t/ASIN/socks/1/" + quote('{"\\udfff": "x"}', safe=""),  # ... and in a key
        "/done/fixed_0-t/ASIN/" + quote('{"\\ud800": "\\ud800"}', safe=""),
        "/item_page/fixed_0-t/ASIN/socks/1/" + quote('{"size": {"a": "b"}}', safe=""),  # not flat
        "/item_page/fixed_0-t/ASIN/socks/1/" + quote('{"size": 3}', safe=""),
        "/item_page/fixed_0-t/ASIN/socks/1/%ED%A0%80",
        "/fixed_0%0A",  # "$" used to admit a trailing newline
        "/fixed_%D9%A1",  # '\\d' used to admit any Unicode digit
    ],
)
def test_malformed_numbers_and_options_are_400_not_500(app, engine: WebShopEngine, url: str):
    """Regression: these were 500s (ValueError, RecursionError, UnicodeEncodeError) or silently accepted."""
    app.config["TESTING"] = False  # errors become responses, as in production
    client = app.test_client()
    client.get("/fixed_0-t")
    asin = next(a for a, p in engine.products.items() if p.options)
    for method in (client.get, client.post):
        response = method(url.replace("ASIN", asin))
        assert response.status_code == 400, response.get_data(as_text=True)
        body = response.get_data(as_text=True)
        assert body.startswith("400 Bad Request: ") and len(body) > 20
    assert not app.extensions["webshop_sessions"].get("fixed_0-t").done


def test_ascii_page_numbers_still_work(app):
    client = app.test_client()
    client.get("/fixed_0-t")
    assert client.get("/search_results/fixed_0-t/socks/2").status_code == 200
    assert client.get("/search_results/fixed_0-t/socks/1000").status_code == 200
    assert client.get("/search_results/fixed_0-t/socks/1001").status_code == 400
    assert client.get("/fixed_12", follow_redirects=True).status_code == 200
