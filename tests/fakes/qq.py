"""The QQ side of the content tests (tests/onebot, tests/media): a OneBot implementation that
answers the lookups the plugin makes (quoted messages, forwards, member names), segment
factories shaped like what NapCat sends, and readers for what the model saw and what was
persisted."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nonebot.adapters.onebot.v11 import ActionFailed, Message, MessageSegment

from tests.fakes.bots import ApiCall, RecordingBot
from tests.fakes.openai_server import FakeOpenAI, Reply, last_user_text, text

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.runtime import Runtime
    from tests.fakes.harness import PluginHarness

VISION_MODEL = "vision-model"
MAIN_MODEL = "fake-model"
DESCRIPTION = "一只橘猫趴在键盘上"
REPLY = "好的"
LOOKUPS = ("get_msg", "get_forward_msg", "get_group_member_info")


class QQBot(RecordingBot):
    """A RecordingBot that answers lookups from what the test stored, and fails (as NapCat
    does, with `ActionFailed`) for anything it does not know. `forward_delays` makes
    `get_forward_msg` of an id answer late, or never (`math.inf`)."""

    def __init__(self) -> None:
        super().__init__()
        self.stored_messages: dict[int, dict[str, Any]] = {}
        self.forwards: dict[str, list[dict[str, Any]]] = {}
        self.members: dict[tuple[int, int], dict[str, Any]] = {}
        self.forward_delays: dict[str, float] = {}

    def add_member(self, group_id: int, user_id: int, card: str = "", nickname: str = "") -> None:
        self.members[(group_id, user_id)] = {
            "group_id": group_id,
            "user_id": user_id,
            "card": card,
            "nickname": nickname or f"user{user_id}",
            "role": "member",
        }

    def store_message(self, message_id: int, user_id: int, card: str, said: str) -> None:
        self.store_content(message_id, user_id, card, [{"type": "text", "data": {"text": said}}])

    def store_content(
        self, message_id: int, user_id: int, card: str, message: list[dict[str, Any]] | str
    ) -> None:
        """A message `get_msg` returns: segments as dicts, or CQ-code text (go-cqhttp's
        string format)."""
        self.stored_messages[message_id] = {
            "time": 1_796_000_000,
            "message_type": "group",
            "message_id": message_id,
            "real_id": message_id,
            "sender": {"user_id": user_id, "nickname": f"nick{user_id}", "card": card},
            "message": message,
        }

    async def call_api(self, api: str, **data: Any) -> Any:
        if api not in LOOKUPS:
            return await super().call_api(api, **data)
        self.calls.append(ApiCall(api, data))
        if api == "get_forward_msg":
            await self._answer_late(str(data["id"]))
        found = self._lookup(api, data)
        if found is None:
            raise ActionFailed(status="failed", retcode=200, message=f"{api} failed", data=None)
        return found

    async def _answer_late(self, forward_id: str) -> None:
        delay = self.forward_delays.get(forward_id, 0.0)
        if delay == math.inf:
            await asyncio.get_running_loop().create_future()
        elif delay > 0:
            await asyncio.sleep(delay)

    def _lookup(self, api: str, data: dict[str, Any]) -> Any:
        if api == "get_msg":
            return self.stored_messages.get(int(data["message_id"]))
        if api == "get_forward_msg":
            nodes = self.forwards.get(str(data["id"]))
            return None if nodes is None else {"messages": nodes}
        return self.members.get((int(data["group_id"]), int(data["user_id"])))

    def lookups(self, api: str) -> list[dict[str, Any]]:
        return [call.data for call in self.calls if call.api == api]

    @property
    def last_sent(self) -> Message:
        message = self.sent[-1].data["message"]
        assert isinstance(message, Message)
        return message


# ---------------------------------------------------------------------------- segments


def qq_image(url: str, file: str = "6A1F0E2B9C.png") -> MessageSegment:
    """An image segment as NapCat sends it: a file name and QQ's temporary URL."""
    return MessageSegment("image", {"file": file, "url": url, "summary": "", "file_size": "68"})


def as_dict(segment: MessageSegment) -> dict[str, Any]:
    """A segment as the JSON a OneBot API answer holds."""
    return {"type": segment.type, "data": dict(segment.data)}


def content(*segments: MessageSegment | str) -> Message:
    return Message([MessageSegment.text(s) if isinstance(s, str) else s for s in segments])


def short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:8]


def data_uri(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


# ---------------------------------------------------------------------------- the model


def describing(
    description: str | Reply = DESCRIPTION, reply: str = REPLY
) -> Callable[[dict[str, Any]], Reply]:
    """A responder: the vision model describes (or fails as scripted), the main model says
    `reply`."""

    def respond(body: dict[str, Any]) -> Reply:
        if body.get("model") == VISION_MODEL:
            return text(description) if isinstance(description, str) else description
        return text(reply)

    return respond


async def restart_with_vision(plugin: PluginHarness, **overrides: Any) -> Runtime:
    """Restart with the vision model on the fake LLM; its retries do not wait a second."""
    runtime = await plugin.restart(aimemory_vision_model=VISION_MODEL, **overrides)
    from nonebot_plugin_aimemory.engine.llm import LLMClient

    assert isinstance(runtime.images.vision, LLMClient)
    runtime.images.vision.backoff_seconds = 0.01
    return runtime


def main_requests(llm: FakeOpenAI) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if body.get("model") == MAIN_MODEL]


def vision_requests(llm: FakeOpenAI) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if body.get("model") == VISION_MODEL]


def user_line(llm: FakeOpenAI) -> str:
    """Text of the user message the main model was last asked about."""
    return last_user_text(main_requests(llm)[-1]["messages"])


def image_urls(message: dict[str, Any]) -> list[str]:
    parts = message.get("content")
    if not isinstance(parts, list):
        return []
    return [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]


# ---------------------------------------------------------------------------- persistence


async def stored_bodies(plugin: PluginHarness, key: str) -> list[dict[str, Any]]:
    assert plugin.runtime is not None
    assert plugin.runtime.database is not None
    rows = await plugin.runtime.database.read(
        "SELECT body FROM messages WHERE session_key = ? ORDER BY seq", (key,)
    )
    return [json.loads(body) for (body,) in rows]


async def everything_persisted(plugin: PluginHarness) -> str:
    """Every row of every table, as text: what a restart could ever read back."""
    assert plugin.runtime is not None
    assert plugin.runtime.database is not None
    database = plugin.runtime.database
    tables = await database.read("SELECT name FROM sqlite_master WHERE type = 'table'")
    dumped = []
    for (name,) in tables:
        rows = await database.read(f'SELECT * FROM "{name}"')
        dumped.extend(repr(tuple(row)) for row in rows)
    return "\n".join(dumped)
