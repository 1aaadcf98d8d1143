"""A raw-socket HTTP server on 127.0.0.1 for answers no well-behaved server gives: strays,
malformed heads, bodies past a cap, resets. Each connection runs an `Answer` coroutine."""

from __future__ import annotations

import asyncio
import json
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class Served:
    """What the server saw: its base URL, connections accepted, request bodies read, and
    when a client closed a connection it was still answering."""

    base_url: str = ""
    connections: int = 0
    bodies: list[bytes] = field(default_factory=list)
    closed_by_client_at: float | None = None


Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter, Served], Awaitable[None]]


@asynccontextmanager
async def serving(answer: Answer, tls: ssl.SSLContext | None = None) -> AsyncIterator[Served]:
    """A raw-socket server on 127.0.0.1 running `answer` on each connection (over TLS with
    `tls`); on leaving, it waits (up to 5 s) for the connections' answers to end."""
    served = Served()
    answering: set[asyncio.Task[None]] = set()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.connections += 1
        if (task := asyncio.current_task()) is not None:
            answering.add(task)
        try:
            await answer(reader, writer, served)
        except (ConnectionError, asyncio.IncompleteReadError):
            served.closed_by_client_at = asyncio.get_running_loop().time()
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=tls)
    scheme = "https" if tls else "http"
    served.base_url = f"{scheme}://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        yield served
    finally:
        server.close()
        if answering:
            await asyncio.wait(answering, timeout=5.0)


async def read_request(reader: asyncio.StreamReader, served: Served) -> bytes:
    """Read one request; returns (and records) its body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
    body = await reader.readexactly(int(length.group(1)) if length else 0)
    served.bodies.append(body)
    return body


def sends(raw: bytes) -> Answer:
    """Answer every request with `raw`, then close the connection."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, served: Served):
        await read_request(reader, served)
        writer.write(raw)
        await writer.drain()

    return answer


def completion_json(content: str) -> bytes:
    """A chat-completions answer carrying `content`."""
    message = {"role": "assistant", "content": content}
    return json.dumps({"choices": [{"message": message, "finish_reason": "stop"}]}).encode()


def completion_of_size(size_bytes: int) -> bytes:
    """A chat-completions answer exactly `size_bytes` long (padded with "a")."""
    bare = completion_json("")
    return completion_json("a" * (size_bytes - len(bare)))


def ok(body: bytes, *headers: bytes) -> bytes:
    """A 200 with a Content-Length, `headers` added."""
    extra = b"".join(header + b"\r\n" for header in headers)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)
