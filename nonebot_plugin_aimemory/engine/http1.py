"""A lean HTTP/1.1 POST for the chat-completions call every turn makes: a request costs
~0.15 ms of CPU here against httpx's ~1.3 ms (`python -m bench.footprint`). Keep-alive
connections per origin, TLS with certifi's roots as httpx uses them, Content-Length and
chunked bodies. Where a proxy is configured for the URL (HTTP(S)_PROXY, ALL_PROXY, minus
NO_PROXY), or for anything this does not speak, the caller keeps using httpx.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import urllib.request
import zlib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from .timeouts import within

MAX_HEAD_BYTES = 64 * 1024
MAX_IDLE_PER_ORIGIN = 4
CONNECT_TIMEOUT_SECONDS = 10.0  # as the shared httpx client's
USER_AGENT = b"nonebot-plugin-aimemory"


class TransportFailure(Exception):
    """No answer: `kind` is "timeout" or "unreachable"; `retryable` when nothing reached
    the model (refused, reset or closed before an answer, a connect timeout)."""

    def __init__(
        self, kind: str, message: str, *, retryable: bool, nothing_came_back: bool = False
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        # The connection failed before any byte of an answer: on a kept-alive connection,
        # the server had closed it.
        self.nothing_came_back = nothing_came_back


class HTTPAnswer(Protocol):
    """What the LLM client reads of an answer; an httpx.Response is one too."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...


@dataclass
class Answer:
    """What the server answered: status, headers (lower-case names), body."""

    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int

    @property
    def host_header(self) -> bytes:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return (host if self.port == default else f"{host}:{self.port}").encode("ascii")


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    reused: bool = False  # taken from the pool: the server may have closed it meanwhile
    answer_started: bool = False  # some of an answer came back (a retry could repeat it)

    @property
    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


class _ProtocolError(Exception):
    """The server answered something that is not HTTP/1.1."""


@dataclass
class LeanPoster:
    """POSTs over pooled HTTP/1.1 connections; `handles(url)` says where it may be used."""

    _idle: dict[Origin, deque[_Connection]] = field(default_factory=dict)
    _tls: ssl.SSLContext | None = None

    @staticmethod
    def handles(url: str) -> bool:
        """Whether this client may send to `url`: http(s), and no proxy configured for it."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or not url.isascii():
            return False
        proxies = urllib.request.getproxies_environment()
        if not (proxies.get(parts.scheme) or proxies.get("all")):
            return True
        return _bypasses_proxy(parts.hostname.lower(), proxies.get("no", ""))

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], timeout_seconds: float
    ) -> Answer:
        """POST `body` to `url`; raises TransportFailure when no answer comes."""
        parts = urlsplit(url)
        origin = Origin(parts.scheme, parts.hostname or "", parts.port or _default_port(parts))
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request = _request_bytes(origin, target, body, headers)
        connection = self._take_idle(origin)
        if connection is not None:
            try:
                return await self._exchange(origin, connection, request, timeout_seconds)
            except TransportFailure as failure:
                if not failure.nothing_came_back:
                    raise
                # A kept-alive connection the server had closed meanwhile: once more, new.
        connection = await self._connect(origin, min(timeout_seconds, CONNECT_TIMEOUT_SECONDS))
        return await self._exchange(origin, connection, request, timeout_seconds)

    async def aclose(self) -> None:
        """Close every idle connection."""
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.usable:
                connection.reused, connection.answer_started = True, False
                return connection
            connection.close()
        return None

    def _keep(self, origin: Origin, connection: _Connection) -> None:
        idle = self._idle.setdefault(origin, deque())
        if len(idle) >= MAX_IDLE_PER_ORIGIN:
            connection.close()
            return
        idle.append(connection)

    async def _connect(self, origin: Origin, timeout_seconds: float) -> _Connection:
        tls = self._tls_context() if origin.scheme == "https" else None
        try:
            reader, writer = await within(
                asyncio.open_connection(
                    origin.host,
                    origin.port,
                    ssl=tls,
                    server_hostname=origin.host if tls else None,
                    limit=MAX_HEAD_BYTES,
                ),
                timeout_seconds,
            )
        except asyncio.TimeoutError as exc:
            raise TransportFailure("timeout", "ConnectTimeout", retryable=True) from exc
        except (OSError, ssl.SSLError) as exc:
            raise TransportFailure("unreachable", f"ConnectError: {exc}", retryable=True) from exc
        return _Connection(reader, writer)

    async def _exchange(
        self, origin: Origin, connection: _Connection, request: bytes, timeout_seconds: float
    ) -> Answer:
        """One request and its answer on `connection`, all within `timeout_seconds` (one
        deadline for the whole exchange: no task per stage)."""
        try:
            status, headers, content = await within(_talk(connection, request), timeout_seconds)
        except asyncio.TimeoutError as exc:
            connection.close()
            raise TransportFailure("timeout", "ReadTimeout", retryable=False) from exc
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as exc:
            connection.close()
            partial = isinstance(exc, asyncio.IncompleteReadError) and bool(exc.partial)
            started = connection.answer_started or partial
            what = "RemoteProtocolError" if started else "ReadError"
            raise TransportFailure(
                "unreachable",
                f"{what}: {exc!r}",
                retryable=True,
                nothing_came_back=connection.reused and not started,
            ) from exc
        except (_ProtocolError, zlib.error) as exc:
            connection.close()
            raise TransportFailure(
                "unreachable", f"RemoteProtocolError: {exc}", retryable=True
            ) from exc
        except BaseException:
            connection.close()  # cancelled (`~对话 停止`, shutdown) halfway: unusable
            raise
        if headers.get("connection", "").lower() == "close" or (
            "content-length" not in headers
            and ("chunked" not in headers.get("transfer-encoding", "").lower())
        ):
            connection.close()
        else:
            self._keep(origin, connection)
        return Answer(status, headers, content)

    def _tls_context(self) -> ssl.SSLContext:
        """httpx's roots: SSL_CERT_FILE when set, certifi's bundle otherwise (the system's
        if certifi is missing); made on the first https call, not at start-up."""
        if self._tls is None:
            cafile = os.environ.get("SSL_CERT_FILE")
            if not cafile:
                try:
                    import certifi

                    cafile = certifi.where()
                except ImportError:
                    cafile = None
            self._tls = ssl.create_default_context(cafile=cafile)
        return self._tls


async def _talk(connection: _Connection, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request`, read the answer: status, headers, decoded body."""
    connection.writer.write(request)
    await connection.writer.drain()
    head = await connection.reader.readuntil(b"\r\n\r\n")
    connection.answer_started = True
    status, headers = _parse_head(head)
    content = _decoded(await _read_body(connection.reader, headers), headers)
    return status, headers, content


