"""Deadlines uvicorn's h11 server lacks: for a request's head, and for a body answered early.

uvicorn bounds the wait between two requests on a connection (``timeout_keep_alive``) and the size
of a request's head (``h11_max_incomplete_event_size``), but not the time a head takes: a client
that opens a connection, or sends part of a request line or headers, and then stalls holds that
connection for as long as it likes. No ASGI middleware can see such a request (the app is called
once the head is complete), so this is a subclass of uvicorn's ``H11Protocol``. Likewise, after a
reply that did not wait for the whole body (a 413), uvicorn reads and drops the rest for as long
as the client sends it. The body's own deadline is the app's (``BodyLimit`` in
:mod:`agentenvs.integrations._openenv`), so it holds under any ASGI server.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_MESSAGE = b"the request's headers did not arrive in time"


class RequestDeadlines(H11Protocol):
    """uvicorn's h11 protocol, giving each request's head ``timeout_s`` seconds to arrive whole.

    The clock starts when the connection opens, and for a later request on a kept-alive connection,
    at its first byte (until then uvicorn's ``timeout_keep_alive`` applies). When it runs out, a
    client that sent part of a head gets 408 and the connection is closed; one that sent nothing is
    closed quietly, as uvicorn closes an idle kept-alive connection. A client still sending a body
    ``timeout_s`` after it was answered (the rest of a body refused with 413, read and dropped so
    that the client can read the reply) is disconnected.
    """

    timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._answered_body_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and self.conn.their_state is h11.IDLE:
            self._arm_head()  # the first byte of a new request; later bytes never re-arm it
        super().data_received(data)  # parses what it can, through handle_events

    def handle_events(self) -> None:
        super().handle_events()
        if self.transport.is_closing():
            self._cancel_timers()
            return
        if self.conn.their_state is not h11.IDLE:  # the head is in (SEND_BODY, DONE or a protocol switch)
            self._cancel_head_timer()
        if self.conn.their_state is not h11.SEND_BODY:
            self._cancel_answered_body_timer()
        if self.conn.their_state is h11.IDLE and self._head_timer is None and self.timeout_keep_alive_task is None:
            # A new cycle that neither a head deadline nor uvicorn's keep-alive watches (it began after
            # an answered body ended, which uvicorn's keep-alive timer does not cover).
            self._arm_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.SEND_BODY:
            self._cancel_answered_body_timer()
            self._answered_body_timer = self.loop.call_later(self.timeout_s, self._answered_body_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def _arm_head(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _cancel_answered_body_timer(self) -> None:
        if self._answered_body_timer is not None:
            self._answered_body_timer.cancel()
            self._answered_body_timer = None

    def _cancel_timers(self) -> None:
        self._cancel_head_timer()
        self._cancel_answered_body_timer()

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        partial, _ = self.conn.trailing_data
        if partial and self.conn.our_state is h11.IDLE:
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]
            self.transport.write(
                self.conn.send(h11.Response(status_code=408, headers=headers, reason=b"Request Timeout"))
            )
            self.transport.write(self.conn.send(h11.Data(data=_MESSAGE)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()

    def _answered_body_timed_out(self) -> None:
        self._answered_body_timer = None
        if not self.transport.is_closing() and self.conn.their_state is h11.SEND_BODY:
            self.transport.close()


def request_deadlines(timeout_s: float) -> type[RequestDeadlines]:
    """:class:`RequestDeadlines` with ``timeout_s``, for ``uvicorn.Config(http=...)``."""
    return type("RequestDeadlines", (RequestDeadlines,), {"timeout_s": timeout_s})
