"""The retrieval bench's use of the plugin: conversations written through its write paths,
questions asked of a session's tools as the model calls them, and the answers read back: a
chat-log line by its minute (turn i of a date at 20:00 + 2i, its reply a minute later), a
memory line by its `#id`.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING, Literal, TypeVar
from zoneinfo import ZoneInfo

from bench.harness import chat_log_writer, chat_row, memory_service
from bench.retrieval_data import TurnKey

if TYPE_CHECKING:
    from bench.harness import Runtime
    from bench.retrieval_data import Conversation

CHAT, MEMORY = "search_current_chat", "memory_search"
SEARCH_LIMIT = 10
FIRST_MINUTE_HOUR = 20
FILL_BATCH_ROWS = 1000
Role = Literal["user", "assistant"]
# A chat-log row of the bench: the turn it comes from and whose side of it it is.
RowKey = tuple[TurnKey, Role]
_QUERY_ARGUMENT = {CHAT: "keyword", MEMORY: "query"}
_CHAT_LINE = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\] ")
_MEMORY_LINE = re.compile(r"^#(\w+) ")
_NOTHING_FOUND = ("没有找到", "当前会话还没有")
_T = TypeVar("_T")


def session_key(qq: int) -> str:
    """The private-chat session (and memory scope) of a user."""
    from nonebot_plugin_aimemory.scopes import Scope

    return str(Scope.friend(qq))


def row_minute(row: RowKey, zone: tzinfo) -> datetime:
    """When the bench logs a row: its own minute of the evening of its date."""
    (date, index), role = row
    day = datetime.strptime(date, "%Y-%m-%d").replace(hour=FIRST_MINUTE_HOUR, tzinfo=zone)
    return day + timedelta(minutes=2 * index + (role == "assistant"))


def chat_rows(conversation: Conversation) -> list[tuple[RowKey, str]]:
    """The conversation's chat-log rows: each turn's utterance, then its reply."""
    rows: list[tuple[RowKey, str]] = []
    for turn in conversation.turns:
        rows.append(((turn.key, "user"), turn.utterance))
        rows.append(((turn.key, "assistant"), turn.reply))
    return rows


async def write_conversation(
    runtime: Runtime, conversation: Conversation, qq: int
) -> dict[str, frozenset[TurnKey]]:
    """Log a conversation in the user's private chat, then save each utterance as a memory on
    the day it was said; the turns each memory holds (a duplicate joins the one it repeats)."""
    writer, service = chat_log_writer(runtime), memory_service(runtime)
    key, zone = session_key(qq), ZoneInfo(runtime.config.aimemory_timezone)
    for row, text in chat_rows(conversation):
        speaker = (str(qq), conversation.user) if row[1] == "user" else None
        writer.add(chat_row(key, row_minute(row, zone), row[1], text, speaker))
    await writer.flush()
    held: defaultdict[str, set[TurnKey]] = defaultdict(set)
    real_clock = service.clock
    try:
        for turn in conversation.turns:
            said_at = row_minute((turn.key, "user"), zone)
            service.clock = lambda said_at=said_at: said_at
            outcome = await service.save(key, turn.utterance, user_id=str(qq), source="tool")
            if outcome.status in ("saved", "duplicate") and outcome.memory is not None:
                held[outcome.memory.id].add(turn.key)
    finally:
        service.clock = real_clock
    return {memory_id: frozenset(turns) for memory_id, turns in held.items()}


async def embed_backlog(runtime: Runtime) -> None:
    """Embed what the background embedding of chat-log rows and memories left out."""
    await chat_log_writer(runtime).vectors.backfill()
    await memory_service(runtime).backfill_embeddings()


class SessionTools:
    """A session's tool registry as the model's calls reach it, each call timed."""

    def __init__(self, runtime: Runtime, qq: int) -> None:
        self.registry = runtime.build_chatbot(session_key(qq)).tools
        self.zone = ZoneInfo(runtime.config.aimemory_timezone)
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

    async def search_chat(self, query: str) -> list[RowKey]:
        """The rows `search_current_chat` shows, best first."""
        text = await self.call(CHAT, query)
        found = (_CHAT_LINE.match(line) for line in text.splitlines())
        return _shown(CHAT, text, [self._row_at(m.group(1)) for m in found if m])

    async def search_memories(self, query: str) -> list[str]:
        """The ids of the memories `memory_search` shows, best first."""
        text = await self.call(MEMORY, query)
        found = (_MEMORY_LINE.match(line) for line in text.splitlines())
        return _shown(MEMORY, text, [m.group(1) for m in found if m])

    def _row_at(self, minute: str) -> RowKey:
        moment = datetime.strptime(minute, "%Y-%m-%d %H:%M").replace(tzinfo=self.zone)
        start = moment.replace(hour=FIRST_MINUTE_HOUR, minute=0)
        offset = int((moment - start).total_seconds() // 60)
        return (moment.strftime("%Y-%m-%d"), offset // 2), "assistant" if offset % 2 else "user"


def _shown(name: str, text: str, items: list[_T]) -> list[_T]:
    if text.startswith(_NOTHING_FOUND):
        return []
    if not items:
        raise SystemExit(f"{name} answered in an unknown form: {text[:200]!r}")
    return items


async def fill_chat_log(runtime: Runtime, qq: int, texts: Sequence[str]) -> None:
    """Write `texts` as one session's rows, a minute apart from 2023-01-01, straight through
    the store (the latency fill; the writer's own cost is bench.chat_log's business)."""
    store, key, speaker = chat_log_writer(runtime).store, session_key(qq), (str(qq), "bench")
    start, minute = datetime(2023, 1, 1, tzinfo=timezone.utc), timedelta(minutes=1)
    for first in range(0, len(texts), FILL_BATCH_ROWS):
        batch = enumerate(texts[first : first + FILL_BATCH_ROWS], start=first)
        await store.insert_many(
            [chat_row(key, start + i * minute, "user", text, speaker) for i, text in batch]
        )


async def fill_memories(runtime: Runtime, qq: int, texts: Iterable[str], count: int) -> int:
    """Save texts as memories of one scope until `count` are stored; how many are."""
    service, stored = memory_service(runtime), 0
    for text in texts:
        if stored >= count:
            break
        outcome = await service.save(session_key(qq), text, user_id=str(qq), source="tool")
        stored += outcome.status == "saved"
    return stored
