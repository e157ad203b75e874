"""Any agentenvs env over OpenEnv's HTTP/WebSocket protocol (``openenv-core``), and its client.

:func:`serve` runs OpenEnv's own server (``create_fastapi_app`` around an OpenEnv
``Environment``) on loopback by default. As in OpenEnv, each WebSocket connection to ``/ws``
is a session with its own env (``max_sessions`` at once, ``max_sessions_per_client`` per remote
address, each destroyed after ``session_timeout_s`` idle or when its client hangs up): that is how an episode is played,
with OpenEnv's ``EnvClient`` (:class:`TextEnvClient` here). The HTTP ``/reset`` and ``/step``
routes are OpenEnv's stateless ones (a fresh env per request), and ``/health``, ``/schema``,
``/metadata`` and ``/state`` are there too. Actions are ``{"action": text}``
(:class:`TextAction`); observations carry ``text``, the env's ``info``, ``reward``, ``done``,
``terminated`` and ``truncated`` (:class:`TextObservation`). A bad request (malformed JSON,
unknown fields, wrong types, a body over ``max_body_bytes``, an unknown task) gets a 4xx whose
JSON names the problem, never a 5xx; a request whose headers or body do not arrive within
``request_timeout_s`` gets 408 and its connection closed.

Example::

    # shell: python -m agentenvs serve SearchQA-v0 --port 8000
    from agentenvs.integrations.openenv import TextEnvClient
    with TextEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)                               # or task_id=...
        result = env.step("<search>Fethstoul Systems</search>")  # result.observation.text, .reward, .done

Importing this module does not import ``openenv-core``; its functions and classes do.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentenvs.core.checks import check_bool, check_float, check_int, check_str
from agentenvs.core.hosts import default_sessions_per_client

if TYPE_CHECKING:
    from fastapi import FastAPI

    from agentenvs.integrations._openenv import (
        BadRequest,
        EpisodeState,
        Server,
        TextAction,
        TextEnvClient,
        TextEnvironment,
        TextObservation,
    )

DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 16
DEFAULT_MAX_BODY_BYTES = 1 << 20
"""1 MiB: an action of ``MAX_ACTION_CHARS`` (65,536) characters fits four bytes each."""
DEFAULT_SESSION_TIMEOUT_S = 300.0
"""A session with no message for this long is destroyed, so an idle client cannot hold its slot."""
DEFAULT_REQUEST_TIMEOUT_S = 10.0
"""An HTTP request's headers, and then its body, must each arrive within this long, or it gets 408."""

_CLASSES = ("BadRequest", "EpisodeState", "Server", "TextAction", "TextEnvClient", "TextEnvironment", "TextObservation")

__all__ = [
    "BadRequest",
    "EpisodeState",
    "Server",
    "TextAction",
    "TextEnvClient",
    "TextEnvironment",
    "TextObservation",
    "create_app",
    "make_server",
    "serve",
]


