"""What a server's listening host says about its clients: the one rule for per-client session caps.

A server that listens on loopback only is reached by local clients alone, and they all have one
address (a trainer's many rollouts included), so a per-address cap there would only cut local use
short. Elsewhere one address may hold half the sessions, so one client cannot lock out the rest.

Example:
    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, False)
    >>> default_sessions_per_client(16, host="localhost"), default_sessions_per_client(16, host="0.0.0.0")
    (16, 8)
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_sessions_per_client(max_sessions: int, host: str | None = None) -> int:
    """Sessions one client address may hold by default: all of ``max_sessions`` where ``host`` is
    loopback, else (another address, or None: not known) half of them, at least 1.

    ``host`` is the address the server listens on where it knows it (OpenEnv's ``make_server``), or
    else the client's own address (the shop, a WSGI app): a loopback client is a local one either way.
    """
    if host is not None and is_loopback(host):
        return max_sessions
    return max(1, max_sessions // 2)
