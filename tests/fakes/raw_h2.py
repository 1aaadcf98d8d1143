"""An HTTP/2 server over TLS on 127.0.0.1 built on the h2 package, for what no well-behaved
server does mid-answer: a GOAWAY, a stream reset, a dropped connection, a garbled frame, an
answer that stalls. The n-th request gets the n-th `Misbehaviour` of a script (then plain
answers); each misbehaviour sends the head and half the body first."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import ConnectionTerminated, DataReceived, RequestReceived, StreamEnded

from tests.fakes.raw_http import completion_json

Misbehaviour = Literal["answer", "goaway", "reset", "drop", "garbage", "stall"]
# A DATA frame on stream 0: a connection error (PROTOCOL_ERROR) in RFC 9113 §6.1.
GARBLED_FRAME = b"\x00\x00\x01\x00\x00\x00\x00\x00\x00x"


@dataclass
class RawH2Served:
    """What the server saw: its base URL, connections accepted, requests read, and how many
    connections the client closed (rather than the server)."""

    base_url: str = ""
    connections: int = 0
    requests: int = 0
    closed_by_client: int = 0


def echo_answer(body: bytes) -> bytes:
    """A chat-completions answer carrying the request's last message."""
    return completion_json(str(json.loads(body)["messages"][-1]["content"]))


@asynccontextmanager
async def serving_raw_h2(
    tls: ssl.SSLContext,
    script: Sequence[Misbehaviour],
    answer: Callable[[bytes], bytes] = echo_answer,
) -> AsyncIterator[RawH2Served]:
    """The server on a free port of 127.0.0.1 (`tls` should offer h2 by ALPN); on leaving,
    it waits (up to 5 s) for its connections to end."""
    served = RawH2Served()
    handlers: set[asyncio.Task[None]] = set()

    def next_misbehaviour() -> Misbehaviour:
        served.requests += 1
        return script[served.requests - 1] if served.requests <= len(script) else "answer"

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.connections += 1
        if (task := asyncio.current_task()) is not None:
            handlers.add(task)
        try:
            if await _serve_connection(reader, writer, next_misbehaviour, answer):
                served.closed_by_client += 1
        except (ConnectionError, ssl.SSLError):
            served.closed_by_client += 1
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=tls)
    served.base_url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        yield served
    finally:
        server.close()
        if handlers:
            await asyncio.wait(handlers, timeout=5.0)


async def _serve_connection(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    next_misbehaviour: Callable[[], Misbehaviour],
    answer: Callable[[bytes], bytes],
) -> bool:
    """Serve one connection until either side ends it; whether the client ended it."""
    h2 = H2Connection(H2Configuration(client_side=False))
    h2.initiate_connection()
    writer.write(h2.data_to_send())
    bodies: dict[int, bytearray] = {}
    while data := await reader.read(65536):
        for event in h2.receive_data(data):
            if isinstance(event, RequestReceived) and event.stream_id is not None:
                bodies[event.stream_id] = bytearray()
            elif isinstance(event, DataReceived) and event.stream_id is not None:
                bodies[event.stream_id] += event.data or b""
                h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
            elif isinstance(event, StreamEnded) and event.stream_id is not None:
                body = answer(bytes(bodies.pop(event.stream_id)))
                if not await _respond(h2, writer, event.stream_id, body, next_misbehaviour()):
                    return False
            elif isinstance(event, ConnectionTerminated):
                return True
        writer.write(h2.data_to_send())
        await writer.drain()
    return True


async def _respond(
    h2: H2Connection, writer: asyncio.StreamWriter, stream_id: int, body: bytes, how: Misbehaviour
) -> bool:
    """Answer one stream as `how` says; whether the connection is still served after it."""
    head = [(":status", "200"), ("content-type", "application/json")]
    h2.send_headers(stream_id, [*head, ("content-length", str(len(body)))])
    half = len(body) // 2
    h2.send_data(stream_id, body[:half], end_stream=False)
    if how == "answer":
        h2.send_data(stream_id, body[half:], end_stream=True)
    elif how == "reset":
        h2.reset_stream(stream_id, ErrorCodes.INTERNAL_ERROR)
    elif how == "goaway":
        h2.close_connection(ErrorCodes.INTERNAL_ERROR, last_stream_id=stream_id)
    writer.write(h2.data_to_send())
    if how == "garbage":
        writer.write(GARBLED_FRAME)
    await writer.drain()
    # After a GOAWAY or mid-answer the server closes the connection; otherwise it serves on
    # (a stalled answer never ends) until the client closes it.
    return how not in ("goaway", "drop")