def _bypasses_proxy(host: str, no_proxy: str) -> bool:
    """Whether NO_PROXY exempts `host`: "*", the host itself, or a domain it is in."""
    for raw in no_proxy.lower().split(","):
        if raw.strip() == "*":
            return True
        entry = raw.strip().removeprefix("*").lstrip(".")
        if entry.startswith("[") and "]" in entry:
            entry = entry[1 : entry.index("]")]
        elif entry.count(":") == 1:
            entry = entry.split(":")[0]  # a port
        if entry and (host == entry or host.endswith("." + entry)):
            return True
    return False


def _default_port(parts: Any) -> int:
    return 443 if parts.scheme == "https" else 80


def _request_bytes(origin: Origin, target: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [
        b"POST " + target.encode("ascii", "strict") + b" HTTP/1.1",
        b"Host: " + origin.host_header,
        b"User-Agent: " + USER_AGENT,
        b"Accept: application/json",
        b"Accept-Encoding: gzip, deflate",
        b"Content-Length: " + str(len(body)).encode(),
    ]
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError(f"header {name!r} holds a line break")
        lines.append(f"{name}: {value}".encode("latin-1"))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    status_line, *header_lines = head[:-4].split(b"\r\n")
    version, _, rest = status_line.partition(b" ")
    code = rest[:3]
    if not version.startswith(b"HTTP/1.") or not code.isdigit():
        raise _ProtocolError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, colon, value = line.partition(b":")
        if not colon:
            raise _ProtocolError(f"malformed header line: {line[:80]!r}")
        key = name.strip().lower().decode("latin-1")
        text = value.strip().decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    status = int(code)
    if status < 200:  # 1xx: no 100-continue is asked for; nothing else makes sense here
        raise _ProtocolError(f"unexpected informational answer {status}")
    return status, headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader)
    length = headers.get("content-length")
    if length is not None:
        if not length.strip().isdigit():
            raise _ProtocolError(f"bad Content-Length {length!r}")
        return await reader.readexactly(int(length))
    return await reader.read()  # until the server closes the connection


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as exc:
            raise _ProtocolError(f"bad chunk size {size_line[:40]!r}") from exc
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                pass
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _decoded(content: bytes, headers: dict[str, str]) -> bytes:
    encoding = headers.get("content-encoding", "").lower().strip()
    if encoding in ("", "identity"):
        return content
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompress(content, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        try:
            return zlib.decompress(content)
        except zlib.error:
            return zlib.decompress(content, -zlib.MAX_WBITS)
    raise _ProtocolError(f"unsupported Content-Encoding {encoding!r}")
