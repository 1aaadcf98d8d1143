"""A fake OneBot v11 implementation (what NapCat or Lagrange does) on the bot's reverse
WebSocket: it pushes message events and answers the API calls the bot makes."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import nonebot
from async_asgi_testclient.websocket import WebSocketSession
from nonebot.adapters.onebot.v11 import GroupMessageEvent, PrivateMessageEvent
from nonebug import App

from .events import SELF_ID, onebot_payload

WS_PATH = "/onebot/v11/ws"
REPLY_TIMEOUT_SECONDS = 3.0
DISCONNECT_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class ApiCall:
    """One action the bot asked the OneBot implementation to perform."""

    action: str
    params: dict[str, Any]


@dataclass
class OneBotClient:
    """The implementation's side of a connected reverse WebSocket."""

    ws: WebSocketSession
    self_id: int = SELF_ID
    calls: list[ApiCall] = field(default_factory=list)
    # message_id -> sender user_id that `get_msg` reports for it (the bot's id by default).
    quoted_senders: dict[int, int] = field(default_factory=dict)
    _sends: asyncio.Queue[ApiCall] = field(default_factory=asyncio.Queue)
    _message_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(9000))
    _server: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._server = asyncio.create_task(self._serve())

    async def hang_up(self) -> None:
        """Drop the connection, as an implementation that crashed or logged out does, and
        wait until NoneBot has dropped the bot."""
        await self.stop()
        await self.ws.close()
        await _wait_until_disconnected(str(self.self_id))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._server

    async def send_event(
        self, event: GroupMessageEvent | PrivateMessageEvent, *, self_id: int | None = None
    ) -> None:
        """Push `event` as the JSON a OneBot implementation sends (message as segments),
        naming this connection's account as `self_id` (or the one given: a confused
        implementation)."""
        payload = onebot_payload(event)
        payload["self_id"] = self.self_id if self_id is None else self_id
        await self.ws.send_json(payload)

    async def next_send(self, timeout: float = REPLY_TIMEOUT_SECONDS) -> ApiCall:
        """The next `send_msg` call, or TimeoutError after `timeout` seconds."""
        return await asyncio.wait_for(self._sends.get(), timeout)

    def sent_so_far(self) -> list[ApiCall]:
        """The `send_msg` calls not taken by `next_send` yet, taken now."""
        calls: list[ApiCall] = []
        while not self._sends.empty():
            calls.append(self._sends.get_nowait())
        return calls

    async def assert_nothing_sent(self, wait_seconds: float = 0.5) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            call = await asyncio.wait_for(self._sends.get(), wait_seconds)
            raise AssertionError(f"the bot sent a message it should not have: {call}")

    async def _serve(self) -> None:
        while True:
            request = await self.ws.receive_json()
            action = request.get("action", "")
            params = request.get("params") or {}
            self.calls.append(ApiCall(action, params))
            data = self._answer(action, params)
            await self.ws.send_json(
                {"status": "ok", "retcode": 0, "data": data, "echo": request.get("echo")}
            )

    def _answer(self, action: str, params: dict[str, Any]) -> Any:
        if action in ("send_msg", "send_group_msg", "send_private_msg"):
            self._sends.put_nowait(ApiCall(action, params))
            return {"message_id": next(self._message_ids)}
        if action == "get_msg":
            return self._stored_message(int(params["message_id"]))
        if action == "get_login_info":
            return {"user_id": self.self_id, "nickname": "小忆"}
        return None

    def _stored_message(self, message_id: int) -> dict[str, Any]:
        sender_id = self.quoted_senders.get(message_id, self.self_id)
        return {
            "time": 1_796_000_000,
            "message_type": "group",
            "message_id": message_id,
            "real_id": message_id,
            "sender": {
                "user_id": sender_id,
                "nickname": "小忆" if sender_id == self.self_id else "",
            },
            "message": [{"type": "text", "data": {"text": "之前的消息"}}],
        }


def ws_headers(*, self_id: int = SELF_ID, access_token: str | None) -> dict[str, str]:
    headers = {"X-Self-ID": str(self_id), "X-Client-Role": "Universal"}
    if access_token is not None:
        headers["Authorization"] = f"Bearer {access_token}"
    return headers


@contextlib.asynccontextmanager
async def connect_onebot(
    app: App, *, access_token: str, self_id: int = SELF_ID
) -> AsyncIterator[OneBotClient]:
    """Connect as a OneBot implementation; on exit, wait until NoneBot has dropped the bot."""
    async with app.test_server() as ctx:
        session = ctx.get_client().websocket_connect(
            WS_PATH, headers=ws_headers(self_id=self_id, access_token=access_token)
        )
        async with session as ws:
            client = OneBotClient(ws, self_id=self_id)
            client.start()
            try:
                yield client
            finally:
                await client.stop()
        await _wait_until_disconnected(str(self_id))


@contextlib.asynccontextmanager
async def connect_onebots(
    app: App, *, access_token: str, self_ids: tuple[int, ...]
) -> AsyncIterator[tuple[OneBotClient, ...]]:
    """Connect several accounts to one bot, as NapCat or Lagrange running several QQ
    accounts does: one reverse WebSocket each. On exit, wait until NoneBot dropped them."""
    async with app.test_server() as ctx, contextlib.AsyncExitStack() as stack:
        clients: list[OneBotClient] = []
        for self_id in self_ids:
            session = ctx.get_client().websocket_connect(
                WS_PATH, headers=ws_headers(self_id=self_id, access_token=access_token)
            )
            ws = await stack.enter_async_context(session)
            client = OneBotClient(ws, self_id=self_id)
            client.start()
            stack.push_async_callback(client.stop)
            clients.append(client)
        await _wait_until_connected({str(self_id) for self_id in self_ids})
        yield tuple(clients)
    for self_id in self_ids:
        await _wait_until_disconnected(str(self_id))


async def _wait_until_connected(self_ids: set[str]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DISCONNECT_TIMEOUT_SECONDS
    while not self_ids <= set(nonebot.get_bots()):
        if loop.time() > deadline:
            raise TimeoutError(f"bots {self_ids - set(nonebot.get_bots())} did not connect")
        await asyncio.sleep(0.01)


async def handshake_answer(app: App, headers: dict[str, str]) -> dict[str, Any]:
    """The ASGI app's first answer to a WebSocket handshake on the OneBot path:
    `websocket.accept`, or `websocket.close` (which servers turn into HTTP 403)."""
    async with app.test_server() as ctx:
        asgi = ctx.get_client().application
        scope = {
            "type": "websocket",
            "asgi": {"version": "3.0"},
            "scheme": "ws",
            "path": WS_PATH,
            "raw_path": WS_PATH.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"testserver")]
            + [(name.lower().encode(), value.encode()) for name, value in headers.items()],
            "subprotocols": [],
        }
        incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        outgoing: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        incoming.put_nowait({"type": "websocket.connect"})
        app_task = asyncio.create_task(asgi(scope, incoming.get, outgoing.put))
        try:
            return await asyncio.wait_for(outgoing.get(), REPLY_TIMEOUT_SECONDS)
        finally:
            incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})
            with contextlib.suppress(Exception):
                await asyncio.wait_for(app_task, REPLY_TIMEOUT_SECONDS)


async def _wait_until_disconnected(self_id: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DISCONNECT_TIMEOUT_SECONDS
    while self_id in nonebot.get_bots():
        if loop.time() > deadline:
            raise TimeoutError(f"bot {self_id} still connected after the WebSocket closed")
        await asyncio.sleep(0.01)
