"""CPU one model call's HTTP exchange costs this process, per HTTP client, side by side.

A small HTTP/1.1 server in a child process (its CPU not counted) answers every POST with a
fixed ~300-byte chat completion on 127.0.0.1; this process sends it 2 000 sequential POSTs
of a ~4 KB chat body (300 with --quick) through each client, in rotating blocks: raw asyncio
streams kept alive (the baseline: the least an exchange costs in Python), httpx kept alive,
httpx with `Connection: close`, and the plugin's `SharedHttp.post_capped` (a new connection
per call). CPU per request is the `time.process_time()` delta (mean, p50, p99 in µs), beside
the wall p50; on asyncio's default loop (the bots run on uvloop). No target: figures only.
Run: python -m bench.http_cost [--quick]; bench.footprint runs it and prints its table.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import httpx

from bench.harness import API_KEY, RESULT_PREFIX, Bench, chat_line, main, percentile

HOST = "127.0.0.1"
CHAT_PATH = "/v1/chat/completions"
TIMEOUT_SECONDS = 120.0
SERVER_START_SECONDS = 30.0
REQUEST_BODY_BYTES = 4096
WARMUP_REQUESTS = 20
CHOICE = {"index": 0, "message": {"role": "assistant", "content": "收到～"},
          "logprobs": None, "finish_reason": "stop"}  # fmt: skip
ANSWER = json.dumps(
    {"id": "chatcmpl-bench0000000000000000", "object": "chat.completion",
     "created": 1_700_000_000, "model": "gpt-4o-mini", "system_fingerprint": "fp_bench0000",
     "choices": [CHOICE],
     "usage": {"prompt_tokens": 1024, "completion_tokens": 3, "total_tokens": 1027}},
    ensure_ascii=False,
).encode()  # fmt: skip


def serve(ready: Connection) -> None:
    """The child process: serve on a free port of 127.0.0.1, sent through `ready`."""
    asyncio.run(_serve(ready))


async def _serve(ready: Connection) -> None:
    server = await asyncio.start_server(_answer, HOST, 0)
    ready.send(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer each request on the connection; close after one that asks for it."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length, close = _length_and_close(head)
            await reader.readexactly(length)
            writer.write(_answer_head(close) + ANSWER)
            await writer.drain()
            if close:
                break
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the client closed the connection
    finally:
        writer.close()


def _length_and_close(head: bytes) -> tuple[int, bool]:
    """The Content-Length of a request head, and whether it says `Connection: close`."""
    length, close = 0, False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection":
            close = value.strip().lower() == b"close"
    return length, close


def _answer_head(close: bool) -> bytes:
    connection = b"Connection: close\r\n" if close else b""
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + connection
        + b"Content-Length: %d\r\n\r\n" % len(ANSWER)
    )


def start_server() -> tuple[BaseProcess, int]:
    """The server's child process, and its port."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=serve, args=(theirs,), name="http-cost-server", daemon=True)
    process.start()
    if not ours.poll(SERVER_START_SECONDS):
        process.kill()
        raise SystemExit(f"the HTTP server did not start within {SERVER_START_SECONDS:g} s")
    return process, int(ours.recv())


@dataclass
class Poster:
    """One way to POST the body: a label, the call, its clean-up, and what it cost."""

    key: str
    label: str
    post: Callable[[], Awaitable[object]]
    close: Callable[[], Awaitable[None]]
    cpu_ns: list[int] = field(default_factory=list)
    wall_ns: list[int] = field(default_factory=list)


def chat_request_body(rng: random.Random) -> bytes:
    """A chat-completions request of about REQUEST_BODY_BYTES: a system prompt and turns
    of Chinese group chat."""
    messages: list[dict[str, str]] = [{"role": "system", "content": chat_line(rng, 200, 300)}]
    body = {"model": "gpt-4o-mini", "messages": messages, "max_tokens": 512}
    while len(encoded := json.dumps(body, ensure_ascii=False).encode()) < REQUEST_BODY_BYTES:
        role = "user" if messages[-1]["role"] != "user" else "assistant"
        messages.append({"role": role, "content": chat_line(rng, 20, 120)})
    return encoded


def request_headers() -> dict[str, str]:
    """The headers of a model call."""
    return {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}


def raw_streams_poster(port: int, body: bytes) -> Poster:
    """The baseline: a hand-made exchange on one kept-alive asyncio-streams connection."""
    streams: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    head = "".join(f"{name}: {value}\r\n" for name, value in request_headers().items())

    async def post() -> bytes:
        if not streams:
            streams.append(await asyncio.open_connection(HOST, port))
        reader, writer = streams[0]
        writer.write(
            f"POST {CHAT_PATH} HTTP/1.1\r\nHost: {HOST}:{port}\r\n{head}"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        answer_head = await reader.readuntil(b"\r\n\r\n")
        if not answer_head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"unexpected answer {answer_head[:40]!r}")
        length, _ = _length_and_close(answer_head)
        return await reader.readexactly(length)

    async def close() -> None:
        for _, writer in streams:
            writer.close()
            await writer.wait_closed()

    return Poster("raw_streams", "raw asyncio streams, kept alive", post, close)


