"""Every body the panel reads is bounded before it is read, over a real socket: a declared
length past the cap is refused before a byte of the body is sent, a chunked body without a
length is refused as soon as it passes the cap, the connection is closed so the rest is
never read, and the real bot's memory stays flat under a 1 GB upload."""

from __future__ import annotations

import asyncio
import select
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.bot_process import bot_process
from tests.fakes.openai_server import FakeOpenAI
from tests.panel.browser import serving
from tests.panel.conftest import BASE, PANEL_TOKEN
from tests.panel.test_panel_limits_login import panel_app

LOGIN = f"{BASE}/login"
MEMORIES = f"{BASE}/api/chats/g:111/memories"
BEARER = f"Authorization: Bearer {PANEL_TOKEN}\r\n"
ONE_GB = 1 << 30
CHUNK_BYTES = 64 * 1024
ANSWER_SECONDS = 5.0
# What the kernel and the client's transport may hold on loopback while the server does not
# read: far below the gigabyte offered.
SOCKET_SLACK_BYTES = 32 << 20


@dataclass
class Upload:
    """How a raw upload ended: the status answered, the bytes the client got to send, and
    whether the server closed the connection after answering."""

    status: int
    sent_bytes: int
    closed: bool


async def upload(
    port: int, path: str, total_bytes: int, extra_headers: str = "", *, chunked: bool = True
) -> Upload:
    """POST `total_bytes` of body (chunked, or announced by Content-Length) until the server
    answers, from a thread (the server may be on this loop)."""
    return await asyncio.to_thread(_upload, port, path, total_bytes, extra_headers, chunked)


def _upload(port: int, path: str, total_bytes: int, extra_headers: str, chunked: bool) -> Upload:
    # A plain socket that looks for the answer before each send: a client that only writes
    # would see the server's reset (the unread rest in its buffer) instead of the answer.
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total_bytes}"
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{framing}\r\n{extra_headers}\r\n"
    piece = b"a" * CHUNK_BYTES
    frame = f"{CHUNK_BYTES:x}\r\n".encode() + piece + b"\r\n" if chunked else piece
    sent = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head.encode())
        sock.setblocking(False)
        deadline = time.monotonic() + ANSWER_SECONDS
        pending = memoryview(frame)
        while sent < total_bytes and time.monotonic() < deadline:
            readable, writable, _ = select.select([sock], [sock], [], 0.5)
            if readable:
                break
            if not writable:
                continue
            try:
                written = sock.send(pending)
            except BlockingIOError:
                continue
            except OSError:
                break
            sent += written
            pending = pending[written:] or memoryview(frame)
        sock.settimeout(ANSWER_SECONDS)
        answer = bytearray()
        closed = False
        try:
            while data := sock.recv(CHUNK_BYTES):
                answer += data
            closed = True
        except (ConnectionError, OSError) as error:
            closed = not isinstance(error, TimeoutError)
    status = int(bytes(answer).split(b" ", 2)[1]) if answer else 0
    return Upload(status, sent, closed)