def __getattr__(name: str) -> Any:
    """The OpenEnv classes, imported on first use (they subclass ``openenv-core``'s)."""
    if name in _CLASSES:
        return getattr(_import_openenv(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _import_openenv() -> Any:
    try:
        from agentenvs.integrations import _openenv
    except ImportError as error:
        raise ImportError(
            f"agentenvs.integrations.openenv needs openenv-core with its server packages ({error}); "
            'install them with `pip install "agentenvs[openenv]"`'
        ) from error
    return _openenv


def create_app(
    env_id: str,
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    session_timeout_s: float | None = DEFAULT_SESSION_TIMEOUT_S,
    max_sessions_per_client: int | None = None,
    request_timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    expose_privileged: bool = False,
    **env_kwargs: Any,
) -> FastAPI:
    """OpenEnv's FastAPI app serving ``env_id`` (what :func:`serve` runs).

    Args:
        env_id: A registered agentenvs id.
        max_sessions: WebSocket sessions at once (each has its own env).
        max_body_bytes: Longest request body and WebSocket message; longer bodies get 413.
        session_timeout_s: A session (a ``/ws`` connection, or one made by ``openenv/session/create``
            over ``/mcp``) with no message for this long is destroyed and its slot freed (OpenEnv's
            reaper checks every ``max(session_timeout_s / 4, 5)`` seconds); None keeps sessions
            until their client hangs up or closes them.
        max_sessions_per_client: Sessions one remote address may hold at once; None: half of
            ``max_sessions``, at least 1. A client over it is refused like one over
            ``max_sessions`` (a ``CAPACITY_REACHED`` error frame, a JSON-RPC error over ``/mcp``).
        request_timeout_s: Seconds a request's body may take to arrive whole, from its headers;
            a slower one gets 408 and its connection is closed (the headers' own deadline is the
            server's: :func:`make_server`). None: no limit.
        expose_privileged: Send ``info["privileged"]`` (gold answers, target products, expert
            plans) to clients. Off by default: the client is usually the agent.
        **env_kwargs: Passed to ``gym.make`` for every session's env (checked now).
    """
    owner = "create_app"
    env_id = check_str(owner, "env_id", env_id)
    max_sessions = check_int(owner, "max_sessions", max_sessions, minimum=1)
    max_body_bytes = check_int(owner, "max_body_bytes", max_body_bytes, minimum=1024)
    session_timeout_s = check_float(
        owner, "session_timeout_s", session_timeout_s, minimum=0.0, min_inclusive=False, optional=True
    )
    per_client = check_int(owner, "max_sessions_per_client", max_sessions_per_client, minimum=1, optional=True)
    request_timeout_s = _check_request_timeout(owner, request_timeout_s)
    expose_privileged = check_bool(owner, "expose_privileged", expose_privileged)
    return _import_openenv().create_app(
        env_id,
        max_sessions=max_sessions,
        max_body_bytes=max_body_bytes,
        session_timeout_s=session_timeout_s,
        max_sessions_per_client=default_sessions_per_client(max_sessions) if per_client is None else per_client,
        request_timeout_s=request_timeout_s,
        expose_privileged=expose_privileged,
        **env_kwargs,
    )


def _check_request_timeout(owner: str, request_timeout_s: Any) -> float | None:
    return check_float(owner, "request_timeout_s", request_timeout_s, minimum=0.0, min_inclusive=False, optional=True)


def make_server(
    env_id: str,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    session_timeout_s: float | None = DEFAULT_SESSION_TIMEOUT_S,
    max_sessions_per_client: int | None = None,
    request_timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    log_level: str = "warning",
    on_start: Callable[[str], None] | None = None,
    **env_kwargs: Any,
) -> Server:
    """A uvicorn server for :func:`create_app`; ``.run()`` serves until stopped.

    Args:
        env_id: A registered agentenvs id.
        host: Address to listen on; loopback by default (the server has no authentication).
        port: Port to listen on; 0 picks a free one (``on_start`` receives the URL).
        max_sessions: See :func:`create_app`.
        max_body_bytes: See :func:`create_app`.
        session_timeout_s: See :func:`create_app`.
        max_sessions_per_client: See :func:`create_app`; None on a loopback ``host``: ``max_sessions``
            (every local client has the same address), elsewhere half of it.
        request_timeout_s: Seconds a request's headers may take to arrive whole, from the
            connection opening (or the request's first byte on a kept-alive connection), and its
            body then as many (see :func:`create_app`). A client that sent part of the headers
            gets 408, one that sent nothing is disconnected; other clients are served meanwhile.
            None: no limit (uvicorn's own behaviour).
        log_level: uvicorn's log level.
        on_start: Called with the server's URL once it listens.
        **env_kwargs: Passed to ``gym.make``.
    """
    owner = "make_server"
    host = check_str(owner, "host", host)
    port = check_int(owner, "port", port, minimum=0, maximum=65535)
    log_level = check_str(owner, "log_level", log_level)
    request_timeout_s = _check_request_timeout(owner, request_timeout_s)
    openenv = _import_openenv()
    if max_sessions_per_client is None:  # all of them on loopback, where every client has one address
        max_sessions_per_client = default_sessions_per_client(
            check_int(owner, "max_sessions", max_sessions, minimum=1), host
        )
    app = create_app(
        env_id,
        max_sessions=max_sessions,
        max_body_bytes=max_body_bytes,
        session_timeout_s=session_timeout_s,
        max_sessions_per_client=max_sessions_per_client,
        request_timeout_s=request_timeout_s,
        **env_kwargs,
    )
    import uvicorn

    from agentenvs.integrations._request_deadline import request_deadlines

    # uvicorn has no setting for how long a request's headers may take: its h11 protocol gets one.
    http = "auto" if request_timeout_s is None else request_deadlines(request_timeout_s)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=http,
        ws_max_size=max_body_bytes,
        timeout_graceful_shutdown=5,
    )
    return openenv.Server(config, on_start=on_start)


def serve(
    env_id: str,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    session_timeout_s: float | None = DEFAULT_SESSION_TIMEOUT_S,
    max_sessions_per_client: int | None = None,
    request_timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    log_level: str = "warning",
    **env_kwargs: Any,
) -> None:
    """Serves ``env_id`` over OpenEnv's protocol until interrupted (Ctrl-C), printing its URL.

    Arguments as for :func:`make_server`.
    """

    def announce(url: str) -> None:
        print(
            f"serving {env_id} over OpenEnv at {url} (sessions: WebSocket {url.replace('http', 'ws', 1)}/ws; "
            "Ctrl-C stops)",
            file=sys.stdout,
            flush=True,
        )

    make_server(
        env_id,
        host,
        port,
        max_sessions=max_sessions,
        max_body_bytes=max_body_bytes,
        session_timeout_s=session_timeout_s,
        max_sessions_per_client=max_sessions_per_client,
        request_timeout_s=request_timeout_s,
        log_level=log_level,
        on_start=announce,
        **env_kwargs,
    ).run()
