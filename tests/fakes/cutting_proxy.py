"""A proxy on 127.0.0.1 in front of the fake model server that passes on only the head of the
first request it is told to cut, and holds it until the client goes away: the server then
sees what a call cancelled between writing its head and its body leaves it (a background
call stopped for a member's turn, engine/model_traffic.py), at a moment the test chooses."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

CONTENT_LENGTH = re.compile(rb"^content-length:\s*(\d+)\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass
class CuttingProxy:
    """Forwards each HTTP/1.1 request (one per connection, `Connection: close`) to `port`;
    the first whose body `cut` picks goes on as its head alone, `holding` set meanwhile."""

    port: int
    cut: Callable[[bytes], bool]
    base_url: str = ""
    holding: asyncio.Event = field(default_factory=asyncio.Event)
    cut_done: bool = False

    async def relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Pass one request on and its answer back, or cut it."""
        try:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # closed before it carried a request
            length = CONTENT_LENGTH.search(head)
            body = await reader.readexactly(int(length[1])) if length else b""
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.port)
            if not self.cut_done and self.cut(body):
                self.cut_done = True
                server_writer.write(head)
                await server_writer.drain()
                self.holding.set()
                await reader.read()  # until the client closes its end
            else:
                server_writer.write(head + body)
                await server_writer.drain()
                writer.write(await server_reader.read())
                await writer.drain()
            server_writer.close()
        finally:
            writer.close()


@asynccontextmanager
async def cutting_proxy(port: int, cut: Callable[[bytes], bool]) -> AsyncIterator[CuttingProxy]:
    """A CuttingProxy in front of the server on `port`, serving while the block runs."""
    proxy = CuttingProxy(port, cut)
    server = await asyncio.start_server(proxy.relay, "127.0.0.1", 0)
    proxy.base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    async with server:
        yield proxy