class BodyMeter:
    """The panel's app, counting the body bytes the server handed it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.read_bytes = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counted() -> Any:
            message = await receive()
            self.read_bytes += len(message.get("body", b""))
            return message

        await self.app(scope, counted, send)


@dataclass
class MeteredPanel:
    port: int
    meter: BodyMeter


@pytest.fixture
async def metered(plugin) -> AsyncIterator[MeteredPanel]:
    """The panel on a real uvicorn server on 127.0.0.1, its body reads counted."""
    holder: list[BodyMeter] = []

    def wrap(app: Any) -> BodyMeter:
        holder.append(BodyMeter(app))
        return holder[0]

    app, data = panel_app(wrap=wrap)
    async with serving(app, log_config=None) as url:
        yield MeteredPanel(int(url.rsplit(":", 1)[1]), holder[0])
    await data.close()


async def test_a_chunked_login_body_of_a_gigabyte_is_refused_once_it_passes_4_kb(
    metered,
) -> None:
    from nonebot_plugin_aimemory.panel.pages import MAX_LOGIN_BODY_BYTES

    done = await upload(metered.port, LOGIN, ONE_GB)

    assert done.status == 413
    assert done.closed
    assert metered.meter.read_bytes <= MAX_LOGIN_BODY_BYTES + 4 * CHUNK_BYTES
    assert done.sent_bytes < SOCKET_SLACK_BYTES


async def test_a_chunked_api_body_of_a_gigabyte_is_refused_once_it_passes_64_kb(
    metered,
) -> None:
    from nonebot_plugin_aimemory.panel.dependencies import MAX_API_BODY_BYTES

    done = await upload(metered.port, MEMORIES, ONE_GB, BEARER)

    assert done.status == 413
    assert done.closed
    assert metered.meter.read_bytes <= MAX_API_BODY_BYTES + 4 * CHUNK_BYTES
    assert done.sent_bytes < SOCKET_SLACK_BYTES


async def test_a_refused_api_call_with_a_chunked_body_is_closed_with_the_body_unread(
    metered,
) -> None:
    done = await upload(metered.port, MEMORIES, ONE_GB)

    assert done.status == 401
    assert done.closed
    assert metered.meter.read_bytes == 0
    assert done.sent_bytes < SOCKET_SLACK_BYTES


@pytest.mark.parametrize(("path", "headers"), [(LOGIN, ""), (MEMORIES, ""), (MEMORIES, BEARER)])
async def test_a_declared_length_past_the_cap_is_refused_before_the_body_is_sent(
    metered, path: str, headers: str
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", metered.port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {ONE_GB}\r\n"
        f"{headers}\r\n".encode()
    )

    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), ANSWER_SECONDS)
    writer.close()

    assert head.split(b" ", 2)[1] == b"413"
    assert b"connection: close" in head.lower()
    assert metered.meter.read_bytes == 0


async def test_the_refusal_says_why_in_chinese(metered) -> None:
    from nonebot_plugin_aimemory import texts

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{metered.port}") as client:
        api = await client.post(MEMORIES, content=b"{" + b" " * (70 * 1024) + b"}")
        login = await client.post(LOGIN, content=b"token=" + b"x" * 5000)

    assert api.status_code == 413
    assert api.json() == {"error": "too_large", "reason": texts.PANEL_BODY_TOO_LARGE}
    assert login.status_code == 413
    assert texts.PANEL_BODY_TOO_LARGE in login.text


async def test_bodies_up_to_the_caps_are_still_read(metered) -> None:
    from nonebot_plugin_aimemory.panel.dependencies import MAX_API_BODY_BYTES
    from nonebot_plugin_aimemory.panel.pages import MAX_LOGIN_BODY_BYTES

    form = f"token={PANEL_TOKEN}&pad="
    login_body = (form + "x" * (MAX_LOGIN_BODY_BYTES - len(form))).encode()
    json_start = '{"content": "小明喜欢猫", "pad": "'.encode()
    api_body = json_start + b"x" * (MAX_API_BODY_BYTES - len(json_start) - 2) + b'"}'
    bearer = {"Authorization": f"Bearer {PANEL_TOKEN}"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{metered.port}") as client:
        login = await client.post(LOGIN, content=login_body)
        api = await client.post(MEMORIES, content=api_body, headers=bearer)

    assert (len(login_body), len(api_body)) == (MAX_LOGIN_BODY_BYTES, MAX_API_BODY_BYTES)
    assert login.status_code == 303
    assert api.status_code == 201


def resident_bytes(pid: int) -> int:
    """A process's resident memory (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def test_the_real_bot_stays_flat_under_gigabyte_uploads(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    async with bot_process(
        tmp_path, llm, HOST="127.0.0.1", AIMEMORY_PANEL_TOKEN=PANEL_TOKEN
    ) as bot:
        # Once through each route, so what they import and cache is there before measuring.
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bot.port}") as client:
            await client.post(LOGIN, data={"token": "wrong-token-warm-up"})
            await client.post(MEMORIES, content=b"{", headers={"Authorization": "Bearer x"})
        before = resident_bytes(bot.process.pid)

        login = await upload(bot.port, LOGIN, ONE_GB)
        api = await upload(bot.port, MEMORIES, ONE_GB, BEARER)
        declared = await upload(bot.port, LOGIN, ONE_GB, chunked=False)

        grown = resident_bytes(bot.process.pid) - before

    assert (login.status, api.status, declared.status) == (413, 413, 413)
    assert grown < 8 << 20, f"grew by {grown / 2**20:.1f} MiB"


@pytest.mark.parametrize("path", [LOGIN, MEMORIES])
async def test_a_client_leaving_mid_body_leaves_no_traceback(
    metered, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    _reader, writer = await asyncio.open_connection("127.0.0.1", metered.port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
        f"{BEARER}\r\n10\r\ntoken=abc".encode()
    )
    await writer.drain()
    await asyncio.sleep(0.1)
    writer.close()
    await asyncio.sleep(0.3)

    assert metered.meter.read_bytes > 0  # it was reading the body when the client left
    assert "Exception in ASGI application" not in caplog.text
    assert "ClientDisconnect" not in caplog.text
