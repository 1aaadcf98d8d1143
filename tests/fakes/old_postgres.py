"""A PostgreSQL server of a version Debian no longer ships, as far as a client sees before
its first query: it answers the start-up of the real wire protocol (no TLS, no password)
and reports the `server_version` it was given. It answers no query: it hangs up on the
client's next message, so a client that gets past the version check fails at once."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

SSL_REQUEST_CODE = 80877103
GSS_REQUEST_CODE = 80877104


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!I", len(body) + 4) + body


def _parameter(name: str, value: str) -> bytes:
    return _message(b"S", name.encode() + b"\0" + value.encode() + b"\0")


def _start_up_answer(version: str) -> bytes:
    return b"".join(
        [
            _message(b"R", struct.pack("!I", 0)),  # AuthenticationOk
            _parameter("server_version", version),
            _parameter("server_encoding", "UTF8"),
            _parameter("client_encoding", "UTF8"),
            _parameter("standard_conforming_strings", "on"),
            _parameter("DateStyle", "ISO, MDY"),
            _parameter("integer_datetimes", "on"),
            _message(b"K", struct.pack("!II", 4242, 4242)),  # BackendKeyData
            _message(b"Z", b"I"),  # ReadyForQuery, idle
        ]
    )


async def _read_start_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Refuses TLS and GSS encryption until the plain StartupMessage comes."""
    while True:
        (length,) = struct.unpack("!I", await reader.readexactly(4))
        body = await reader.readexactly(length - 4)
        (code,) = struct.unpack("!I", body[:4])
        if code in (SSL_REQUEST_CODE, GSS_REQUEST_CODE):
            writer.write(b"N")
            await writer.drain()
            continue
        return


@asynccontextmanager
async def old_postgres(version: str) -> AsyncIterator[str]:
    """A URL of a server on 127.0.0.1 that says it is PostgreSQL `version`."""

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await _read_start_up(reader, writer)
            writer.write(_start_up_answer(version))
            await writer.drain()
            await reader.read(4096)  # a query or Terminate: either way the talk ends
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"postgresql://aimemory:s3cret@127.0.0.1:{port}/aimemory?sslmode=disable"
    finally:
        server.close()
        await server.wait_closed()
