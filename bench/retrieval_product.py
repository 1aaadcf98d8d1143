"""The retrieval bench's use of the plugin: conversations written through its write paths,
questions asked of a session's tools as the model calls them, and the answers read back (a
chat-log line by its minute, a memory by its `#id`)."""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, TypeVar
from zoneinfo import ZoneInfo

from bench import harness as h
from bench.harness import chat_log_writer, chat_row, memory_service
from bench.retrieval_data import document

if TYPE_CHECKING:
    from bench.harness import Runtime
    from bench.retrieval_data import Conversation, MessageKey

CHAT, MEMORY = "search_current_chat", "memory_search"
SEARCH_LIMIT = 10
FILL_BATCH_ROWS = 1000
MINUTE_FORMAT = "%Y-%m-%d %H:%M"
_QUERY_ARGUMENT = {CHAT: "keyword", MEMORY: "query"}
_CHAT_LINE = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\] ")
_MEMORY_LINE = re.compile(r"^#(\w+) ")
_NOTHING_FOUND = ("没有找到", "当前会话还没有")
_T = TypeVar("_T")


def friend_key(qq: int) -> str:
    """The private chat (and memory scope) of a user."""
    from nonebot_plugin_aimemory.scopes import Scope

    return str(Scope.friend(qq))


@dataclass(frozen=True)
class ChatSession:
    """Where a conversation is logged: the session (and memory scope), each speaker's QQ
    number, and each message by the minute its line shows."""

    key: str
    qq_of: dict[str, int]
    by_minute: dict[str, MessageKey]

    @classmethod
    def of(cls, conversation: Conversation, number: int, speaker_qqs: Iterable[int]) -> ChatSession:
        """A private chat with QQ `number`, or group `number` whose people get
        `speaker_qqs` in the order they first speak."""
        minutes = {m.at.strftime(MINUTE_FORMAT): m.key for m in conversation.messages}
        if len(minutes) != len(conversation.messages):
            raise SystemExit(f"{conversation.id}: two messages share a minute")
        speakers = conversation.speakers
        if conversation.chat == "private":
            if len(speakers) > 1:
                raise SystemExit(f"{conversation.id}: a private chat of {len(speakers)} people")
            return cls(friend_key(number), dict.fromkeys(speakers, number), minutes)
        qq_of = dict(zip(speakers, speaker_qqs, strict=False))
        return cls(h.group_key(number), qq_of, minutes)


async def write_conversation(
    runtime: Runtime, conversation: Conversation, session: ChatSession
) -> dict[str, frozenset[str]]:
    """Log a conversation in its chat, then save each memorable message as a memory of the
    chat on the day it was said; the turns each memory holds (a duplicate joins the one it
    repeats)."""
    writer, service = chat_log_writer(runtime), memory_service(runtime)
    zone = ZoneInfo(runtime.config.aimemory_timezone)
    for message in conversation.messages:
        speaker = None
        if message.role == "user":
            speaker = (str(session.qq_of[message.speaker]), message.speaker)
        at = message.at.replace(tzinfo=zone)
        writer.add(chat_row(session.key, at, message.role, message.text, speaker))
    await writer.flush()
    held: defaultdict[str, set[str]] = defaultdict(set)
    real_clock = service.clock
    try:
        for message in (m for m in conversation.messages if m.memorable):
            said_at = message.at.replace(tzinfo=zone)
            service.clock = lambda said_at=said_at: said_at
            user_id = str(session.qq_of[message.speaker])
            content = document(conversation, message)
            outcome = await service.save(session.key, content, user_id=user_id, source="tool")
            if outcome.status in ("saved", "duplicate") and outcome.memory is not None:
                held[outcome.memory.id].add(message.turn)
    finally:
        service.clock = real_clock
    return {memory_id: frozenset(turns) for memory_id, turns in held.items()}


async def embed_backlog(runtime: Runtime) -> None:
    """Embed what the background embedding of chat-log rows and memories left out."""
    await chat_log_writer(runtime).vectors.backfill()
    await memory_service(runtime).backfill_embeddings()


class SessionTools:
    """A session's tool registry as the model's calls reach it, each call timed."""

    def __init__(self, runtime: Runtime, key: str, by_minute: dict[str, MessageKey] | None = None):
        self.registry = runtime.build_chatbot(key).tools
        self.by_minute = by_minute or {}
        self.samples_ns: dict[str, list[int]] = {CHAT: [], MEMORY: []}

    async def call(self, name: str, query: str) -> str:
        """Tool `name`'s answer to the question as its keyword or query."""
        from nonebot_plugin_aimemory.engine.messages import ToolCall

        arguments = {_QUERY_ARGUMENT[name]: query, "limit": SEARCH_LIMIT}
        call = ToolCall("call_bench", name, json.dumps(arguments, ensure_ascii=False))
        started = time.perf_counter_ns()
        text = (await self.registry.execute(call)).text
        self.samples_ns[name].append(time.perf_counter_ns() - started)
        if text.startswith("错误："):
            raise SystemExit(f"{name} failed: {text[:200]}")
        return text

    async def search_chat(self, query: str) -> list[MessageKey]:
        """The messages of the rows `search_current_chat` shows, best first."""
        text = await self.call(CHAT, query)
        found = (_CHAT_LINE.match(line) for line in text.splitlines())
        return _shown(CHAT, text, [self._message_at(m.group(1)) for m in found if m])

    async def search_memories(self, query: str) -> list[str]:
        """The ids of the memories `memory_search` shows, best first."""
        text = await self.call(MEMORY, query)
        found = (_MEMORY_LINE.match(line) for line in text.splitlines())
        return _shown(MEMORY, text, [m.group(1) for m in found if m])

    def _message_at(self, minute: str) -> MessageKey:
        if minute not in self.by_minute:
            raise SystemExit(f"{CHAT} showed a line of {minute}, when nothing was said")
        return self.by_minute[minute]


def _shown(name: str, text: str, items: list[_T]) -> list[_T]:
    if text.startswith(_NOTHING_FOUND):
        return []
    if not items:
        raise SystemExit(f"{name} answered in an unknown form: {text[:200]!r}")
    return items


async def fill_chat_log(runtime: Runtime, qq: int, texts: Sequence[str]) -> None:
    """Write `texts` as one private chat's rows, a minute apart from 2023-01-01, straight
    through the store (the latency fill; the writer's own cost is bench.chat_log's
    business)."""
    store, key, speaker = chat_log_writer(runtime).store, friend_key(qq), (str(qq), "bench")
    start, minute = datetime(2023, 1, 1, tzinfo=timezone.utc), timedelta(minutes=1)
    for first in range(0, len(texts), FILL_BATCH_ROWS):
        batch = enumerate(texts[first : first + FILL_BATCH_ROWS], start=first)
        await store.insert_many(
            [chat_row(key, start + i * minute, "user", text, speaker) for i, text in batch]
        )


async def fill_memories(runtime: Runtime, qq: int, texts: Iterable[str], count: int) -> int:
    """Save texts as memories of one private chat until `count` are stored; how many are."""
    service, stored = memory_service(runtime), 0
    for text in texts:
        if stored >= count:
            break
        outcome = await service.save(friend_key(qq), text, user_id=str(qq), source="tool")
        stored += outcome.status == "saved"
    return stored
