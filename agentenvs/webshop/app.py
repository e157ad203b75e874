"""The shop for people: a Flask app over the same engine as the env.

URLs follow the original site, with the session id in each: ``/<session>`` (search page;
a new id starts a session on a goal drawn by weight), ``/search_results/<session>/<query>/<page>``,
``/item_page/<session>/<asin>/<query>/<page>/<options>``,
``/item_sub_page/<session>/<asin>/<query>/<page>/<sub page>/<options>`` and
``/done/<session>/<asin>/<options>`` (the purchase and its reward). Options travel as
JSON. Pages carry all navigation state, so sessions only hold their goal and result, and
one session's requests never touch another's.

``fixed_<n>`` names goal ``n`` of the shuffled goal list, not a session: every visit to
``/fixed_<n>`` starts a fresh session of its own on that goal and redirects to it
(``/fixed_<n>-<16 hex digits>``; a search form posted to ``/fixed_<n>``, as the original
WebShop's scripts do, goes to that new session's results). So one visitor's purchase never
shows to another, and the original ``fixed_<n>`` URLs still work as entry points. A client
may also name its own session ``fixed_<n>-<anything>``: a new such id starts a session on
goal ``n``, a known one continues it.

The store holds at most ``max_sessions`` sessions. A session is live while it was used in
the last ``session_idle_s`` seconds (default 30 minutes); only sessions idle longer may be
evicted (the least recently used first) to make room, so a flood of new sessions cannot push
out a shopper's live one: once the store is full of live sessions, a new one is refused with
429 and a ``Retry-After`` saying when the idlest session can give way. One client address
holds at most ``max_sessions_per_client`` sessions (by default half of ``max_sessions`` for a
remote address, all of them for a loopback one: local clients, a trainer's many rollouts
included, all have that one address): past that, a new one takes the place of that client's own
idlest session if it idled out, and is otherwise refused with 429 and ``Retry-After``, so one
client cannot fill the store and lock out the rest.

Bad input gets a 4xx with a plain-text message, never a 500: an unknown session (404),
a malformed session id, query, page number or options (400), an unknown product or
sub-page (404), an oversized request (413).

Example:
    >>> from agentenvs.webshop.engine import WebShopEngine
    >>> app = create_app(WebShopEngine.generated(num_products=50, cache_index=False))
    >>> client = app.test_client()
    >>> client.get("/fixed_0").headers["Location"][:9], client.get("/search_results/nobody/x/1").status_code
    ('/fixed_0-', 404)
"""

from __future__ import annotations

import json
import math
import random
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, abort, redirect, request
from werkzeug.exceptions import ClientDisconnected, HTTPException, TooManyRequests

from agentenvs.core.checks import check_float, check_int
from agentenvs.core.hosts import default_sessions_per_client
from agentenvs.webshop.data import Goal, shuffle_goals
from agentenvs.webshop.engine import MAX_QUERY_CHARS, WebShopEngine
from agentenvs.webshop.pages import SUB_PAGES, Page, page_html, results_url
from agentenvs.webshop.reward import Reward

# fullmatch and [0-9], not ``$`` and ``\d``: "$" admits a trailing newline, "\d" any
# Unicode digit ("fixed_١" would silently be goal 1).
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# ``fixed_<n>`` alone is an entry point (a fresh session per visit); with a suffix it is a session.
FIXED_GOAL = re.compile(r"fixed_([0-9]{1,9})")
FIXED_SESSION = re.compile(r"fixed_([0-9]{1,9})-[A-Za-z0-9_-]+")
SESSION_IDLE_S = 30 * 60.0
MAX_PAGE = 1000
MAX_OPTIONS_CHARS = 2000
OPTIONS_FORMAT = 'Options must be a flat JSON object of strings such as {"color": "black"}.'


def parse_page_number(page: str) -> int | None:
    """``page`` as a number from 1 to :data:`MAX_PAGE`, or None.

    ASCII digits only: ``str.isdigit`` admits ``²`` and ``③`` (which ``int`` rejects) and
    ``int`` reads ``١`` and ``１``; a length cap keeps ``int`` off 5,000-digit strings.

    >>> parse_page_number("12"), parse_page_number("²"), parse_page_number("１"), parse_page_number("0")
    (12, None, None, None)
    """
    if not (0 < len(page) <= len(str(MAX_PAGE)) and page.isascii() and page.isdigit()):
        return None
    number = int(page)
    return number if 1 <= number <= MAX_PAGE else None


