"""Shared steps of the chat-log and review tests: people talking to the bot, the fake
reviewer model, a hand-moved clock, and reading what the chat log holds."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from nonebot.adapters.onebot.v11 import (
    GroupMessageEvent,
    Message,
    MessageSegment,
    PrivateMessageEvent,
)

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import Reply, TextReply, delay, last_user_text, text, tool_calls

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

GROUP_ID = 111
GROUP = f"g:{GROUP_ID}"
REVIEW_MARK = "整理长期记忆"
# A line of read_recent_chat / search_current_chat: "[2026-11-30 14:05] 小明(2001)：…".
LINE_PATTERN = r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\] (?:[^\n]+\(\d+\)|机器人)："


def ops(*operations: dict[str, Any]) -> TextReply:
    """A reviewer answer: exactly the JSON object it was asked for."""
    return text(json.dumps({"ops": list(operations)}, ensure_ascii=False))


def is_review_request(body: dict[str, Any]) -> bool:
    """A request of the memory reviewer (not a chat turn)."""
    messages = body.get("messages") or []
    return bool(messages) and REVIEW_MARK in str(messages[0].get("content", ""))


@dataclass
class FakeReviewer:
    """Review requests get the queued answers (then a noop), each after `delay_seconds`;
    every other chat request gets 好的."""

    delay_seconds: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    _answers: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, *answers: Reply | str) -> None:
        """Queue the reviewer's next answers; a str is sent as the raw text it wrote."""
        with self._lock:
            self._answers.extend(text(a) if isinstance(a, str) else a for a in answers)

    @property
    def shown(self) -> str:
        """What the last review request showed the reviewer (memories and chat)."""
        return last_user_text(self.requests[-1]["messages"])

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not is_review_request(body):
            return text("好的")
        with self._lock:
            self.requests.append(body)
            self.arrivals.append(time.monotonic())
            reply = self._answers.popleft() if self._answers else ops({"op": "noop"})
        return delay(self.delay_seconds, reply) if self.delay_seconds else reply


@dataclass
class FakeClock:
    """An aware UTC clock that only moves when told to."""

    now: datetime = field(
        default_factory=lambda: datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
    )

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def said(
    content: str | Message | MessageSegment, *, group_id: int = GROUP_ID, **fields: Any
) -> GroupMessageEvent:
    """A group message sent now (so retention never treats it as old)."""
    fields.setdefault("event_time", int(time.time()))
    return group_message(content, group_id=group_id, **fields)


def said_privately(content: str, **fields: Any) -> PrivateMessageEvent:
    """A private message sent now."""
    fields.setdefault("event_time", int(time.time()))
    return private_message(content, **fields)


async def talk(plugin, bot: RecordingBot, *lines: str, group_id: int = GROUP_ID) -> None:
    """People address the bot with `lines`, one turn each; the chat log is then flushed."""
    for line in lines:
        await bot.receive(said(line, to_me=True, group_id=group_id))
    await plugin.runtime.chat_log.flush()


async def model_calls(
    plugin, bot: RecordingBot, name: str, arguments: dict[str, Any], *, group_id: int = GROUP_ID
) -> str:
    """Someone in the group asks the bot something; the model answers by calling tool
    `name` once, then says 我查了一下. Returns the tool result the model was shown."""
    plugin.llm.script(tool_calls((name, arguments)), text("我查了一下。"))
    await bot.receive(said("帮我查一下", to_me=True, group_id=group_id))
    result = plugin.llm.last_messages()[-1]
    assert result["role"] == "tool", result
    return result["content"]


async def command(bot: RecordingBot, line: str, *, role: str = "admin", **fields: Any) -> str:
    """A group admin (by default) sends a command; returns the bot's one answer."""
    before = len(bot.sent)
    await bot.receive(said(line, role=role, **fields))
    assert len(bot.sent) == before + 1, bot.sent_texts[before:]
    return bot.sent_texts[-1]


async def logged(plugin, key: str = GROUP) -> list[ChatRow]:
    """The session's chat-log rows as stored, oldest first."""
    return await plugin.runtime.chat_log.writer.store.recent(key, 100)


async def log_rows(plugin, key: str, *lines: str, created_at: str | None = None) -> None:
    """Rows already in the chat log of `key` (said by 小明, 2001), oldest first."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    moment = created_at or utc_now_text()
    rows = [ChatRow(key, moment, "user", line, "2001", "小明") for line in lines]
    await plugin.runtime.chat_log.writer.store.insert_many(rows)


async def tick_and_wait(plugin) -> list[str]:
    """One scheduler tick, waiting for the reviews it started; the session keys started
    (none when the runtime has no review scheduler)."""
    from nonebot_plugin_aimemory.chatlog.scheduler import ReviewScheduler

    reviews = plugin.runtime.chat_log.reviews
    if not isinstance(reviews, ReviewScheduler):
        return []
    started = await reviews.tick()
    await asyncio.gather(*list(reviews.running.values()), return_exceptions=True)
    return started


async def live_memories(plugin, scope: str = GROUP) -> list[MemoryRecord]:
    """Live memories of `scope` as the database holds them, oldest first."""
    records = await plugin.runtime.memory.service.store.load_scope(scope)
    records.sort(key=lambda r: (r.created_at, r.id))
    return [r for r in records if not r.deleted]


async def eventually(check, timeout_seconds: float = 3.0) -> None:
    """Wait until the async `check()` is true (background work of the runtime)."""
    deadline = time.monotonic() + timeout_seconds
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_seconds}s: {check.__name__}")
        await asyncio.sleep(0.02)
