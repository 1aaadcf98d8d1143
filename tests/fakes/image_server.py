"""A tiny image host on 127.0.0.1 standing in for QQ's temporary image URLs: it serves the
bytes registered for each path (images, oversize bodies, slow answers, non-image pages,
compressed bodies) and records every request with its headers, so tests can count
downloads, see how much of a body was sent and what the client asked for."""

from __future__ import annotations

import struct
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "GIF_BYTES",
    "JPEG_BYTES",
    "ImageServer",
    "ServedRequest",
    "gzip_bomb",
    "jpeg_bytes",
    "png_bytes",
]

CHUNK_BYTES = 64 * 1024


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bytes(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (255, 128, 0)) -> bytes:
    """A valid truecolour PNG of one colour; different colours give different bytes."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    pixels = zlib.compress(row * height)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", pixels)
        + _png_chunk(b"IEND", b"")
    )


def jpeg_bytes() -> bytes:
    """A valid 1x1 mid-grey baseline JPEG: one DC and one AC Huffman code, both "0"."""
    segments = [
        b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00",
        b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + b"\x01" * 64,
        b"\xff\xc0" + struct.pack(">HBHHBBBB", 11, 8, 1, 1, 1, 1, 0x11, 0),
        # DC table 0 and AC table 0: a single 1-bit code for symbol 0 (DC diff 0 / end of block).
        b"\xff\xc4" + struct.pack(">H", 20) + b"\x00" + b"\x01" + b"\x00" * 15 + b"\x00",
        b"\xff\xc4" + struct.pack(">H", 20) + b"\x10" + b"\x01" + b"\x00" * 15 + b"\x00",
        b"\xff\xda" + struct.pack(">HBBBBBB", 8, 1, 1, 0x00, 0, 63, 0),
    ]
    scan = bytes([0b0011_1111])  # DC "0", EOB "0", padded with ones
    return b"\xff\xd8" + b"".join(segments) + scan + b"\xff\xd9"


def gzip_bomb(decoded_bytes: int) -> bytes:
    """A gzip stream of a PNG header and then zeros, `decoded_bytes` in all once inflated
    and about a thousandth of that on the wire; built a megabyte at a time."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip framing
    parts = [compressor.compress(png_bytes())]
    zeros = bytes(1024 * 1024)
    remaining = decoded_bytes - len(png_bytes())
    while remaining > 0:
        parts.append(compressor.compress(zeros[:remaining]))
        remaining -= len(zeros)
    parts.append(compressor.flush())
    return b"".join(parts)


JPEG_BYTES = jpeg_bytes()
# A 1x1 transparent GIF.
GIF_BYTES = bytes.fromhex(
    "47494638396101000100800000ffffff00000021f90401000000002c00000000010001000002024401003b"
)


@dataclass
class _Route:
    status: int = 200
    body: bytes = b""
    content_type: str | None = "image/png"
    # Oversize bodies: `repeat` chunks of `body`, streamed until the client goes away.
    repeat: int = 1
    declare_length: bool = True
    delay_seconds: float = 0.0
    # Trickled bodies: one byte, then this long a pause, and so on.
    byte_interval_seconds: float = 0.0
    content_encoding: str | None = None


@dataclass
class ServedRequest:
    """One GET seen by the server: its headers (names in lower case), how many body bytes
    went out and whether all of them did."""

    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body_bytes_total: int = 0
    body_bytes_sent: int = 0
    completed: bool = False
    finished: threading.Event = field(default_factory=threading.Event)

    def wait_finished(self, timeout: float = 5.0) -> bool:
        """Block until the server is done with this request (sent all, or gave up)."""
        return self.finished.wait(timeout)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, host: ImageServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.host = host

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # clients hanging up mid-body is what the oversize tests provoke


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: one request per connection, and a body without Content-Length ends at close.
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self.server.host._serve(self)


