"""``agentenvs.webshop.server``: a client that sends part of a request and goes silent is let go."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator

import pytest

from agentenvs.webshop.app import create_app
from agentenvs.webshop.engine import WebShopEngine
from agentenvs.webshop.server import make_shop_server
from tests.support.sockets import read_reply, stalled_connection


@pytest.fixture
def shop_port(engine: WebShopEngine) -> Iterator[int]:
    server = make_shop_server(create_app(engine, max_sessions=50), port=0, request_timeout_s=0.5)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()


def test_half_sent_requests_are_let_go_while_others_are_served(shop_port: int):
    """Before, each held a server thread for as long as the client liked, with no reply."""
    head = stalled_connection("127.0.0.1", shop_port, b"GET /fixed_0 HTTP/1.1\r\nHost: x\r\n")
    body = stalled_connection(
        "127.0.0.1",
        shop_port,
        b"POST /fixed_0 HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: 100\r\n\r\nsearch_query=so",
    )
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{shop_port}/fixed_1", timeout=30) as reply:
            assert reply.status == 200  # served while both stall
        assert read_reply(head) == b""  # disconnected: no request to answer yet
        answer = read_reply(body)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"did not arrive whole" in answer, answer[:300]
    finally:
        head.close()
        body.close()


def test_a_trickling_client_is_let_go_as_a_silent_one_is(shop_port: int):
    """Before, each read waited anew: a header byte every 0.7 s held a thread for as long as it went on."""
    import select

    head = b"GET /fixed_0 HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 200 + b"\r\n\r\n"
    connection = stalled_connection("127.0.0.1", shop_port, b"")
    closed_after = None
    try:
        for sent, byte in enumerate(head, start=1):  # 0.1 s a byte: 24 s for the whole head, the deadline 0.5 s
            try:
                connection.sendall(bytes([byte]))
            except OSError:  # reset by the server
                closed_after = sent
                break
            readable, _, _ = select.select([connection], [], [], 0.1)
            if readable and connection.recv(4096) == b"":
                closed_after = sent
                break
        assert closed_after is not None and closed_after < len(head), "the trickle was let through whole"
    finally:
        connection.close()


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "10"])
def test_request_timeout_s_is_checked(engine: WebShopEngine, bad):
    with pytest.raises(ValueError, match=r"make_shop_server\.request_timeout_s"):
        make_shop_server(create_app(engine), port=0, request_timeout_s=bad)
