"""An HTTP client for :class:`~agents.policy.openai_policy.OpenAIPolicy` that bounds each reply in time and size.

httpx's timeouts apply per socket operation, so a server sending a few bytes a second keeps a
request alive for ever, and it inflates a gzip body without limit. :class:`BoundedHttpClient`
reads every reply itself, chunk by chunk: past ``deadline_s`` since the request was sent it raises
``httpx2.ReadTimeout`` (the ``openai`` client then retries or reports a timeout, as for a silent
server), and past ``max_bytes`` (counted before and after decompression) it raises
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
import time
import zlib
from typing import Any

import httpx2
import openai

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


class BoundedHttpClient(openai.DefaultHttpxClient):
    """The ``openai`` client's default HTTP client, each reply read within a deadline and a size limit.

    Args:
        deadline_s: Seconds from sending a request to having its whole reply (each try).
        max_bytes: Largest reply body, compressed and decompressed.
        **kwargs: For :class:`httpx2.Client` (the ``openai`` defaults apply otherwise).
    """

    def __init__(self, *, deadline_s: float, max_bytes: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.deadline_s, self.max_bytes = deadline_s, max_bytes

    def send(self, request: httpx2.Request, *, stream: bool = False, **kwargs: Any) -> httpx2.Response:
        """Sends ``request`` and returns its reply fully read (``stream`` is ignored: the body is bounded)."""
        started = time.monotonic()
        request.headers["Accept-Encoding"] = ACCEPTED_ENCODINGS
        # Redirects are not followed: httpx would read each redirect's body itself, unbounded (a
        # dripping or gzip-bombed 3xx); the 3xx comes back as it is, an HTTP error to the caller.
        kwargs["follow_redirects"] = False
        response = super().send(request, stream=True, **kwargs)
        try:
            body = self._read(response, request, started + self.deadline_s)
        finally:
            response.close()
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

    def _read(self, response: httpx2.Response, request: httpx2.Request, deadline: float) -> bytes:
        inflate = _Inflater(response.headers.get("Content-Encoding", "").strip().lower(), self.max_bytes)
        parts, received = [], 0
        for chunk in response.iter_raw():
            received += len(chunk)
            if received > self.max_bytes:
                raise ReplyTooLarge(f"reply larger than {self.max_bytes} bytes")
            parts.append(inflate(chunk))
            if time.monotonic() > deadline:
                raise httpx2.ReadTimeout(f"reply not complete within {self.deadline_s} s", request=request)
        parts.append(inflate.flush())
        return b"".join(parts)


_BODY_HEADERS = {"content-encoding", "content-length", "transfer-encoding"}
