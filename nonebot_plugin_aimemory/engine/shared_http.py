"""The process's httpx client, made when first used (its TLS context reads certifi's ~150
roots: start-up ~0.1 s and RSS ~2 MB a bot without a model call never pays), and
`post_capped`, the one way model calls use it: a POST whose answer is bounded in size
(after decompression) and in time (the whole exchange, not each read)."""

from __future__ import annotations

import asyncio
import json
import logging
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from .timeouts import within

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_CONNECTIONS = 64
MAX_KEEPALIVE_CONNECTIONS = 16
CONNECT_TIMEOUT_SECONDS = 10.0
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
# What an answer may be compressed with: only what is inflated here piece by piece
# (httpx's own decoders inflate a whole network read at once, ~64 MB from 64 KB of a bomb).
ACCEPT_ENCODING = "gzip, deflate"
INFLATE_PIECE_BYTES = 64 * 1024
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class TransportFailure(Exception):
    """No usable answer: `kind` is "timeout" or "unreachable"; `retryable` when another
    attempt may well get one (refused, reset, closed early, garbled, a connect timeout)."""

    def __init__(self, kind: str, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class CappedAnswer:
    """A whole answer: status, headers, decompressed body (at most the cap)."""

    status_code: int
    headers: httpx.Headers
    content: bytes

    @property
    def text(self) -> str:
        """The body as UTF-8 text (undecodable bytes replaced)."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.content)


class SharedHttp:
    """One `httpx.AsyncClient` for every role, created at the first `post_capped` (or
    given: `client`, which `aclose` then closes too)."""

    def __init__(self, timeout_seconds: float, *, client: httpx.AsyncClient | None = None) -> None:
        self.timeout_seconds = timeout_seconds
        self._client = client

    @classmethod
    def of(cls, http: httpx.AsyncClient | SharedHttp, timeout_seconds: float) -> SharedHttp:
        """`http` itself, or a SharedHttp over the given client (a test's, say)."""
        return http if isinstance(http, SharedHttp) else cls(timeout_seconds, client=http)

    @property
    def client(self) -> httpx.AsyncClient:
        """The client, made now if it does not exist yet."""
        if self._client is None:
            # trust_env (httpx's default): HTTP(S)_PROXY, ALL_PROXY and NO_PROXY are honoured.
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout_seconds, connect=CONNECT_TIMEOUT_SECONDS),
                limits=httpx.Limits(
                    max_connections=MAX_CONNECTIONS,
                    max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
                ),
            )
        return self._client

    async def post_capped(
        self,
        url: str,
        *,
        content: bytes,
        headers: Mapping[str, str],
        timeout_seconds: float,
        max_bytes: int = MAX_RESPONSE_BYTES,
    ) -> CappedAnswer:
        """POST `content` to `url` and read the whole answer within `timeout_seconds`, its
        body decompressed up to `max_bytes`; TransportFailure when none can be had."""
        host = urlsplit(url).hostname or url
        try:
            return await within(
                self._exchange(url, content, headers, timeout_seconds, max_bytes, host),
                timeout_seconds,
            )
        except asyncio.TimeoutError as exc:
            message = f"no whole answer from {host} within {timeout_seconds:g} s"
            raise TransportFailure("timeout", message, retryable=False) from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise _failure_of(exc) from exc
        except ValueError as exc:  # a malformed answer the HTTP stack did not map to its own
            raise TransportFailure(
                "unreachable", f"RemoteProtocolError: {exc!r}", retryable=True
            ) from exc

    async def aclose(self) -> None:
        """Close the client if it was made."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _exchange(
        self,
        url: str,
        content: bytes,
        headers: Mapping[str, str],
        timeout_seconds: float,
        max_bytes: int,
        host: str,
    ) -> CappedAnswer:
        # Connection: close — httpcore would read a stray answer that came in the same
        # network read as the last one as the answer to the connection's next request.
        request_headers = {**headers, "Accept-Encoding": ACCEPT_ENCODING, "Connection": "close"}
        timeout = httpx.Timeout(
            timeout_seconds, connect=min(timeout_seconds, CONNECT_TIMEOUT_SECONDS)
        )
        request = self.client.stream(
            "POST", url, content=content, headers=request_headers, timeout=timeout
        )
        async with request as response:
            inflater = _Inflater.for_encoding(response.headers.get("content-encoding", ""))
            body = bytearray()
            async for raw in response.aiter_raw():
                for piece in inflater.pieces(raw):
                    body += piece
                    if len(body) > max_bytes:
                        size = _size_text(max_bytes)
                        logger.warning("answer from %s exceeds %s; discarded", host, size)
                        raise TransportFailure(
                            "unreachable", f"answer exceeds {size}", retryable=False
                        )
            inflater.finish()
            return CappedAnswer(response.status_code, response.headers, bytes(body))


class _Inflater:
    """Decompresses a body at most INFLATE_PIECE_BYTES at a time (identity passes through)."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._zlib = zlib.decompressobj(_WBITS[encoding]) if encoding else None
        self._started = False

    @classmethod
    def for_encoding(cls, header: str) -> _Inflater:
        """The inflater for a Content-Encoding header; TransportFailure for one not asked for."""
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if not codings:
            return cls("")
        if len(codings) > 1 or codings[0] not in _WBITS:
            raise TransportFailure(
                "unreachable", f"unsupported Content-Encoding {header[:40]!r}", retryable=False
            )
        return cls(codings[0])

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """The decompressed bytes of `data`, in pieces."""
        if self._zlib is None:
            yield data
            return
        if not self._started and data:
            self._started = True
            if self.encoding == "deflate" and not _zlib_wrapped(data):
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as IIS sent
        try:
            while data:
                yield self._zlib.decompress(data, INFLATE_PIECE_BYTES)
                data = self._zlib.unconsumed_tail
        except zlib.error as exc:
            raise TransportFailure(
                "unreachable", f"DecodingError: {self.encoding} body: {exc}", retryable=True
            ) from exc

    def finish(self) -> None:
        """Check the compressed body ended where the answer did."""
        if self._zlib is not None and self._started and not self._zlib.eof:
            raise TransportFailure(
                "unreachable", f"DecodingError: truncated {self.encoding} body", retryable=True
            )


def _zlib_wrapped(data: bytes) -> bool:
    """Whether `data` starts with a zlib header (RFC 1950), as "deflate" should."""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _failure_of(exc: httpx.HTTPError) -> TransportFailure:
    """An httpx failure as a TransportFailure. Connection-level failures (refused, reset,
    closed early, garbled) are worth a retry; a read timeout is not: the model is just
    slow, retrying doubles the wait."""
    retryable = isinstance(
        exc,
        httpx.NetworkError | httpx.RemoteProtocolError | httpx.ConnectTimeout | httpx.DecodingError,
    )
    kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "unreachable"
    return TransportFailure(kind, f"{type(exc).__name__}: {exc}", retryable=retryable)


def _size_text(size_bytes: int) -> str:
    """16 MiB, 64 KiB, or 1000 bytes."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if size_bytes % scale == 0:
            return f"{size_bytes // scale} {unit}"
    return f"{size_bytes} bytes"
