"""What a misbehaving server answers, through `LLMClient.complete` over real sockets on
127.0.0.1: a stray answer on a kept-alive connection, bodies past the cap (a gzip bomb, an
endless chunked body), malformed HTTP, answers dripped past the whole-call deadline."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.engine.conftest import MODEL
from tests.fakes.raw_http import (
    Served,
    completion_json,
    completion_of_size,
    ok,
    read_request,
    sends,
    serving,
)

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.messages import Message

SMALL_CAP_BYTES = 64 * 1024
MIB = 1024 * 1024
BOMB_INFLATED_BYTES = 256 * MIB
MAX_RSS_GROWTH_BYTES = 64 * MIB
DRIP_INTERVAL_SECONDS = 0.05
DEADLINE_SECONDS = 1.0


def question(text: str = "你好") -> list[Message]:
    from nonebot_plugin_aimemory.engine.messages import system, user

    return [system("你是小忆"), user(text)]


def client_for(
    http: httpx.AsyncClient,
    served: Served,
    *,
    timeout_seconds: float = 2.0,
    max_response_bytes: int = SMALL_CAP_BYTES,
) -> LLMClient:
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient

    return LLMClient(
        http,
        Endpoint(served.base_url, "", MODEL),
        timeout_seconds=timeout_seconds,
        max_retries=2,
        backoff_seconds=0.01,
        max_response_bytes=max_response_bytes,
    )


async def failure_of(client: LLMClient) -> LLMError:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    with pytest.raises(LLMError) as raised:
        await client.complete(question())
    return raised.value


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def peak_rss_growth() -> Iterator[list[int]]:
    """Sample the process's RSS every millisecond while the block runs (zlib and socket reads
    let a thread run); yields a one-item list holding the peak growth in bytes afterwards."""
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("RSS is read from /proc/self/statm (Linux)")
    before = resident_bytes()
    peak = [before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], resident_bytes())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    growth = [0]
    try:
        yield growth
    finally:
        stop.set()
        sampler.join()
        growth[0] = max(peak[0], resident_bytes()) - before


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """~250 KB of gzip inflating to 256 MiB of zeros, made once."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    parts = [compressor.compress(zeros) for _ in range(BOMB_INFLATED_BYTES // MIB)]
    return b"".join([*parts, compressor.flush()])


# --------------------------------------------------------------------------- connections


@pytest.mark.parametrize("stray_delay_seconds", [0.0, 0.02], ids=["same-write", "just-after"])
async def test_a_stray_answer_on_a_kept_alive_connection_never_answers_the_next_request(
    http: httpx.AsyncClient, stray_delay_seconds: float
) -> None:
    # given a server that follows each answer with one nobody asked for, keeping the
    # connection open for more requests
    async def answer_and_stray(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, served: Served
    ) -> None:
        while True:
            body = await read_request(reader, served)
            asked = json.loads(body)["messages"][-1]["content"]
            real = ok(completion_json(asked), b"Connection: keep-alive")
            stray = ok(completion_json("stray"), b"Connection: keep-alive")
            if stray_delay_seconds:
                writer.write(real)
                await writer.drain()
                await asyncio.sleep(stray_delay_seconds)
                writer.write(stray)
            else:
                writer.write(real + stray)
            await writer.drain()

    async with serving(answer_and_stray) as served:
        client = client_for(http, served)
        # when several requests are made one after another
        answers = [(await client.complete(question(f"第{i}问"))).message.text for i in range(5)]
    # then each got its own answer, never the stray one
    assert answers == [f"第{i}问" for i in range(5)]


async def test_the_shared_client_honours_proxies_from_the_environment() -> None:
    from nonebot_plugin_aimemory.engine.shared_http import SharedHttp

    shared = SharedHttp(1.0)
    try:
        assert shared.client.trust_env
    finally:
        await shared.aclose()


# --------------------------------------------------------------------------- the cap


