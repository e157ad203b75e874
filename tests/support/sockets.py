"""Raw loopback sockets for the servers' half-sent-request tests."""

from __future__ import annotations

import socket


def stalled_connection(host: str, port: int, sent: bytes) -> socket.socket:
    """A connection to ``host:port`` that has sent ``sent`` and then stalls."""
    connection = socket.create_connection((host, port), timeout=10)
    connection.sendall(sent)
    return connection


def read_reply(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (the test fails if it never does)."""
    connection.settimeout(60)  # a safety net for a loaded machine, not the verdict
    reply = b""
    while chunk := connection.recv(4096):
        reply += chunk
    return reply