def parse_options(text: str) -> dict[str, str] | None:
    """``text`` as a flat JSON object of strings, or None (malformed, nested, too long).

    >>> parse_options('{"color": "black"}'), parse_options('{"color": ["black"]}'), parse_options("[" * 999 + "]" * 999)
    ({'color': 'black'}, None, None)
    """
    if len(text) > MAX_OPTIONS_CHARS:
        return None
    try:
        options = json.loads(text)
    except (ValueError, RecursionError):  # deep nesting fits in 2,000 characters
        return None
    if not isinstance(options, dict) or not all(isinstance(value, str) for value in options.values()):
        return None
    return options


@dataclass
class ServerSession:
    """What the server keeps per shopper: the goal and, after ``Buy Now``, the result."""

    goal: Goal
    done: bool = False
    reward: Reward | None = None
    purchased_asin: str = ""
    last_used: float = 0.0
    client: str = ""
    """The address that opened the session (what ``max_sessions_per_client`` counts)."""


class SessionStore:
    """Sessions by id, at most ``capacity`` (``per_client(address)`` per client address); thread-safe.

    Only a session idle for more than ``idle_s`` seconds (by ``clock``) may be evicted to make
    room; when every session is live a new one is refused with 429. A client holding
    ``per_client(address)`` sessions (None: no cap but ``capacity``) may open another only in
    place of its own idlest one, once that idled out; until then it gets 429.

    >>> from types import SimpleNamespace
    >>> now = [0.0]  # a hand-moved clock
    >>> store = SessionStore([SimpleNamespace(weight=1.0)], capacity=1, seed=0, idle_s=60, clock=lambda: now[0])
    >>> _ = store.open("alice")
    >>> store.retry_after()  # alice is live for 60 s more
    60
    >>> now[0] = 61.0
    >>> _ = store.open("bob")  # alice idled out, so bob takes her place
    >>> len(store), store.retry_after()
    (1, 60)
    """

    def __init__(
        self,
        goals: list[Goal],
        capacity: int,
        seed: int,
        *,
        idle_s: float = SESSION_IDLE_S,
        per_client: Callable[[str], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 1 or not idle_s > 0:
            raise ValueError(f"SessionStore needs capacity >= 1 and idle_s > 0, got {capacity} and {idle_s}.")
        self.goals = goals
        self.capacity = capacity
        self.idle_s = idle_s
        self.per_client = per_client
        self.clock = clock
        self._weights = [goal.weight for goal in goals]
        self._rng = random.Random(seed)
        # Least recently used first, so the first entry is always the idlest.
        self._sessions: OrderedDict[str, ServerSession] = OrderedDict()
        # Each client's session ids, least recently used first too; kept in step with ``_sessions``.
        self._by_client: dict[str, OrderedDict[str, None]] = {}
        self._lock = threading.Lock()

    def goal(self, index: int) -> Goal:
        """Goal ``index`` (404 naming the valid range when there is none)."""
        if index >= len(self.goals):
            abort(
                404, f"No goal {index}: this shop has {len(self.goals)} goals (fixed_0 .. fixed_{len(self.goals) - 1})."
            )
        return self.goals[index]

    def open(self, session_id: str, goal: Goal | None = None, *, client: str = "") -> ServerSession:
        """The session ``session_id``, created when new (on ``goal``, its ``fixed_<n>-`` goal or a
        drawn one) for ``client`` (its address).

        Raises a 429 when the store is full of live sessions, or ``client`` holds ``per_client``
        live ones.
        """
        with self._lock:
            now = self.clock()
            session = self._sessions.get(session_id)
            if session is None:
                if goal is None:
                    fixed = FIXED_SESSION.fullmatch(session_id)
                    if fixed is not None:
                        goal = self.goal(int(fixed.group(1)))
                    else:
                        goal = self._rng.choices(self.goals, self._weights)[0]
                self._make_room_for(client, now)
                self._make_room(now)
                session = self._sessions[session_id] = ServerSession(goal, client=client)
                self._by_client.setdefault(client, OrderedDict())[session_id] = None
            self._touch(session_id, session, now)
            return session

    def get(self, session_id: str) -> ServerSession:
        """An existing session (404 when unknown); using it keeps it live."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                self._touch(session_id, session, self.clock())
        if session is None:
            abort(404, f"Unknown session {session_id!r}: start one at /<new session id>.")
        return session

    def retry_after(self) -> int:
        """Whole seconds until a new session could get a place (0: there is room now)."""
        with self._lock:
            return self._retry_after(self.clock())

    def _retry_after(self, now: float) -> int:
        if len(self._sessions) < self.capacity:
            return 0
        return self._wait(next(iter(self._sessions.values())), now)

    def _wait(self, session: ServerSession, now: float) -> int:
        """Whole seconds until ``session`` may be evicted (0: now)."""
        wait = session.last_used + self.idle_s - now
        # Idle exactly ``idle_s`` is still live (evictable only when idle longer), hence at least 1 s.
        return 0 if wait < 0 else max(1, math.ceil(wait))

    def _make_room(self, now: float) -> None:
        while len(self._sessions) >= self.capacity:
            wait = self._retry_after(now)
            if wait > 0:
                raise TooManyRequests(
                    f"The shop is full ({self.capacity} sessions in use); try again in {wait} s.",
                    retry_after=wait,
                )
            self._evict(next(iter(self._sessions)))

    def _make_room_for(self, client: str, now: float) -> None:
        """Evicts ``client``'s own idlest session if it holds ``per_client`` and that one idled out."""
        owned = self._by_client.get(client)
        if self.per_client is None or not owned:
            return
        limit = self.per_client(client)
        if limit >= self.capacity:  # no cap but the store's own, whose 429 says the shop is full
            return
        while owned and len(owned) >= limit:
            idlest = next(iter(owned))
            wait = self._wait(self._sessions[idlest], now)
            if wait > 0:
                raise TooManyRequests(
                    f"This client already holds {len(owned)} live sessions, the most one address may hold "
                    f"(max_sessions_per_client={limit}); finish one, or try again in {wait} s.",
                    retry_after=wait,
                )
            self._evict(idlest)

    def _evict(self, session_id: str) -> None:
        session = self._sessions.pop(session_id)
        owned = self._by_client[session.client]
        del owned[session_id]
        if not owned:
            del self._by_client[session.client]

    def _touch(self, session_id: str, session: ServerSession, now: float) -> None:
        session.last_used = now
        self._sessions.move_to_end(session_id)
        self._by_client[session.client].move_to_end(session_id)

    def __len__(self) -> int:
        return len(self._sessions)


def create_app(
    engine: WebShopEngine,
    *,
    max_sessions: int = 10_000,
    seed: int = 0,
    session_idle_s: float = SESSION_IDLE_S,
    max_sessions_per_client: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Flask:
    """A Flask app serving ``engine``'s shop (see the module docstring).

    Args:
        engine: The shop's products, goals and search.
        max_sessions: Most sessions held at once (memory stays bounded).
        seed: Seed of the goal order and of drawn goals.
        session_idle_s: Seconds after its last request that a session may be evicted for a new one.
        max_sessions_per_client: Most sessions one client address holds at once; None: half of
            ``max_sessions`` (at least 1) for a remote address, all of them for a loopback one,
            which every local client shares. A client over it gets 429 with ``Retry-After``.
        clock: Seconds, monotonic; tests inject a fake one.
    """
    owner = "create_app"
    max_sessions = check_int(owner, "max_sessions", max_sessions, minimum=1)
    session_idle_s = check_float(owner, "session_idle_s", session_idle_s, minimum=0.0, min_inclusive=False)
    cap = check_int(owner, "max_sessions_per_client", max_sessions_per_client, minimum=1, optional=True)

    def per_client(address: str) -> int:
        return default_sessions_per_client(max_sessions, address) if cap is None else cap

    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = 16 * 1024
    store = SessionStore(
        shuffle_goals(engine.goals),
        max_sessions,
        seed,
        idle_s=session_idle_s,
        per_client=per_client,
        clock=clock,
    )
    app.extensions["webshop_sessions"] = store
    app.extensions["webshop_engine"] = engine
    search_lock = threading.Lock()

    def check_session_id(session_id: str) -> str:
        if not SESSION_ID.fullmatch(session_id):
            abort(400, "A session id is 1-64 letters, digits, '_' or '-'.")
        return session_id

    def check_query(keywords: str) -> str:
        keywords = " ".join(keywords.lower().split())
        if not keywords:
            abort(400, "The search query is empty.")
        if len(keywords) > MAX_QUERY_CHARS:
            abort(400, f"The search query is longer than {MAX_QUERY_CHARS} characters.")
        return keywords

    def check_page(page: str) -> int:
        number = parse_page_number(page)
        if number is None:
            abort(400, f"The page number must be an integer from 1 to {MAX_PAGE}.")
        return number

    def check_product(asin: str):
        product = engine.products.get(asin)
        if product is None:
            abort(404, f"Unknown product {asin[:40]!r}.")
        return product

    def check_options(text: str, asin: str) -> dict[str, str]:
        if len(text) > MAX_OPTIONS_CHARS:
            abort(400, "The options are too long.")
        options = parse_options(text)
        if options is None:
            abort(400, OPTIONS_FORMAT)
        offered = engine.products[asin].options
        for name, value in options.items():
            if name not in offered or value not in offered[name]:
                # repr, not str: a "\ud800" escape in the JSON must not reach the encoder raw.
                abort(400, f"The product has no option {name[:40]!r}={value[:40]!r}.")
        return options

    def client_address() -> str:
        # The peer's address: behind a reverse proxy, the proxy's for every client.
        return request.remote_addr or ""

    def html(page: Page) -> Response:
        return Response(page_html(page), mimetype="text/html")

    @app.errorhandler(HTTPException)
    def plain_error(error: HTTPException) -> Response:
        # Messages may quote the request; backslashreplace keeps a surrogate from turning a 4xx into a 500.
        text = f"{error.code} {error.name}: {error.description}\n".encode("utf-8", "backslashreplace")
        response = Response(text, status=error.code, mimetype="text/plain")
        for name, value in error.get_headers():
            if name.lower() == "retry-after":
                response.headers[name] = value
        return response

    @app.errorhandler(ClientDisconnected)
    def body_cut_short(error: ClientDisconnected) -> Response:
        # The body stopped short of its length: the client left, or went silent past the server's
        # timeout (agentenvs.webshop.server). Either way it did not arrive in time.
        text = "408 Request Timeout: the request's body did not arrive whole.\n"
        return Response(text, status=408, mimetype="text/plain")

    @app.route("/")
    def home() -> Any:
        return redirect(f"/{secrets.token_hex(8)}")

    @app.route("/<session_id>", methods=["GET", "POST"])
    def index(session_id: str) -> Any:
        fixed = FIXED_GOAL.fullmatch(session_id)
        if fixed is not None:
            # A goal, not a session: each visitor gets a fresh session of their own on it.
            goal = store.goal(int(fixed.group(1)))
            searched = request.method == "POST" and "search_query" in request.form
            keywords = check_query(request.form["search_query"]) if searched else ""
            session_id = f"{session_id}-{secrets.token_hex(8)}"
            store.open(session_id, goal, client=client_address())
            return redirect(results_url(session_id, keywords, 1) if searched else f"/{session_id}")
        session = store.open(check_session_id(session_id), client=client_address())
        if request.method == "POST" and "search_query" in request.form:
            keywords = check_query(request.form["search_query"])
            return redirect(results_url(session_id, keywords, 1))
        return html(Page(kind="search", instruction=session.goal.instruction_text, session_id=session_id))

    @app.route("/search_results/<session_id>/<keywords>/<page>", methods=["GET", "POST"])
    def search_results(session_id: str, keywords: str, page: str) -> Any:
        session = store.get(check_session_id(session_id))
        keywords, page_number = check_query(keywords), check_page(page)
        with search_lock:
            results = engine.results_page(session.goal.instruction_text, keywords, page_number, session_id)
        return html(results)

    @app.route("/item_page/<session_id>/<asin>/<keywords>/<page>/<options>", methods=["GET", "POST"])
    def item_page(session_id: str, asin: str, keywords: str, page: str, options: str) -> Any:
        session = store.get(check_session_id(session_id))
        check_product(asin)
        keywords, page_number = check_query(keywords), check_page(page)
        chosen = check_options(options, asin)
        return html(engine.item_page(session.goal.instruction_text, asin, keywords, page_number, chosen, session_id))

    @app.route("/item_sub_page/<session_id>/<asin>/<keywords>/<page>/<sub_page>/<options>", methods=["GET", "POST"])
    def item_sub_page(session_id: str, asin: str, keywords: str, page: str, sub_page: str, options: str) -> Any:
        session = store.get(check_session_id(session_id))
        check_product(asin)
        keywords, page_number = check_query(keywords), check_page(page)
        allowed = SUB_PAGES if engine.show_attrs else SUB_PAGES[:3]
        if sub_page not in allowed:
            abort(404, f"Unknown sub-page {sub_page[:40]!r}; one of {', '.join(allowed)}.")
        chosen = check_options(options, asin)
        return html(
            engine.item_page(
                session.goal.instruction_text, asin, keywords, page_number, chosen, session_id, sub_page=sub_page
            )
        )

    @app.route("/done/<session_id>/<asin>/<options>", methods=["GET", "POST"])
    def done(session_id: str, asin: str, options: str) -> Any:
        session = store.get(check_session_id(session_id))
        check_product(asin)
        chosen = check_options(options, asin)
        if not session.done:  # a reload shows the first purchase's result
            session.reward = engine.purchase(session.goal, asin, chosen)
            session.done, session.purchased_asin = True, asin
        assert session.reward is not None
        return html(
            Page(
                kind="done",
                instruction=session.goal.instruction_text,
                session_id=session_id,
                reward=session.reward.total,
                reward_info=session.reward.as_info(),
            )
        )

    return app