async def test_a_gzip_bomb_fails_at_the_default_cap_without_inflating(
    http: httpx.AsyncClient, gzip_bomb: bytes
) -> None:
    from nonebot_plugin_aimemory.engine.shared_http import MAX_RESPONSE_BYTES

    # given a server answering with 250 KB of gzip that inflates to 256 MiB
    raw = ok(gzip_bomb, b"Content-Encoding: gzip", b"Content-Type: application/json")
    async with serving(sends(raw)) as served:
        client = client_for(http, served, max_response_bytes=MAX_RESPONSE_BYTES)
        # when a completion is requested
        with peak_rss_growth() as growth:
            failure = await failure_of(client)
    # then it fails as a transport failure, not retried, and memory held far less than that
    assert failure.kind == "unreachable"
    assert "16 MiB" in failure.detail
    assert served.connections == 1
    assert growth[0] < MAX_RSS_GROWTH_BYTES


async def test_an_endless_chunked_body_fails_past_the_cap(http: httpx.AsyncClient) -> None:
    from nonebot_plugin_aimemory.engine.shared_http import MAX_RESPONSE_BYTES

    sent = [0]

    # given a server sending chunks until the client goes (at most 64 MiB or 5 s)
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, served: Served):
        await read_request(reader, served)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (64 * 1024, b"a" * 64 * 1024)
        ends_at = asyncio.get_running_loop().time() + 5.0
        while sent[0] < 64 * MIB and asyncio.get_running_loop().time() < ends_at:
            if reader.at_eof():
                served.closed_by_client_at = asyncio.get_running_loop().time()
                return
            writer.write(chunk)
            await writer.drain()
            sent[0] += len(chunk)

    async with serving(endless) as served:
        client = client_for(http, served, max_response_bytes=MAX_RESPONSE_BYTES)
        with peak_rss_growth() as growth:
            failure = await failure_of(client)
    # then the client gave up after about the cap, holding no more than that
    assert failure.kind == "unreachable"
    assert served.closed_by_client_at is not None
    assert sent[0] < 64 * MIB
    assert growth[0] < MAX_RSS_GROWTH_BYTES


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
async def test_a_body_exactly_at_the_cap_is_read(http: httpx.AsyncClient, encoding: str) -> None:
    body = completion_of_size(SMALL_CAP_BYTES)
    raw = ok(body) if encoding == "identity" else ok(gzip.compress(body), b"Content-Encoding: gzip")
    async with serving(sends(raw)) as served:
        completion = await client_for(http, served).complete(question())
    assert completion.message.text == "a" * (SMALL_CAP_BYTES - len(completion_json("")))


@pytest.mark.parametrize("framing", ["length", "chunked", "gzip", "until-close"])
async def test_a_body_one_byte_past_the_cap_is_discarded(
    http: httpx.AsyncClient, plugin_log: pytest.LogCaptureFixture, framing: str
) -> None:
    # given an answer one byte longer than the (configured) cap, however it is framed
    body = completion_of_size(SMALL_CAP_BYTES + 1)
    raw = {
        "length": ok(body),
        "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:1000], body[1000:]))
        + b"0\r\n\r\n",
        "gzip": ok(gzip.compress(body), b"Content-Encoding: gzip"),
        "until-close": b"HTTP/1.1 200 OK\r\n\r\n" + body,
    }[framing]
    async with serving(sends(raw)) as served:
        failure = await failure_of(client_for(http, served))
    # then it fails as a transport failure, not retried (the model did answer), and says so
    assert (failure.kind, served.connections) == ("unreachable", 1)
    assert "answer from 127.0.0.1 exceeds 64 KiB; discarded" in plugin_log.text


