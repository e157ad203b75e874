"""An HTTP client for :class:`~agents.policy.openai_policy.OpenAIPolicy` that bounds each reply in time and size.

httpx's timeouts apply per socket operation, so a server sending a few bytes a second (of the
status line, the headers or the body) keeps a request alive for ever, and it inflates a gzip body
without limit. :class:`BoundedHttpClient` connects through a network backend whose every read and
write must end by the request's deadline, ``deadline_s`` after it was sent: past it the request
raises ``httpx2.ReadTimeout`` (or ``WriteTimeout`` / ``ConnectTimeout``; the ``openai`` client then
retries or reports a timeout, as for a silent server). It reads every reply body itself, chunk by
chunk, and past ``max_bytes`` (counted before and after decompression) raises
:class:`ReplyTooLarge`. It follows no redirect (an OpenAI-compatible API has no reason to send one,
and httpx would read the redirect's body unbounded): a 3xx is an HTTP error. It accepts only ``gzip`` / ``deflate`` encodings, which it inflates with
a bounded output.

Example:
    >>> inflate = _Inflater("gzip", max_bytes=10)
    >>> import gzip
    >>> inflate(gzip.compress(b"hello")) + inflate.flush()
    b'hello'
"""

from __future__ import annotations

import datetime
import threading
import time
import zlib
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2
import openai
from openai._constants import DEFAULT_CONNECTION_LIMITS

ACCEPTED_ENCODINGS = "gzip, deflate"
"""The encodings asked for (and the only ones inflated; another one is refused)."""


class ReplyTooLarge(openai.OpenAIError):
    """A reply body larger than the client's ``max_bytes``.

    An :class:`openai.OpenAIError` so that the ``openai`` client passes it on without retrying.
    """


class _Inflater:
    """Decodes a ``Content-Encoding`` body, refusing output past ``max_bytes``."""

    def __init__(self, encoding: str, max_bytes: int) -> None:
        self.max_bytes, self.produced = max_bytes, 0
        if encoding in ("", "identity"):
            self.decoder: Any = None
        elif encoding in ("gzip", "x-gzip"):
            self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self.decoder = zlib.decompressobj()
        else:
            raise ReplyTooLarge(f"unsupported Content-Encoding {encoding!r} (accepted: {ACCEPTED_ENCODINGS})")

    def __call__(self, chunk: bytes) -> bytes:
        if self.decoder is None:
            return self._count(chunk)
        try:
            # One byte past the budget is enough to know the body is too large: never inflate more.
            out = self.decoder.decompress(chunk, self.max_bytes - self.produced + 1)
        except zlib.error as error:
            raise httpx2.DecodingError(f"bad compressed reply: {error}") from None
        return self._count(out)

    def flush(self) -> bytes:
        return self._count(self.decoder.flush()) if self.decoder is not None else b""

    def _count(self, data: bytes) -> bytes:
        self.produced += len(data)
        if self.produced > self.max_bytes:
            raise ReplyTooLarge(f"reply larger than {self.max_bytes} bytes (decompressed)")
        return data


_deadline = threading.local()
"""``_deadline.at``: the monotonic time the current thread's request must be done by (None: no deadline)."""


def _within_deadline(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to what is left of this thread's request deadline; ``error`` once none is left."""
    at = getattr(_deadline, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore2.NetworkStream):
    """A connection whose reads and writes end by the deadline of the request using it."""

    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _within_deadline(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _within_deadline(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        tls = self._stream.start_tls(ssl_context, server_hostname, _within_deadline(timeout, httpcore2.ConnectTimeout))
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    """httpcore's socket backend, each connection a :class:`_DeadlineStream`."""

    def __init__(self) -> None:
        self._backend = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        timeout = _within_deadline(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        timeout = _within_deadline(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _DeadlineTransport(httpx2.HTTPTransport):
    """httpx's transport (the ``openai`` client's connection limits) on the :class:`_DeadlineBackend`."""

    def __init__(self) -> None:
        super().__init__(limits=DEFAULT_CONNECTION_LIMITS)
        limits = DEFAULT_CONNECTION_LIMITS
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineBackend(),
        )


class BoundedHttpClient(openai.DefaultHttpxClient):
    """The ``openai`` client's default HTTP client, each reply read within a deadline and a size limit.

    Args:
        deadline_s: Seconds from sending a request to having its whole reply (each try).
        max_bytes: Largest reply body, compressed and decompressed.
        **kwargs: For :class:`httpx2.Client` (the ``openai`` defaults apply otherwise; the
            transport is the client's own, so a proxy from the environment is not used).
    """

    def __init__(self, *, deadline_s: float, max_bytes: int, **kwargs: Any) -> None:
        super().__init__(transport=_DeadlineTransport(), trust_env=False, **kwargs)
        self.deadline_s, self.max_bytes = deadline_s, max_bytes

    def send(self, request: httpx2.Request, *, stream: bool = False, **kwargs: Any) -> httpx2.Response:
        """Sends ``request`` and returns its reply fully read (``stream`` is ignored: the body is bounded)."""
        started = time.monotonic()
        request.headers["Accept-Encoding"] = ACCEPTED_ENCODINGS
        # Redirects are not followed: httpx would read each redirect's body itself, unbounded (a
        # dripping or gzip-bombed 3xx); the 3xx comes back as it is, an HTTP error to the caller.
        kwargs["follow_redirects"] = False
        _deadline.at = started + self.deadline_s
        try:
            response = super().send(request, stream=True, **kwargs)
            try:
                body = self._read(response)
            finally:
                response.close()
        finally:
            _deadline.at = None
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _BODY_HEADERS]
        read = httpx2.Response(
            response.status_code,
            headers=headers,
            content=body,
            request=request,
            extensions=response.extensions,
            history=response.history,
        )
        read.elapsed = datetime.timedelta(seconds=time.monotonic() - started)
        return read

    def _read(self, response: httpx2.Response) -> bytes:
        inflate = _Inflater(response.headers.get("Content-Encoding", "").strip().lower(), self.max_bytes)
        parts, received = [], 0
        for chunk in response.iter_raw():
            received += len(chunk)
            if received > self.max_bytes:
                raise ReplyTooLarge(f"reply larger than {self.max_bytes} bytes")
            parts.append(inflate(chunk))
        parts.append(inflate.flush())
        return b"".join(parts)


_BODY_HEADERS = {"content-encoding", "content-length", "transfer-encoding"}