class ImageServer:
    """Serves registered paths on 127.0.0.1; unregistered paths are 404 Not Found."""

    def __init__(self) -> None:
        self._routes: dict[str, _Route] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[ServedRequest] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> ImageServer:
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="ImageServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; slow handlers still waiting are released at once."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> ImageServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("ImageServer is not started")
        return int(self._server.server_address[1])

    def url(self, path: str) -> str:
        """`http://127.0.0.1:<port>/<path>`."""
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    # ------------------------------------------------------------------ registering content

    def add_image(self, path: str, data: bytes, content_type: str = "image/png") -> str:
        """Serve `data` at `path`; returns the URL."""
        return self._add(path, _Route(body=data, content_type=content_type))

    def add_body(self, path: str, data: bytes, content_type: str | None = "text/html") -> str:
        """Serve a body that is not an image (an error page, say) with status 200."""
        return self._add(path, _Route(body=data, content_type=content_type))

    def add_status(self, path: str, status: int, body: bytes = b"not found") -> str:
        """Answer `path` with an error status."""
        return self._add(path, _Route(status=status, body=body, content_type="text/plain"))

    def add_oversize(self, path: str, total_bytes: int, *, declare_length: bool = True) -> str:
        """A PNG-looking body of `total_bytes`, streamed in chunks; with `declare_length`
        False there is no Content-Length (the client only finds out by reading)."""
        chunk = png_bytes().ljust(CHUNK_BYTES, b"\x00")
        repeat = max(1, total_bytes // CHUNK_BYTES)
        route = _Route(body=chunk, repeat=repeat, declare_length=declare_length)
        return self._add(path, route)

    def add_slow(self, path: str, data: bytes, delay_seconds: float) -> str:
        """Send the headers, then wait `delay_seconds` before the body."""
        return self._add(path, _Route(body=data, delay_seconds=delay_seconds))

    def add_encoded(self, path: str, encoded: bytes, encoding: str = "gzip") -> str:
        """Serve `encoded` as is with `Content-Encoding: encoding`, whatever the client asked
        for (a gzip bomb: a small body on the wire that inflates far past any cap)."""
        return self._add(path, _Route(body=encoded, content_encoding=encoding))

    def add_trickle(self, path: str, data: bytes, byte_interval_seconds: float) -> str:
        """Send `data` one byte at a time, pausing between bytes: every read returns
        something quickly, yet the whole body takes `len(data) * byte_interval_seconds`."""
        return self._add(path, _Route(body=data, byte_interval_seconds=byte_interval_seconds))

    def _add(self, path: str, route: _Route) -> str:
        with self._lock:
            self._routes["/" + path.lstrip("/")] = route
        return self.url(path)

    # ------------------------------------------------------------------ records

    def hits(self, path: str) -> int:
        """How many times `path` was requested."""
        wanted = "/" + path.lstrip("/")
        with self._lock:
            return sum(1 for r in self.requests if r.path == wanted)

    def served(self, path: str) -> list[ServedRequest]:
        wanted = "/" + path.lstrip("/")
        with self._lock:
            return [r for r in self.requests if r.path == wanted]

    # ------------------------------------------------------------------ serving

    def _serve(self, handler: _Handler) -> None:
        path = urlsplit(handler.path).path
        with self._lock:
            route = self._routes.get(path) or _Route(
                status=404, body=b"not found", content_type="text/plain"
            )
            headers = {name.lower(): value for name, value in handler.headers.items()}
            record = ServedRequest(
                path, headers=headers, body_bytes_total=len(route.body) * route.repeat
            )
            self.requests.append(record)
        try:
            self._answer(handler, route, record)
        finally:
            record.finished.set()

    def _answer(self, handler: _Handler, route: _Route, record: ServedRequest) -> None:
        try:
            handler.send_response(route.status)
            if route.content_type is not None:
                handler.send_header("Content-Type", route.content_type)
            if route.content_encoding is not None:
                handler.send_header("Content-Encoding", route.content_encoding)
            if route.declare_length:
                handler.send_header("Content-Length", str(record.body_bytes_total))
            handler.end_headers()
            handler.wfile.flush()
            if route.delay_seconds and self._stopping.wait(route.delay_seconds):
                return
            if route.byte_interval_seconds:
                self._trickle(handler, route, record)
                return
            for _ in range(route.repeat):
                if self._stopping.is_set():
                    return
                handler.wfile.write(route.body)
                record.body_bytes_sent += len(route.body)
            handler.wfile.flush()
        except OSError:
            return  # the client hung up
        record.completed = True

    def _trickle(self, handler: _Handler, route: _Route, record: ServedRequest) -> None:
        for index in range(len(route.body)):
            handler.wfile.write(route.body[index : index + 1])
            handler.wfile.flush()
            record.body_bytes_sent += 1
            if self._stopping.wait(route.byte_interval_seconds):
                return
        record.completed = True