async def test_the_embeddings_answer_is_capped_too(http: httpx.AsyncClient) -> None:
    from nonebot_plugin_aimemory.engine.embeddings import EmbeddingClient
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.llm import Endpoint

    vectors = {"data": [{"index": 0, "embedding": [0.5] * 20_000}]}
    async with serving(sends(ok(json.dumps(vectors).encode()))) as served:
        client = EmbeddingClient(
            http, Endpoint(served.base_url, "", "emb"), max_response_bytes=SMALL_CAP_BYTES
        )
        with pytest.raises(LLMError) as raised:
            await client.embed(["你好"])
    assert raised.value.kind == "unreachable"
    assert "64 KiB" in raised.value.detail


# --------------------------------------------------------------------------- malformed


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("HTTP/1.1 200 OK\r\nContent-Length: ²\r\n\r\n{}".encode(), id="length-²"),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n{}", id="length-negative"),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n{}", id="length-abc"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
            id="chunk-size-negative",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
            id="chunk-size-garbage",
        ),
        pytest.param(b"\x00\x01\xfe garbage, not HTTP\r\n\r\n", id="garbage"),
        pytest.param(b"HTTP/1.1 100 Continue\r\n\r\n", id="continue-then-close"),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", id="body-cut-short"),
        pytest.param(ok(b"not gzip at all", b"Content-Encoding: gzip"), id="gzip-corrupt"),
        pytest.param(
            ok(gzip.compress(completion_json("好的"))[:-4], b"Content-Encoding: gzip"),
            id="gzip-cut",
        ),
    ],
)
async def test_a_malformed_answer_is_retried_as_unreachable(
    http: httpx.AsyncClient, raw: bytes
) -> None:
    # given a server that answers every request with something that is no whole HTTP answer
    async with serving(sends(raw)) as served:
        # when a completion is requested
        failure = await failure_of(client_for(http, served))
    # then it was tried once and retried twice, then failed as unreachable
    assert failure.kind == "unreachable"
    assert served.connections == 3


async def test_an_encoding_not_asked_for_fails_unretried(http: httpx.AsyncClient) -> None:
    async with serving(sends(ok(b"\x1b\x00\x00", b"Content-Encoding: br"))) as served:
        failure = await failure_of(client_for(http, served))
    assert (failure.kind, served.connections) == ("unreachable", 1)


async def test_an_answer_without_length_ends_at_the_close(http: httpx.AsyncClient) -> None:
    # given an answer with neither length nor chunks: its body runs until the server closes
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + completion_json("好的")
    async with serving(sends(raw)) as served:
        completion = await client_for(http, served).complete(question())
    assert completion.message.text == "好的"
    assert served.connections == 1


# --------------------------------------------------------------------------- the deadline


@pytest.mark.parametrize("dripped", ["headers", "body"])
async def test_an_answer_dripped_past_the_deadline_times_out(
    http: httpx.AsyncClient, dripped: str
) -> None:
    # given a server sending its answer a byte every 50 ms: no read ever waits a second
    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, served: Served):
        await read_request(reader, served)
        raw = ok(completion_json("慢" * 100))
        head_end = raw.index(b"\r\n\r\n") + 4
        if dripped == "body":
            writer.write(raw[:head_end])
            raw = raw[head_end:]
        for i in range(len(raw)):
            if reader.at_eof():
                served.closed_by_client_at = asyncio.get_running_loop().time()
                return
            writer.write(raw[i : i + 1])
            await writer.drain()
            await asyncio.sleep(DRIP_INTERVAL_SECONDS)

    loop = asyncio.get_running_loop()
    async with serving(drip) as served:
        client = client_for(http, served, timeout_seconds=DEADLINE_SECONDS)
        started = loop.time()
        # when a completion is requested
        failure = await failure_of(client)
        elapsed = loop.time() - started
        await asyncio.sleep(3 * DRIP_INTERVAL_SECONDS)
    # then the whole call timed out at the deadline, was not retried, and its connection
    # was closed
    assert failure.kind == "timeout"
    assert DEADLINE_SECONDS - 0.05 <= elapsed < DEADLINE_SECONDS + 0.5
    assert served.connections == 1
    assert served.closed_by_client_at is not None
