"""A chat-completions server over TLS on 127.0.0.1 that speaks HTTP/2: hypercorn serving a
tiny ASGI app, in the caller's event loop. It answers each request with the last message's
text (`慢 <seconds> …` waits that long first, `大 <bytes>` pads the answer to that size) and
records the TCP connection (the client's port) and HTTP version of each request."""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hypercorn.asyncio import serve
from hypercorn.config import Config
from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGISendCallable,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Scope,
)

from tests.fakes.raw_http import completion_json, completion_of_size
from tests.fakes.tls import ThrowawayCA

GRACEFUL_TIMEOUT_SECONDS = 0.5
# Idle connections stay as long as at common providers (nginx's 75 s), not hypercorn's 5 s.
KEEP_ALIVE_TIMEOUT_SECONDS = 75.0


@dataclass
class H2Served:
    """What the server saw: its base URL, the TCP connections requests came on (client
    address), and each request's HTTP version ("2", "1.1")."""

    base_url: str = ""
    connections: set[tuple[str, int]] = field(default_factory=set)
    http_versions: list[str] = field(default_factory=list)


# An answer to a request's body: its status and the JSON it answers with.
Answer = Callable[[bytes], Awaitable[tuple[int, bytes]]]


def answer_for(body: bytes) -> bytes:
    """The chat-completions answer to a request: its last message's text, slow or large as
    the text asks."""
    text = str(json.loads(body)["messages"][-1]["content"])
    words = text.split()
    if len(words) >= 2 and words[0] == "大":
        return completion_of_size(int(words[1]))
    return completion_json(text)


def delay_of(body: bytes) -> float:
    """How long `慢 <seconds>` asks the server to wait."""
    words = str(json.loads(body)["messages"][-1]["content"]).split()
    return float(words[1]) if len(words) >= 2 and words[0] == "慢" else 0.0


async def echo_answer(body: bytes) -> tuple[int, bytes]:
    """The default answer: `answer_for`, after the wait `delay_of` asks for."""
    await asyncio.sleep(delay_of(body))
    return 200, answer_for(body)


def model_app(served: H2Served, answer: Answer = echo_answer) -> ASGIFramework:
    """The ASGI app: lifespan events acknowledged, every POST answered by `answer`."""

    async def app(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http" or scope["client"] is None:
            return
        served.connections.add((scope["client"][0], scope["client"][1]))
        served.http_versions.append(scope["http_version"])
        body, more = b"", True
        while more:
            message = await receive()
            body += bytes(message.get("body", b""))
            more = bool(message.get("more_body", False))
        status, content = await answer(body)
        length = b"%d" % len(content)
        headers = [(b"content-type", b"application/json"), (b"content-length", length)]
        start = HTTPResponseStartEvent(
            type="http.response.start", status=status, headers=headers, trailers=False
        )
        await send(start)
        await send(HTTPResponseBodyEvent(type="http.response.body", body=content, more_body=False))

    return app


@asynccontextmanager
async def serving_h2(
    ca: ThrowawayCA, alpn: Sequence[str] = ("h2", "http/1.1"), answer: Answer = echo_answer
) -> AsyncIterator[H2Served]:
    """hypercorn on a free port of 127.0.0.1 with `ca`'s certificate, offering `alpn`, each
    request answered by `answer`."""
    served = H2Served()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    served.base_url = f"https://127.0.0.1:{listener.getsockname()[1]}/v1"
    with tempfile.TemporaryDirectory(prefix="aimemory-h2-") as folder:
        config = Config()
        config.certfile, config.keyfile = (str(p) for p in ca.write_server_files(Path(folder)))
        config.alpn_protocols = list(alpn)
        config.bind = [f"fd://{listener.detach()}"]
        config.graceful_timeout = GRACEFUL_TIMEOUT_SECONDS
        config.keep_alive_timeout = KEEP_ALIVE_TIMEOUT_SECONDS
        config.errorlog = None
        stop = asyncio.Event()
        server = asyncio.create_task(
            serve(model_app(served, answer), config, shutdown_trigger=stop.wait)
        )
        try:
            await _started(served.base_url, server)
            yield served
        finally:
            stop.set()
            await server


async def _started(base_url: str, server: asyncio.Task[None]) -> None:
    """Wait until the server takes connections (or fails)."""
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    for _ in range(200):
        if server.done():
            server.result()
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        writer.close()
        return
    raise RuntimeError(f"hypercorn did not start on port {port}")