def httpx_posters(url: str, body: bytes) -> list[Poster]:
    """httpx's `AsyncClient.post`: kept alive, and with `Connection: close`."""
    client = httpx.AsyncClient(timeout=TIMEOUT_SECONDS)
    kept_alive, closing = request_headers(), {**request_headers(), "Connection": "close"}

    async def post_kept_alive() -> bytes:
        response = await client.post(url, content=body, headers=kept_alive)
        return response.raise_for_status().content

    async def post_closing() -> bytes:
        response = await client.post(url, content=body, headers=closing)
        return response.raise_for_status().content

    async def no_close() -> None:
        return None  # the kept-alive poster's client is closed by the other

    return [
        Poster("httpx_kept_alive", "httpx AsyncClient.post, kept alive", post_kept_alive, no_close),
        Poster(
            "httpx_close", "httpx AsyncClient.post, Connection: close", post_closing, client.aclose
        ),
    ]


def plugin_poster(url: str, body: bytes) -> Poster:
    """The plugin's path of every model call (imported here: NoneBot is initialised by now)."""
    from nonebot_plugin_aimemory.engine.shared_http import SharedHttp

    http = SharedHttp(TIMEOUT_SECONDS)
    headers = request_headers()

    async def post() -> bytes:
        answer = await http.post_capped(
            url, content=body, headers=headers, timeout_seconds=TIMEOUT_SECONDS
        )
        if answer.status_code != 200:
            raise RuntimeError(f"unexpected status {answer.status_code}")
        return answer.content

    return Poster("plugin", "plugin: SharedHttp.post_capped (Connection: close)", post, http.aclose)


async def take_turns(posters: list[Poster], requests: int, blocks: int) -> None:
    """WARMUP_REQUESTS uncounted per poster, then `blocks` rounds in which each poster
    sends its next block, the order rotating; each request's CPU and wall time."""
    for poster in posters:
        for _ in range(WARMUP_REQUESTS):
            await poster.post()
    per_block = requests // blocks
    for block in range(blocks):
        for offset in range(len(posters)):
            poster = posters[(block + offset) % len(posters)]
            for _ in range(per_block):
                cpu, wall = time.process_time_ns(), time.perf_counter_ns()
                await poster.post()
                poster.wall_ns.append(time.perf_counter_ns() - wall)
                poster.cpu_ns.append(time.process_time_ns() - cpu)


@dataclass(frozen=True)
class Row:
    """One client's figures, in µs per request."""

    label: str
    cpu_mean_us: float
    cpu_p50_us: float
    cpu_p99_us: float
    wall_p50_us: float
    requests: int


def row_of(poster: Poster) -> Row:
    """The figures of what `poster` measured."""
    return Row(
        poster.label,
        statistics.fmean(poster.cpu_ns) / 1000,
        percentile(poster.cpu_ns, 0.5) / 1000,
        percentile(poster.cpu_ns, 0.99) / 1000,
        percentile(poster.wall_ns, 0.5) / 1000,
        len(poster.cpu_ns),
    )


async def measure(quick: bool) -> dict[str, Any]:
    """Start the server, take the posters' turns, stop it; the figures as a dict."""
    body = chat_request_body(random.Random(23))
    server, port = await asyncio.to_thread(start_server)
    url = f"http://{HOST}:{port}{CHAT_PATH}"
    posters = [raw_streams_poster(port, body), *httpx_posters(url, body), plugin_poster(url, body)]
    try:
        await take_turns(posters, *((300, 3) if quick else (2_000, 10)))
    finally:
        for poster in posters:
            await poster.close()
        server.kill()
        await asyncio.to_thread(server.join)
    return {
        "quick": quick,
        "request_bytes": len(body),
        "answer_bytes": len(ANSWER),
        "rows": {poster.key: asdict(row_of(poster)) for poster in posters},
    }


def print_report(result: dict[str, Any]) -> None:
    """The figures of `measure`: a row per client, its ratio to the baseline, and what
    `Connection: close` costs the plugin."""
    rows = {key: Row(**row) for key, row in result["rows"].items()}
    baseline = rows["raw_streams"].cpu_mean_us
    requests = rows["raw_streams"].requests
    print()
    print(
        f"HTTP client CPU per request in this process ({requests} sequential POSTs per client "
        f"of a {result['request_bytes']} B chat-completions body, {result['answer_bytes']} B "
        "answer; the server in another process)"
    )
    print(f"{'':<52}{'CPU mean':>10}{'p50':>8}{'p99':>8}{'wall p50':>10}{'÷ baseline':>12}")
    for row in rows.values():
        print(
            f"{row.label:<52}{row.cpu_mean_us:>8.0f}µs{row.cpu_p50_us:>6.0f}µs"
            f"{row.cpu_p99_us:>6.0f}µs{row.wall_p50_us:>8.0f}µs"
            f"{row.cpu_mean_us / baseline:>11.1f}×"
        )
    kept_alive, closing = rows["httpx_kept_alive"], rows["httpx_close"]
    plugin = rows["plugin"]
    print(
        f"Connection: close costs the plugin {plugin.cpu_mean_us - kept_alive.cpu_mean_us:+.0f} µs "
        "CPU per request (plugin path − httpx kept alive; httpx's own Connection: close − kept "
        f"alive: {closing.cpu_mean_us - kept_alive.cpu_mean_us:+.0f} µs)"
    )


async def run(bench: Bench) -> dict[str, Any]:
    """Measure (a --quick run when asked by the command line or the parent's spec); print
    the report unless a parent (bench.footprint) prints it."""
    quick = bench.quick or bool((bench.child or {}).get("quick"))
    result = await measure(quick)
    if bench.child is None:
        print_report(result)
        print(RESULT_PREFIX + json.dumps(result, ensure_ascii=False), flush=True)
    return result


if __name__ == "__main__":
    main(__doc__, run)
