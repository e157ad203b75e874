"""The OpenEnv side of :mod:`agentenvs.integrations.openenv`: its types, environment, app and client.

This module imports ``openenv-core`` (and FastAPI, uvicorn) at the top; the public module
imports it only when one of its functions is called.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import inspect
import json
import math
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import gymnasium as gym
import numpy as np
import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.websockets import WebSocketDisconnect, WebSocketDisconnected

import agentenvs
from agentenvs.core.checks import is_integer
from agentenvs.core.env import TextEnv
from agentenvs.core.groups import HoldWhenFinished
from agentenvs.core.privileged import privileged_keys, strip_privileged
from agentenvs.core.registration import with_privileged

MAX_ACTION_CHARS = 1 << 16
"""Longest action text accepted (the default ``max_action_length`` of every agentenvs env)."""

MAX_SEED = (1 << 64) - 1

SERVER_LOCAL_INFO_KEYS = frozenset({"game_file"})
"""Info keys naming files on the server (ALFWorld's absolute game path): no client's business, and
they tell an attacker the server's layout. Sent only with ``expose_privileged``."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BadRequest(ValueError):
    """A request the env cannot serve: answered with ``status_code`` (4xx), never a 5xx.

    Over a WebSocket session OpenEnv sends the message back as an error frame instead.
    """

    def __init__(self, message: str, status_code: int = 422) -> None:
        super().__init__(_encodable(message if len(message) <= 500 else message[:497] + "..."))
        self.status_code = status_code


class TextAction(Action):
    """One action: the raw text the agent writes (the env projects it, as ``env.step`` does)."""

    action: str = Field(strict=True, max_length=MAX_ACTION_CHARS, description="The agent's raw output")

    @field_validator("action", mode="before")
    @classmethod
    def _replace_surrogates(cls, value: Any) -> Any:
        # JSON text may hold escaped lone surrogates, which pydantic refuses; the env would turn them
        # into U+FFFD anyway (``sanitize_model_text``), so they become that here.
        return _without_surrogates(value) if isinstance(value, str) else value


class TextObservation(Observation):
    """What the env shows after a reset or step (``done``, ``reward`` and ``metadata`` are OpenEnv's)."""

    text: str = Field(default="", description="The observation text")
    info: dict[str, Any] = Field(default_factory=dict, description="The env's info (the agentenvs contract)")
    terminated: bool = Field(default=False, description="The episode reached a terminal state")
    truncated: bool = Field(default=False, description="The episode hit max_turns")


class EpisodeState(State):
    """The session's episode: OpenEnv's ``episode_id`` and ``step_count``, and the env's own."""

    env_id: str = ""
    task_id: str | None = None
    won: bool = False
    done: bool = False


_SURROGATES = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(key): _without_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    return value


def _encodable(text: str) -> str:
    """``text`` with lone surrogates escaped, so every JSON encoder takes it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON: tuples as lists, numpy scalars as numbers, non-finite floats and
    anything else as text, strings UTF-8 encodable."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return _encodable(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, np.generic):
        return json_safe(value.item())
    if isinstance(value, dict):
        return {_encodable(str(key)): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(item) for item in value]
    return _encodable(str(value))


class TextEnvironment(Environment[TextAction, TextObservation, EpisodeState]):
    """An agentenvs env behind OpenEnv's ``Environment`` interface; one instance per session.

    Args:
        env_id: A registered agentenvs id.
        expose_privileged: Send ``info["privileged"]`` (and the env's other privileged info keys,
            and the server paths of :data:`SERVER_LOCAL_INFO_KEYS`) to clients; off by default, so
            a client that plays the agent never sees answers or the server's files.
        **env_kwargs: Passed to ``gym.make``.

    ``reset`` takes ``seed``, ``episode_id`` and ``task_id``; ``step`` takes a :class:`TextAction`
    (OpenEnv's ``timeout_s`` and ``request_id`` are accepted and not used: a step is fast).
    Anything else is refused with a :class:`BadRequest` naming it.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, *, expose_privileged: bool = False, **env_kwargs: Any) -> None:
        super().__init__()
        self.env_id = env_id
        # Exposed: the env must put privileged infos there to send. A finished episode stays
        # finished (a step after it is answered, not an error), as in a group of envs.
        kwargs = with_privileged(env_id, env_kwargs) if expose_privileged else env_kwargs
        self._env = HoldWhenFinished(gym.make(env_id, **kwargs))
        if not isinstance(self._env.unwrapped, TextEnv):
            self._env.close()
            raise TypeError(f"{env_id!r} is not an agentenvs TextEnv")
        self._hidden_keys = frozenset() if expose_privileged else privileged_keys(self._env) | SERVER_LOCAL_INFO_KEYS
        self._state = EpisodeState(env_id=env_id)
        self._started = False

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None, **unknown: Any
    ) -> TextObservation:
        """Starts an episode (on ``task_id`` if given, else a task drawn with ``seed``).

        ``episode_id`` names the episode in :attr:`state` (a fresh UUID when not given).
        """
        if unknown:
            raise BadRequest(f"unknown reset field(s) {sorted(unknown)}; supported: ['episode_id', 'seed', 'task_id']")
        if seed is not None and not (is_integer(seed) and 0 <= seed <= MAX_SEED):
            raise BadRequest(f"seed must be an integer in [0, 2**64), got {str(seed)[:40]}")
        if episode_id is not None and not (isinstance(episode_id, str) and len(episode_id) <= 255):
            raise BadRequest("episode_id must be text of at most 255 characters")
        if task_id is not None and not isinstance(task_id, str):
            raise BadRequest(f"task_id must be text, got {type(task_id).__name__}")
        options = None if task_id is None else {"task_id": task_id}
        try:
            observation, info = self._env.reset(seed=None if seed is None else int(seed), options=options)
        except ValueError as error:  # TextEnv.reset's answer to an unknown task_id, which it names
            if task_id is None:
                raise
            raise BadRequest(str(error), status_code=404) from None
        self._started = True
        self._state = EpisodeState(
            env_id=self.env_id, episode_id=episode_id or str(uuid.uuid4()), task_id=info["task_id"]
        )
        return TextObservation(text=_encodable(observation), info=self._client_info(info))

    def step(
        self,
        action: TextAction,
        timeout_s: float | None = None,
        request_id: str | None = None,
        **unknown: Any,
    ) -> TextObservation:
        """Takes one action; after the episode ended it changes nothing (``info["error"]`` says so)."""
        if unknown:
            raise BadRequest(
                f"unknown step field(s) {sorted(unknown)}; supported: ['action', 'request_id', 'timeout_s']"
            )
        if not isinstance(action, TextAction):
            raise BadRequest(f"the action must be a TextAction ({{'action': text}}), got {type(action).__name__}")
        if not self._started:
            raise BadRequest(
                "no episode: reset first. OpenEnv's HTTP /step is stateless (a fresh env per request); "
                "play episodes over a WebSocket session at /ws (openenv's EnvClient, e.g. TextEnvClient)",
                status_code=409,
            )
        observation, reward, terminated, truncated, info = self._env.step(action.action)
        done = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.won = bool(info["won"])
        self._state.done = done
        return TextObservation(
            text=_encodable(observation),
            info=self._client_info(info),
            reward=float(reward),
            done=done,
            terminated=bool(terminated),
            truncated=bool(truncated),
        )

    @property
    def state(self) -> EpisodeState:
        """The session's episode so far."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """The env id, the first line of its class docstring and the agentenvs version."""
        doc = inspect.getdoc(type(self._env.unwrapped)) or self.env_id
        return EnvironmentMetadata(
            name=self.env_id,
            description=doc.splitlines()[0],
            version=agentenvs.__version__,
        )

    def _client_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """The info a client sees: JSON values, without privileged keys unless they are exposed."""
        return json_safe(strip_privileged(info, self._hidden_keys))

    def close(self) -> None:
        """Closes the env."""
        self._env.close()


def _json_response(status_code: int, content: Any, *, close: bool = False) -> Response:
    """A JSON reply; ``close`` asks the server to close the connection after it."""
    # ensure_ascii escapes every non-ASCII character, lone surrogates included: the body always encodes.
    return Response(
        json.dumps(json_safe(content), ensure_ascii=True),
        status_code=status_code,
        media_type="application/json",
        headers={"connection": "close"} if close else None,
    )


class WebSocketGuard:
    """ASGI middleware for OpenEnv's ``/ws`` sessions: a bad frame is answered, the session kept.

    OpenEnv's handler ends the session on a frame that is not a JSON object (``[]``, ``null``)
    or not text, and, when the client hangs up first (as ``EnvClient.close`` does), raises
    ``WebSocketDisconnect`` from its ``finally``, which uvicorn logs as a server error. This
    answers such frames with an ``INVALID_JSON`` error frame without passing them on, lets a
    client's hang-up end the session quietly, and ends a connection whose session timed out
    (given the ``server``) with an error frame saying so.
    """

    def __init__(self, app: ASGIApp, server: SessionLimits | None = None) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        session: dict[str, str] = {}
        _SESSION.set(session)  # SessionLimits puts the connection's session id here

        async def checked() -> Message:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                if self.server is not None and not self.server.is_live(session.get("id")):
                    # The session timed out (OpenEnv's reaper destroyed its env): say so and end it,
                    # rather than let the connection play on without a slot.
                    await send({"type": "websocket.send", "text": _EXPIRED_FRAME})
                    return {"type": "websocket.disconnect", "code": 1000}
                frame = _readable_frame(message.get("text"))
                if frame is not None:
                    return {**message, "text": frame}
                await send({"type": "websocket.send", "text": _BAD_FRAME})

        try:
            await self.app(scope, checked, send)
        except (WebSocketDisconnect, WebSocketDisconnected):
            # The client hung up (OpenEnv's handler may then fail sending its reply): its session is
            # already destroyed by the handler's ``finally``, so there is nothing to report.
            pass


_EXPIRED_FRAME = json.dumps(
    {
        "type": "error",
        "data": {"message": "the session timed out (idle too long); connect again", "code": "SESSION_ERROR"},
    }
)
_BAD_FRAME = json.dumps(
    {"type": "error", "data": {"message": "a message must be a JSON object, as text", "code": "INVALID_JSON"}}
)


def _readable_frame(text: str | None) -> str | None:
    """The frame as OpenEnv's handler can take it, or None where it would end the session.

    A JSON object passes, with escaped lone surrogates replaced by U+FFFD (pydantic refuses them,
    and OpenEnv's error reply echoing one cannot be encoded); text that is not JSON passes too
    (the handler answers it with ``INVALID_JSON``); anything else (an array, a scalar, nesting too
    deep, a number too long, a binary frame) is None.
    """
    if text is None:
        return None
    try:
        message = json.loads(text)
    except json.JSONDecodeError:
        return text
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict):
        return None
    if "\\ud" not in text.lower():  # no escape of a code point in U+D000-U+DFFF, the surrogates' block
        return text
    return json.dumps(_without_surrogates(message))


class BodyLimit:
    """ASGI middleware: a request body over ``max_body_bytes`` gets 413, one slower than ``timeout_s`` 408.

    The body is read (at most ``max_body_bytes`` of it) before the route runs, so a route that
    catches its own body errors (OpenEnv's ``/mcp`` answers a cut body with a JSON-RPC parse
    error and 200) never sees an oversized one, chunked or not. The whole body must arrive within
    ``timeout_s`` (None: no limit) of the route being called, so a client that sends part of one
    and stalls gets 408 and its connection closed, instead of holding it for as long as it likes.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int, timeout_s: float | None = None) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length", b"")
        too_large = declared.isdigit() and int(declared) > self.max_body_bytes
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        chunks: list[bytes] = []
        size = 0
        message: Message = {"type": "http.request", "body": b"", "more_body": True}
        while not too_large and message.get("more_body", False):
            try:
                message = await asyncio.wait_for(receive(), None if deadline is None else deadline - time.monotonic())
            except asyncio.TimeoutError:
                detail = f"the body did not arrive within {self.timeout_s} s"
                await _json_response(408, {"detail": detail}, close=True)(scope, receive, send)
                return
            if message["type"] != "http.request":  # the client left: let the app see that
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            too_large = size > self.max_body_bytes
        if too_large:
            # Not closed at once: the server drops the rest of the body so that the client reads the
            # reply, for ``request_timeout_s`` at most (``RequestDeadlines``).
            await _json_response(413, {"detail": f"the body is over {self.max_body_bytes} bytes"})(scope, receive, send)
            return
        if message["type"] != "http.request":
            replay = [message]
        else:
            replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replayed() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)


_CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("openenv_client", default="")
"""The remote address of the request or WebSocket being served (set by :class:`ClientAddress`)."""
_SESSION: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("openenv_session", default=None)
"""Where the WebSocket connection being served records its session id (set by :class:`WebSocketGuard`)."""


class ClientAddress:
    """ASGI middleware: records the client's address where :class:`SessionLimits` can read it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        token = _CLIENT.set(str(client[0]) if client else "")
        try:
            await self.app(scope, receive, send)
        finally:
            _CLIENT.reset(token)


class SessionLimits(HTTPEnvServer):
    """OpenEnv's server with at most ``max_sessions_per_client`` sessions per remote address.

    Sessions (``/ws`` connections and ``openenv/session/create`` over ``/mcp``) idle longer than
    the ``ConcurrencyConfig``'s ``session_timeout`` are destroyed by OpenEnv's reaper, and a
    WebSocket session ends when its client hangs up, so no client holds a slot for ever.
    """

    def __init__(self, *args: Any, max_sessions_per_client: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_sessions_per_client = max_sessions_per_client
        self._owners: dict[str, str] = {}  # session id -> client address; pruned of ended sessions
        self._building: collections.Counter[str] = collections.Counter()  # sessions being built, per client

    async def _create_session(self) -> tuple[str, Environment]:
        client = _CLIENT.get()
        async with self._session_lock:
            # Sessions end on several paths (reaper, hang-up, MCP close): count only live ones, and
            # the ones still being built, so that connections arriving at once cannot pass together.
            self._owners = {sid: owner for sid, owner in self._owners.items() if sid in self._sessions}
            held = sum(owner == client for owner in self._owners.values()) + self._building[client]
            if held >= self.max_sessions_per_client:
                raise SessionCapacityError(
                    held,
                    self.max_sessions_per_client,
                    f"this client already holds {held} sessions, the most one address may hold "
                    f"(max_sessions_per_client={self.max_sessions_per_client}); close one or wait for it to time out",
                )
            self._building[client] += 1  # the slot is this client's from here
        created: tuple[str, Environment] | None = None
        try:
            created = await super()._create_session()
        finally:
            async with self._session_lock:  # the reservation becomes the session, in one step
                self._building[client] -= 1
                if not self._building[client]:
                    del self._building[client]
                if created is not None:
                    self._owners[created[0]] = client
        session_id, env = created
        connection = _SESSION.get()
        if connection is not None:
            connection["id"] = session_id
        return session_id, env

    def is_live(self, session_id: str | None) -> bool:
        """Whether ``session_id`` still has its env (None: no session yet, which is live too)."""
        return session_id is None or session_id in self._sessions


def create_app(
    env_id: str,
    *,
    max_sessions: int,
    max_body_bytes: int,
    session_timeout_s: float | None,
    max_sessions_per_client: int,
    request_timeout_s: float | None,
    expose_privileged: bool = False,
    **env_kwargs: Any,
) -> FastAPI:
    """OpenEnv's FastAPI app (its ``HTTPEnvServer`` routes) for ``env_id``, with 4xx for bad requests."""
    TextEnvironment(env_id, **env_kwargs).close()  # a bad env argument fails here, not per request
    factory = functools.partial(TextEnvironment, env_id, expose_privileged=expose_privileged, **env_kwargs)
    app = FastAPI(title=f"agentenvs {env_id} over OpenEnv", version=agentenvs.__version__)
    server = SessionLimits(
        factory,
        TextAction,
        TextObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout_s),
        max_sessions_per_client=max_sessions_per_client,
    )
    server.register_routes(app)

    async def bad_request(request: Request, error: Exception) -> Response:
        assert isinstance(error, BadRequest)
        return _json_response(error.status_code, {"detail": str(error)})

    async def invalid(request: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        return _json_response(422, {"detail": error.errors()})

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, StarletteHTTPException)
        return _json_response(error.status_code, {"detail": error.detail})

    app.add_exception_handler(BadRequest, bad_request)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_middleware(BodyLimit, max_body_bytes=max_body_bytes, timeout_s=request_timeout_s)  # 413 beyond it, 408 late
    app.add_middleware(WebSocketGuard, server=server)
    app.add_middleware(ClientAddress)
    return app


class Server(uvicorn.Server):
    """uvicorn's server, calling ``on_start(url)`` once it listens (with the port it got for port 0)."""

    def __init__(self, config: uvicorn.Config, on_start: Callable[[str], None] | None = None) -> None:
        super().__init__(config)
        self.on_start = on_start
        self.url = ""

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.servers:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            self.url = f"http://{host}:{port}"
            if self.on_start is not None:
                self.on_start(self.url)


class TextEnvClient(EnvClient[TextAction, TextObservation, EpisodeState]):
    """OpenEnv's WebSocket ``EnvClient`` for an agentenvs server: one session per client.

    ``step`` takes a :class:`TextAction` or plain text; ``reset`` takes ``seed``, ``task_id``
    and ``episode_id``. ``.sync()`` gives OpenEnv's synchronous wrapper.
    """

    def _step_payload(self, action: TextAction | str) -> dict[str, Any]:
        return {"action": action.action if isinstance(action, TextAction) else action}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TextObservation]:
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        observation = TextObservation(**payload.get("observation", {}), reward=reward, done=done)
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> EpisodeState:
        return EpisodeState(**payload)
