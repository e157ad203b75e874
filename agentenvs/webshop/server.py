"""The shop's HTTP server: werkzeug's threaded one, closing connections whose client is slow.

werkzeug's server has no timeout of its own: a client that sends part of a request and stalls
holds a thread for as long as it likes. Here a request must arrive whole within
``request_timeout_s`` of the server starting to read it: each read waits only for what is left
of that deadline, so a client trickling a byte at a time is stopped as one that went silent
is. Past it, a client still sending its request line or headers is disconnected, and one still
sending its body gets 408 (the app's ``TimeoutError`` handler).
"""

from __future__ import annotations

import socket
import time
from typing import Any

from flask import Flask
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from agentenvs.core.checks import check_float, check_int, check_str

REQUEST_TIMEOUT_S = 10.0


def make_shop_server(
    app: Flask, host: str = "127.0.0.1", port: int = 3000, *, request_timeout_s: float = REQUEST_TIMEOUT_S
) -> BaseWSGIServer:
    """A threaded server for ``app`` (``.serve_forever()`` serves; port 0 picks a free one)."""
    owner = "make_shop_server"
    host = check_str(owner, "host", host)
    port = check_int(owner, "port", port, minimum=0, maximum=65535)
    timeout = check_float(owner, "request_timeout_s", request_timeout_s, minimum=0.0, min_inclusive=False)
    handler = type("ShopRequestHandler", (DeadlineRequestHandler,), {"timeout": timeout})
    return make_server(host, port, app, threaded=True, request_handler=handler)


class DeadlineReader:
    """A connection's reading end whose reads share one deadline (:meth:`start` sets it)."""

    def __init__(self, raw: Any, connection: socket.socket, seconds: float) -> None:
        self._raw, self._connection, self._seconds = raw, connection, seconds
        self._deadline = time.monotonic() + seconds

    def start(self) -> None:
        """A new request: the whole of it must arrive within ``seconds`` from now."""
        self._deadline = time.monotonic() + self._seconds

    def _wait(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the request did not arrive whole within {self._seconds:g} s")
        self._connection.settimeout(left)

    def read(self, size: int = -1) -> bytes:
        self._wait()
        return self._raw.read(size)

    def readline(self, size: int = -1) -> bytes:
        self._wait()
        return self._raw.readline(size)

    def readinto(self, buffer: Any) -> int:
        self._wait()
        return self._raw.readinto(buffer)

    def __getattr__(self, name: str) -> Any:  # close, closed, fileno, ... as the file has them
        return getattr(self._raw, name)


class DeadlineRequestHandler(WSGIRequestHandler):
    """werkzeug's handler with one deadline per request (``timeout``) for its line, headers and body."""

    def setup(self) -> None:
        super().setup()
        self.rfile = DeadlineReader(self.rfile, self.connection, float(self.timeout or 0) or 1e9)  # type: ignore[assignment]

    def handle_one_request(self) -> None:
        self.rfile.start()  # type: ignore[attr-defined]
        super().handle_one_request()
