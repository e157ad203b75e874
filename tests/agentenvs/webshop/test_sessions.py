"""Shop sessions (issue #25, item 5): a flood cannot evict a live session, and visitors of
the same ``fixed_<n>`` URL never share a session."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

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


def client_at(app, address: str):
    """A test client whose requests come from ``address``."""
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def test_one_client_cannot_fill_the_store_and_lock_others_out(engine: WebShopEngine):
    """Before, one address could take every place (8 of 8 here) and every other visitor got 429."""
    clock = FakeClock()
    app = create_app(engine, max_sessions=8, session_idle_s=60.0, clock=clock)
    flood = client_at(app, "203.0.113.7")
    victim = client_at(app, "198.51.100.2")
    assert victim.get("/victim").status_code == 200
    flooded = [flood.get(f"/flood{i}") for i in range(20)] + [flood.get("/fixed_3") for _ in range(5)]
    statuses = [response.status_code for response in flooded]
    assert statuses[:4] == [200] * 4 and set(statuses[4:]) == {429}  # half of max_sessions, by default
    refused = flooded[-1]
    assert refused.mimetype == "text/plain" and 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "max_sessions_per_client=4" in refused.get_data(as_text=True)
    # The others are served: the victim plays on and opens more, another address too.
    assert victim.get("/search_results/victim/socks/1").status_code == 200
    assert victim.get("/victim-2").status_code == 200
    assert client_at(app, "192.0.2.1").get("/newcomer").status_code == 200
    clock.now += 61.0  # the flood's sessions idled out: its next one takes the place of its idlest
    assert victim.get("/search_results/victim/socks/1").status_code == 200
    assert flood.get("/flood-late").status_code == 200
    assert flood.get("/search_results/flood0/socks/1").status_code == 404
    assert victim.get("/search_results/victim/socks/1").status_code == 200
    assert len(app.extensions["webshop_sessions"]) <= 8


def test_loopback_clients_share_one_address_so_they_may_hold_every_session(engine: WebShopEngine):
    """Every local client (a trainer's many rollouts) is 127.0.0.1: by default the cap is the store's."""
    app = create_app(engine, max_sessions=6)
    local = app.test_client()  # REMOTE_ADDR 127.0.0.1
    assert [local.get(f"/s{i}").status_code for i in range(7)] == [200] * 6 + [429]
    assert "full" in local.get("/s7").get_data(as_text=True)
    capped = create_app(engine, max_sessions=6, max_sessions_per_client=2).test_client()  # named: loopback too
    assert [capped.get(f"/s{i}").status_code for i in range(3)] == [200, 200, 429]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "2", True])
def test_max_sessions_per_client_is_checked(engine: WebShopEngine, bad):
    with pytest.raises(ValueError, match=r"create_app\.max_sessions_per_client"):
        create_app(engine, max_sessions_per_client=bad)
