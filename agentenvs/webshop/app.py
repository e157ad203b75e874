"""The shop for people: a Flask app over the same engine as the env.

URLs follow the original site, with the session id in each: ``/<session>`` (search page;
a new id starts a session, ``fixed_<n>`` takes goal ``n`` of the shuffled goal list, any
other new id a goal drawn by weight), ``/search_results/<session>/<query>/<page>``,
``/item_page/<session>/<asin>/<query>/<page>/<options>``,
``/item_sub_page/<session>/<asin>/<query>/<page>/<sub page>/<options>`` and
``/done/<session>/<asin>/<options>`` (the purchase and its reward). Options travel as
JSON. Pages carry all navigation state, so sessions only hold their goal and result, and
one session's requests never touch another's.

Bad input gets a 4xx with a plain-text message, never a 500: an unknown session (404),
a malformed session id, query, page number or options (400), an unknown product or
sub-page (404), an oversized request (413).

Example:
    >>> from agentenvs.webshop.engine import WebShopEngine
    >>> app = create_app(WebShopEngine.generated(num_products=50, cache_index=False))
    >>> client = app.test_client()
    >>> client.get("/fixed_0").status_code, client.get("/search_results/nobody/x/1").status_code
    (200, 404)
"""

from __future__ import annotations

import json
import random
import re
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, abort, redirect, request
from werkzeug.exceptions import HTTPException

from agentenvs.webshop.data import Goal, shuffle_goals
from agentenvs.webshop.engine import MAX_QUERY_CHARS, WebShopEngine
from agentenvs.webshop.pages import SUB_PAGES, Page, page_html, results_url
from agentenvs.webshop.reward import Reward

# fullmatch and [0-9], not ``$`` and ``\d``: "$" admits a trailing newline, "\d" any
# Unicode digit ("fixed_١" would silently be goal 1).
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
FIXED_SESSION = re.compile(r"fixed_([0-9]{1,9})")
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


class SessionStore:
    """Sessions by id, at most ``capacity`` (the least recently used go first); thread-safe."""

    def __init__(self, goals: list[Goal], capacity: int, seed: int) -> None:
        self.goals = goals
        self.capacity = capacity
        self._weights = [goal.weight for goal in goals]
        self._rng = random.Random(seed)
        self._sessions: OrderedDict[str, ServerSession] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, session_id: str) -> ServerSession:
        """The session ``session_id``, created when new."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                fixed = FIXED_SESSION.fullmatch(session_id)
                if fixed is not None:
                    index = int(fixed.group(1))
                    if index >= len(self.goals):
                        abort(
                            404,
                            f"No goal {index}: this shop has {len(self.goals)} goals (fixed_0 .. fixed_{len(self.goals) - 1}).",
                        )
                    goal = self.goals[index]
                else:
                    goal = self._rng.choices(self.goals, self._weights)[0]
                session = self._sessions[session_id] = ServerSession(goal)
                if len(self._sessions) > self.capacity:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(session_id)
            return session

    def get(self, session_id: str) -> ServerSession:
        """An existing session (404 when unknown)."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            abort(404, f"Unknown session {session_id!r}: start one at /<new session id>.")
        return session

    def __len__(self) -> int:
        return len(self._sessions)


def create_app(engine: WebShopEngine, *, max_sessions: int = 10_000, seed: int = 0) -> Flask:
    """A Flask app serving ``engine``'s shop (see the module docstring)."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = 16 * 1024
    store = SessionStore(shuffle_goals(engine.goals), max_sessions, seed)
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

    def html(page: Page) -> Response:
        return Response(page_html(page), mimetype="text/html")

    @app.errorhandler(HTTPException)
    def plain_error(error: HTTPException) -> Response:
        # Messages may quote the request; backslashreplace keeps a surrogate from turning a 4xx into a 500.
        text = f"{error.code} {error.name}: {error.description}\n".encode("utf-8", "backslashreplace")
        return Response(text, status=error.code, mimetype="text/plain")

    @app.route("/")
    def home() -> Any:
        return redirect(f"/{secrets.token_hex(8)}")

    @app.route("/<session_id>", methods=["GET", "POST"])
    def index(session_id: str) -> Any:
        session = store.open(check_session_id(session_id))
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
