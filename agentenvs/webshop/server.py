"""The shop's HTTP server: werkzeug's threaded one, closing connections whose client goes silent.

werkzeug's server has no timeout of its own: a client that sends part of a request and stalls
holds a thread for as long as it likes. Here every read from a client waits at most
``request_timeout_s``; past it, a client still sending its request line or headers is
disconnected, and one still sending its body gets 408 (the app's ``TimeoutError`` handler).
Each wait starts again when bytes arrive, so a client trickling a byte at a time is slowed,
not stopped: this server is for people on loopback, not the open internet.
"""

from __future__ import annotations

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
    # socketserver's StreamRequestHandler sets ``timeout`` on the connection's socket.
    handler = type("ShopRequestHandler", (WSGIRequestHandler,), {"timeout": timeout})
    return make_server(host, port, app, threaded=True, request_handler=handler)
