"""The process's httpx client for model calls, made when first used, its TLS roots read at
the first https call (certifi's ~150 roots: ~0.1 s and ~1 MiB of RSS that a bot calling a
model over plain http, a local one say, never pays); and `post_capped`, the one way model
calls use it: a POST whose answer is bounded in size (after decompression) and in time (the
whole exchange, not each read).

An https server that offers HTTP/2 (ALPN) gets one kept-alive connection that carries every
call, each answer on its request's own stream; every other server (plain http, or https
without h2) gets HTTP/1.1 and a new connection per call, as before HTTP/2."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import ssl
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from h2.exceptions import ProtocolError as H2ProtocolError

from .renewable_client import RenewableClient
from .timeouts import within

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_CONNECTIONS = 64
MAX_KEEPALIVE_CONNECTIONS = 16
# How long an idle HTTP/2 connection is kept: long enough to carry one turn's calls (tool
# rounds, compression, review) and a lively chat's next turn, shorter than the idle timeouts
# servers and load balancers commonly close on (60 s and more), so the client closes first.
KEEPALIVE_EXPIRY_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10.0
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
# What an answer may be compressed with: only what is inflated here piece by piece
# (httpx's own decoders inflate a whole network read at once, ~64 MB from 64 KB of a bomb).
ACCEPT_ENCODING = "gzip, deflate"
INFLATE_PIECE_BYTES = 64 * 1024
# Endpoints parsed and kept: a bot calls a handful (one per role at most).
PARSED_URLS_CACHED = 16
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
    """One client for every role (renewed after an exchange that broke off, and once when
    the first https call needs the roots), created at the first `post_capped`; or `client`,
    used as given (which `aclose` then closes too). `tls` verifies servers instead of
    certifi's roots and SSL_CERT_FILE/SSL_CERT_DIR (a test's throwaway CA, say)."""

    def __init__(
        self,
        timeout_seconds: float,
        *,
        client: httpx.AsyncClient | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.timeout_seconds = timeout_seconds
        self._tls = tls
        self._clients = RenewableClient(self._new_client, given=client)

    @classmethod
    def of(cls, http: httpx.AsyncClient | SharedHttp, timeout_seconds: float) -> SharedHttp:
        """`http` itself, or a SharedHttp over the given client (a test's, say)."""
        return http if isinstance(http, SharedHttp) else cls(timeout_seconds, client=http)

    @property
    def client(self) -> httpx.AsyncClient:
        """The client new calls use, made now if it does not exist yet."""
        return self._clients.current

    def _new_client(self) -> httpx.AsyncClient:
        # Before the first https call, a context that trusts no server: no plain-http call
        # uses it, and it fails closed should anything try TLS with it.
        verify = self._tls if self._tls is not None else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        # One client for both protocols: which one a connection speaks is settled by ALPN
        # when it is made, unknown before, and a server may choose h2 on one connection and
        # HTTP/1.1 on another; the request's `Connection: close` (`_exchange`) keeps
        # HTTP/1.1 connections to one call each and leaves HTTP/2 ones kept alive.
        # trust_env (httpx's default): HTTP(S)_PROXY, ALL_PROXY and NO_PROXY are honoured.
        return httpx.AsyncClient(
            http2=True,
            verify=verify,
            timeout=httpx.Timeout(self.timeout_seconds, connect=CONNECT_TIMEOUT_SECONDS),
            limits=httpx.Limits(
                max_connections=MAX_CONNECTIONS,
                max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
                keepalive_expiry=KEEPALIVE_EXPIRY_SECONDS,
            ),
        )

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
        parts = urlsplit(url)
        if parts.scheme.lower() == "https" and self._tls is None:
            await self._read_roots()
        host = parts.hostname or url
        try:
            async with self._clients.lease() as client:
                return await within(
                    self._exchange(client, url, content, headers, timeout_seconds, max_bytes),
                    timeout_seconds,
                )
        except asyncio.TimeoutError as exc:
            message = f"no whole answer from {host} within {timeout_seconds:g} s"
            raise TransportFailure("timeout", message, retryable=False) from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise _failure_of(exc) from exc
        # A malformed answer the HTTP stack did not map to its own errors: a bad HTTP/1.1
        # head can raise ValueError, a bad HTTP/2 frame mid-body h2's ProtocolError.
        except (ValueError, H2ProtocolError) as exc:
            raise TransportFailure(
                "unreachable", f"RemoteProtocolError: {exc!r}", retryable=True
            ) from exc

    async def _read_roots(self) -> None:
        """Read the roots, once, shared by every client made from now on; the client made
        without them takes no new call."""
        self._tls = httpx.create_ssl_context()
        await self._clients.renew()

    async def aclose(self) -> None:
        """Close the clients that were made (or given)."""
        await self._clients.aclose()

    @staticmethod
    async def _exchange(
        client: httpx.AsyncClient,
        url: str,
        content: bytes,
        headers: Mapping[str, str],
        timeout_seconds: float,
        max_bytes: int,
    ) -> CappedAnswer:
        # Connection: close. On HTTP/1.1 it closes the connection after this answer:
        # httpcore would read a stray answer that came in the same network read as the last
        # one as the answer to the connection's next request. On HTTP/2 the h2 package
        # strips connection-specific headers (RFC 9113 §8.2.2; h2 ≥ 2.6) and the connection
        # stays up: an answer comes on its request's own stream, a stray one has none.
        request_headers = {**headers, "Accept-Encoding": ACCEPT_ENCODING, "Connection": "close"}
        timeout = httpx.Timeout(
            timeout_seconds, connect=min(timeout_seconds, CONNECT_TIMEOUT_SECONDS)
        )
        host = urlsplit(url).hostname or url
        request = client.stream(
            "POST", _parsed(url), content=content, headers=request_headers, timeout=timeout
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


@functools.lru_cache(maxsize=PARSED_URLS_CACHED)
def _parsed(url: str) -> httpx.URL:
    """`url` parsed once (httpx would parse the same few endpoints on every call)."""
    return httpx.URL(url)


def _zlib_wrapped(data: bytes) -> bool:
    """Whether `data` starts with a zlib header (RFC 1950), as "deflate" should."""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _failure_of(exc: httpx.HTTPError) -> TransportFailure:
    """An httpx failure as a TransportFailure. Connection-level failures (refused, reset,
    closed early, garbled) are worth a retry; a read timeout is not: the model is just
    slow, retrying doubles the wait. httpx reports a garbled HTTP/2 frame from the server
    as a LocalProtocolError, so both kinds of ProtocolError count as garbled."""
    retryable = isinstance(
        exc,
        httpx.NetworkError | httpx.ProtocolError | httpx.ConnectTimeout | httpx.DecodingError,
    )
    kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "unreachable"
    return TransportFailure(kind, f"{type(exc).__name__}: {exc}", retryable=retryable)


def _size_text(size_bytes: int) -> str:
    """16 MiB, 64 KiB, or 1000 bytes."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if size_bytes % scale == 0:
            return f"{size_bytes // scale} {unit}"
    return f"{size_bytes} bytes"
