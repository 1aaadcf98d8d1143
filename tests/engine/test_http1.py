"""The lean HTTP/1.1 client of the chat call, against real sockets on 127.0.0.1: the bodies
servers send (Content-Length, chunked, gzip, read to close), kept-alive connections (and
one the server closed meanwhile), what is no HTTP, timeouts, and where it must leave the
call to httpx (a proxy configured for the URL)."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
BODY = b'{"ok":true}'


@asynccontextmanager
async def server(handler: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    """A server on 127.0.0.1 running `handler` per connection; yields its URL and the
    number of connections it accepted (a one-item list, updated)."""
    accepted = [0]

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted[0] += 1
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    listening = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/chat/completions", accepted
    finally:
        listening.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


def answering(*responses: bytes, keep_open: bool = True) -> Handler:
    """A handler answering each request on a connection with the next of `responses`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for response in responses:
            await read_request(reader)
            writer.write(response)
            await writer.drain()
        if keep_open:
            await reader.read()

    return handle


def ok(body: bytes = BODY, *headers: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    return head + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body


async def post(url: str, timeout: float = 5.0) -> object:
    from nonebot_plugin_aimemory.engine.http1 import LeanPoster

    client = LeanPoster()
    try:
        return await client.post(
            url, b'{"model":"m"}', {"Content-Type": "application/json"}, timeout
        )
    finally:
        await client.aclose()


async def test_bodies_by_length_chunked_gzip_and_until_close() -> None:
    chunked = b"5\r\n" + BODY[:5] + b"\r\n" + b"6;ext=1\r\n" + BODY[5:] + b"\r\n0\r\n\r\n"
    zipped = gzip.compress(BODY)
    cases = [
        ok(BODY, b"Content-Length: %d" % len(BODY)),
        ok(chunked, b"Transfer-Encoding: chunked"),
        ok(zipped, b"Content-Encoding: gzip", b"Content-Length: %d" % len(zipped)),
        ok(BODY, b"Connection: close"),
    ]
    for response in cases:
        async with server(answering(response, keep_open=False)) as (url, _):
            answer = await post(url)
        assert answer.status_code == 200  # type: ignore[attr-defined]
        assert answer.json() == {"ok": True}  # type: ignore[attr-defined]


async def test_the_request_is_plain_http_1_1_with_its_body_and_headers() -> None:
    from nonebot_plugin_aimemory.engine.http1 import LeanPoster

    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(ok(BODY, b"Content-Length: %d" % len(BODY)))
        await writer.drain()

    async with server(handle) as (url, _):
        client = LeanPoster()
        await client.post(url, b'{"a":1}', {"Authorization": "Bearer sk-x"}, 5.0)
        with pytest.raises(ValueError, match="line break"):
            await client.post(url, b"{}", {"Authorization": "Bearer x\r\nX-Evil: 1"}, 5.0)
        await client.aclose()
    head, _, body = seen[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"\r\nAuthorization: Bearer sk-x" in head
    assert b"\r\nHost: 127.0.0.1:" in head
    assert body == b'{"a":1}'


async def test_a_connection_is_kept_alive_and_a_closed_one_is_replaced() -> None:
    from nonebot_plugin_aimemory.engine.http1 import LeanPoster

    response = ok(BODY, b"Content-Length: %d" % len(BODY))
    async with server(answering(response, response, keep_open=False)) as (url, accepted):
        client = LeanPoster()
        for _ in range(2):
            assert (await client.post(url, b"{}", {}, 5.0)).status_code == 200
        assert accepted[0] == 1  # both on one connection
        # The server closed it after two answers (its keep-alive ended): a new one is made.
        await asyncio.sleep(0.05)
        assert (await client.post(url, b"{}", {}, 5.0)).status_code == 200
        assert accepted[0] == 2
        await client.aclose()


async def test_a_kept_alive_connection_closed_as_the_request_went_out_is_retried_once() -> None:
    from nonebot_plugin_aimemory.engine.http1 import LeanPoster, TransportFailure

    response = ok(BODY, b"Content-Length: %d" % len(BODY))
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        await read_request(reader)
        writer.write(response)
        await writer.drain()
        # The server's keep-alive ends just as the next request arrives: read, then close.
        await read_request(reader)

    async with server(handle) as (url, accepted):
        client = LeanPoster()
        assert (await client.post(url, b"{}", {}, 5.0)).status_code == 200
        assert (await client.post(url, b"{}", {}, 5.0)).status_code == 200
        assert accepted[0] == 2  # the second request went again, on a new connection
        await client.aclose()

    async def half_an_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(response)
        await writer.drain()
        await read_request(reader)
        writer.write(response[:20])  # some of an answer: the request reached the model
        await writer.drain()

    async with server(half_an_answer) as (url, accepted):
        client = LeanPoster()
        assert (await client.post(url, b"{}", {}, 5.0)).status_code == 200
        with pytest.raises(TransportFailure) as failed:
            await client.post(url, b"{}", {}, 5.0)
        assert failed.value.kind == "unreachable"
        assert accepted[0] == 1  # not sent again
        await client.aclose()


async def test_what_is_no_http_and_what_never_ends_are_transport_failures() -> None:
    from nonebot_plugin_aimemory.engine.http1 import TransportFailure

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(10)

    async with server(answering(b"SSH-2.0-OpenSSH_9.6\r\n\r\n", keep_open=False)) as (url, _):
        with pytest.raises(TransportFailure) as garbage:
            await post(url)
    assert garbage.value.kind == "unreachable"
    assert garbage.value.retryable
    async with server(answering(b"", keep_open=False)) as (url, _):
        with pytest.raises(TransportFailure) as closed:
            await post(url)
    assert closed.value.kind == "unreachable"
    async with server(hang) as (url, _):
        with pytest.raises(TransportFailure) as slow:
            await post(url, timeout=0.2)
    assert slow.value.kind == "timeout"
    assert not slow.value.retryable  # the model may be thinking: no second wait
    with pytest.raises(TransportFailure) as refused:
        await post("http://127.0.0.1:9/v1/chat/completions")
    assert refused.value.kind == "unreachable"


async def test_a_call_cancelled_halfway_leaves_no_connection_to_reuse() -> None:
    from nonebot_plugin_aimemory.engine.http1 import LeanPoster

    answered = asyncio.Event()

    async def slow_then_fast(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        answered.set()
        await asyncio.sleep(10)  # the first call is cancelled meanwhile

    async with server(slow_then_fast) as (url, accepted):
        client = LeanPoster()
        call = asyncio.ensure_future(client.post(url, b"{}", {}, 5.0))
        await answered.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert not any(client._idle.values())  # pyright: ignore[reportPrivateUsage]
        await client.aclose()
    assert accepted[0] == 1


def test_a_proxy_configured_for_the_url_leaves_the_call_to_httpx(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nonebot_plugin_aimemory.engine.http1 import LeanPoster

    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    url = "https://api.deepseek.com/chat/completions"
    assert LeanPoster.handles(url)
    assert LeanPoster.handles("http://127.0.0.1:8000/v1/chat/completions")
    assert not LeanPoster.handles("ftp://example.com/x")
    assert not LeanPoster.handles("https://例子.cn/v1/chat/completions")  # httpx encodes it

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:7890")
    assert not LeanPoster.handles(url)
    assert LeanPoster.handles("http://127.0.0.1:8000/v1/chat/completions")  # https only
    monkeypatch.setenv("NO_PROXY", "localhost,.deepseek.com")
    assert LeanPoster.handles(url)
    monkeypatch.setenv("NO_PROXY", "api.openai.com")
    assert not LeanPoster.handles(url)
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    assert not LeanPoster.handles(url)
    monkeypatch.setenv("NO_PROXY", "*")
    assert LeanPoster.handles(url)
