"""A deadline for an HTTP request's head (request line and headers) on uvicorn's h11 server.

uvicorn bounds the wait between two requests on a connection (``timeout_keep_alive``) and the size
of a request's head (``h11_max_incomplete_event_size``), but not the time a head takes: a client
that opens a connection, or sends part of a request line or headers, and then stalls holds that
connection for as long as it likes. No ASGI middleware can see such a request (the app is called
once the head is complete), so this is a subclass of uvicorn's ``H11Protocol``. The body's deadline
is the app's (``BodyLimit`` in :mod:`agentenvs.integrations._openenv`), so it holds under any ASGI
server.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_MESSAGE = b"the request's headers did not arrive in time"


class RequestHeadDeadline(H11Protocol):
    """uvicorn's h11 protocol, giving each request's head ``head_timeout_s`` seconds to arrive whole.

    The clock starts when the connection opens, and for a later request on a kept-alive connection,
    at its first byte (until then uvicorn's ``timeout_keep_alive`` applies). When it runs out, a
    client that sent part of a head gets 408 and the connection is closed; one that sent nothing is
    closed quietly, as uvicorn closes an idle kept-alive connection.
    """

    head_timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and self.conn.their_state is h11.IDLE:
            self._arm()  # the first byte of a new request; later bytes never re-arm it
        super().data_received(data)  # parses what it can, through handle_events

    def handle_events(self) -> None:
        super().handle_events()
        self._disarm_once_the_head_is_in()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _disarm_once_the_head_is_in(self) -> None:
        # A parsed head moves the client out of IDLE (to SEND_BODY, DONE or a protocol switch).
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            self._disarm()

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


def request_head_deadline(head_timeout_s: float) -> type[RequestHeadDeadline]:
    """:class:`RequestHeadDeadline` with ``head_timeout_s``, for ``uvicorn.Config(http=...)``."""
    return type("RequestHeadDeadline", (RequestHeadDeadline,), {"head_timeout_s": head_timeout_s})
