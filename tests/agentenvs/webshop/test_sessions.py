"""Shop sessions (issue #25, item 5): a flood cannot evict a live session, and visitors of
the same ``fixed_<n>`` URL never share a session."""

from __future__ import annotations

import re
from urllib.parse import quote

from agentenvs.webshop.app import create_app
from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.pages import options_token


class FakeClock:
    """A clock the test moves by hand, so no verdict depends on wall time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_flood_cannot_evict_a_live_session_and_gets_429(engine: WebShopEngine):
    clock = FakeClock()
    app = create_app(engine, max_sessions=8, session_idle_s=60.0, clock=clock)
    victim, flood = app.test_client(), app.test_client()
    assert victim.get("/victim").status_code == 200
    refused = [flood.get(f"/flood{i}") for i in range(40)]
    statuses = [response.status_code for response in refused]
    assert statuses[:7] == [200] * 7 and set(statuses[7:]) == {429}
    assert "full" in refused[-1].get_data(as_text=True)
    assert refused[-1].mimetype == "text/plain" and int(refused[-1].headers["Retry-After"]) >= 1
    clock.now += 59.0  # still live: the victim plays on
    assert victim.get("/search_results/victim/socks/1").status_code == 200
    assert flood.get("/flood-late").status_code == 429
    assert len(app.extensions["webshop_sessions"]) == 8


def test_only_sessions_idle_past_the_window_make_room(engine: WebShopEngine):
    clock = FakeClock()
    app = create_app(engine, max_sessions=8, session_idle_s=60.0, clock=clock)
    client = app.test_client()
    for i in range(8):
        assert client.get(f"/s{i}").status_code == 200
    clock.now += 30.0
    assert client.get("/search_results/s0/socks/1").status_code == 200  # s0 used again: live
    clock.now += 31.0  # s1..s7 idle 61 s, s0 idle 31 s
    assert client.get("/newcomer").status_code == 200
    assert client.get("/search_results/s1/socks/1").status_code == 404  # the idlest made room
    assert client.get("/search_results/s0/socks/1").status_code == 200
    assert len(app.extensions["webshop_sessions"]) == 8


def _session_of(response) -> str:
    return response.headers["Location"].rsplit("/", 1)[1]


def test_visitors_of_one_fixed_url_get_their_own_sessions(engine: WebShopEngine):
    app = create_app(engine, max_sessions=50)
    store = app.extensions["webshop_sessions"]
    goal = store.goals[7]
    alice, bob = app.test_client(), app.test_client()
    first, second = alice.get("/fixed_7"), bob.get("/fixed_7")
    assert first.status_code == second.status_code == 302
    mine, theirs = _session_of(first), _session_of(second)
    assert mine != theirs and re.fullmatch(r"fixed_7-[0-9a-f]{16}", mine)
    assert store.get(mine).goal is goal and store.get(theirs).goal is goal
    bought = alice.post(f"/done/{mine}/{goal.asin}/{quote(options_token({}))}")
    assert "Your score" in bought.get_data(as_text=True)
    later = bob.get("/fixed_7", follow_redirects=True).get_data(as_text=True)
    assert "Your score" not in later and 'id="search_input"' in later
    assert not store.get(theirs).done and store.get(mine).done


def test_fixed_url_search_form_post_still_works(engine: WebShopEngine):
    """The original WebShop's scripts post the search form straight to ``/fixed_<n>``."""
    app = create_app(engine, max_sessions=50)
    client = app.test_client()
    response = client.post("/fixed_3", data={"search_query": "socks"})
    assert response.status_code == 302
    location = response.headers["Location"]
    assert re.fullmatch(r"/search_results/fixed_3-[0-9a-f]{16}/socks/1", location)
    assert client.get(location).status_code == 200
