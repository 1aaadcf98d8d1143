"""The retrieval bench's use of the plugin: the MemoryBank conversations written into the
chat log and the memory store through their write paths, and searched through the two
tools exactly as the model calls them (`search_current_chat`, `memory_search` from the
session's tool registry), so the bench measures whatever those tools do.

The tools answer with text for the model; the results are read back from it: a chat-log
line starts with its minute, and every row of a session is logged at a minute of its own
(turn i of a date at 20:00 + 2i for the user, 20:00 + 2i + 1 for the reply), a memory line
starts with its `#id`. Should the tools' wording change, `read_chat_lines` and
`read_memory_lines` are the two places to follow it.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo

from bench.harness import chat_log_writer, chat_row, memory_service

if TYPE_CHECKING:
    from bench.harness import Runtime
    from bench.retrieval_data import Turn, TurnKey, UserHistory
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry

Role = Literal["user", "assistant"]
# A chat-log row of the bench: the turn it comes from and whose side of it it is.
RowKey = tuple[str, int, Role]
FIRST_MINUTE_HOUR = 20
SEARCH_LIMIT = 10
_CHAT_LINE = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\] ")
_MEMORY_LINE = re.compile(r"^#(\w+) ")
_NOTHING_FOUND = ("没有找到", "当前会话还没有")


def session_key(qq: int) -> str:
    """The private-chat session (and memory scope) of a user."""
    from nonebot_plugin_aimemory.scopes import Scope

    return str(Scope.friend(qq))


def runtime_zone(runtime: Runtime) -> tzinfo:
    """The time zone the plugin shows chat-log times in."""
    return ZoneInfo(runtime.config.aimemory_timezone)


def row_minute(key: RowKey, zone: tzinfo) -> datetime:
    """When the bench logs a row: its own minute of the evening of its date."""
    date, index, role = key
    day = datetime.strptime(date, "%Y-%m-%d").replace(hour=FIRST_MINUTE_HOUR, tzinfo=zone)
    return day + timedelta(minutes=2 * index + (role == "assistant"))


def row_texts(turn: Turn) -> list[tuple[RowKey, str]]:
    """The two chat-log rows of a turn: the user's utterance, then the AI's reply."""
    return [
        ((turn.date, turn.index, "user"), turn.utterance),
        ((turn.date, turn.index, "assistant"), turn.reply),
    ]


async def log_conversation(runtime: Runtime, user: UserHistory, qq: int) -> None:
    """Write a user's conversation into their session's chat log through the batched
    writer, as the plugin logs a private chat."""
    writer = chat_log_writer(runtime)
    zone = runtime_zone(runtime)
    key = session_key(qq)
    for turn in user.turns:
        for row_key, text in row_texts(turn):
            speaker = (str(qq), user.name) if row_key[2] == "user" else None
            writer.add(chat_row(key, row_minute(row_key, zone), row_key[2], text, speaker))
    await writer.flush()


@dataclass
class SavedMemories:
    """What saving a user's utterances as memories did: the memory holding each turn
    (a duplicate is held by the memory it repeats) and how many saves took each branch."""

    memory_of: dict[TurnKey, str] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)


async def save_utterances(runtime: Runtime, user: UserHistory, qq: int) -> SavedMemories:
    """Save each utterance of a user as one memory about them, through the memory rules, on
    the day the conversation had it."""
    service = memory_service(runtime)
    scope = session_key(qq)
    zone = runtime_zone(runtime)
    saved = SavedMemories()
    real_clock = service.clock
    try:
        for turn in user.turns:
            # Saved when it was said, as the model saves what it hears: memories carry the
            # day of their conversation.
            said_at = row_minute((turn.date, turn.index, "user"), zone)
            service.clock = lambda said_at=said_at: said_at
            outcome = await service.save(scope, turn.utterance, user_id=str(qq), source="tool")
            saved.statuses[outcome.status] += 1
            if outcome.status in ("saved", "duplicate") and outcome.memory is not None:
                saved.memory_of[turn.key] = outcome.memory.id
    finally:
        service.clock = real_clock
    return saved


async def memories_without_vector(runtime: Runtime, qq: int) -> int:
    """How many of a user's memories are stored without an embedding."""
    records = await memory_service(runtime).list(session_key(qq))
    return sum(1 for record in records if not record.embedding)


async def backfill_vectors(runtime: Runtime) -> int:
    """Fill in the vectors of memories saved while the embedding server failed."""
    return await memory_service(runtime).backfill_embeddings()


async def embed_chat_rows(runtime: Runtime) -> int:
    """Wait until every chat-log row has its vector (rows are embedded in the background
    after each flush; rows written around the writer are found by the backfill); how many
    rows are left without one (the server failed)."""
    from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors

    writer = chat_log_writer(runtime)
    await writer.vectors.backfill()
    if not isinstance(writer.vectors, ChatLogVectors):
        return 0
    left = await writer.store.vectors.unembedded(writer.vectors.model, limit=1_000_000)
    return len(left)


async def vector_scan_rows(runtime: Runtime) -> int:
    """How many vectors a hybrid chat-log search scans at most, for the model in use."""
    from nonebot_plugin_aimemory.chatlog.vectors import scan_rows

    vector = await chat_log_writer(runtime).vectors.query_vector("scan bound")
    return scan_rows(len(vector)) if vector else 0


class SessionTools:
    """A session's tool registry as the model's calls reach it, timed."""

    def __init__(self, runtime: Runtime, qq: int) -> None:
        self.registry: ToolRegistry = runtime.build_chatbot(session_key(qq)).tools
        self.zone = runtime_zone(runtime)
        # Nanoseconds of each call, by tool name.
        self.samples_ns: defaultdict[str, list[int]] = defaultdict(list)

    async def search_chat(self, query: str) -> list[RowKey]:
        """The rows `search_current_chat` shows for the question as its keyword, best first."""
        return read_chat_lines(await self.call_search_chat(query), self.zone)

    async def search_memories(self, query: str) -> list[str]:
        """Ids of what `memory_search` returns for the question, best first."""
        return read_memory_lines(await self.call_memory_search(query))

    async def call_search_chat(self, query: str) -> str:
        """`search_current_chat`'s answer to the question as its keyword."""
        return await self._call("search_current_chat", {"keyword": query, "limit": SEARCH_LIMIT})

    async def call_memory_search(self, query: str) -> str:
        """`memory_search`'s answer to the question as its query."""
        return await self._call("memory_search", {"query": query, "limit": SEARCH_LIMIT})

    async def _call(self, name: str, arguments: dict[str, object]) -> str:
        from nonebot_plugin_aimemory.engine.messages import ToolCall

        call = ToolCall("call_bench", name, json.dumps(arguments, ensure_ascii=False))
        started = time.perf_counter_ns()
        text = await self.registry.execute(call)
        self.samples_ns[name].append(time.perf_counter_ns() - started)
        if text.startswith("错误："):
            raise SystemExit(f"{name} failed: {text[:200]}")
        return text


def read_chat_lines(text: str, zone: tzinfo) -> list[RowKey]:
    """The rows a `search_current_chat` result shows, by the minute each line starts with."""
    if text.startswith(_NOTHING_FOUND):
        return []
    rows: list[RowKey] = []
    for line in text.splitlines():
        found = _CHAT_LINE.match(line)
        if found:
            rows.append(_row_at(found.group(1), zone))
    if not rows:
        raise SystemExit(f"search_current_chat answered in an unknown form: {text[:200]!r}")
    return rows


def read_memory_lines(text: str) -> list[str]:
    """The memory ids a `memory_search` result shows, in its order."""
    if text.startswith(_NOTHING_FOUND):
        return []
    ids = [found.group(1) for found in map(_MEMORY_LINE.match, text.splitlines()) if found]
    if not ids:
        raise SystemExit(f"memory_search answered in an unknown form: {text[:200]!r}")
    return ids


def _row_at(minute: str, zone: tzinfo) -> RowKey:
    moment = datetime.strptime(minute, "%Y-%m-%d %H:%M").replace(tzinfo=zone)
    offset = int((moment - moment.replace(hour=FIRST_MINUTE_HOUR, minute=0)).total_seconds() // 60)
    role: Role = "assistant" if offset % 2 else "user"
    return (moment.strftime("%Y-%m-%d"), offset // 2, role)


async def fill_chat_log_rows(
    runtime: Runtime, qq: int, texts: Sequence[str], start: datetime, batch_rows: int = 1000
) -> None:
    """Write `texts` as one session's rows, a minute apart from `start`, straight through
    the store (the latency fill; the writer's own cost is bench.chat_log's business)."""
    store = chat_log_writer(runtime).store
    key = session_key(qq)
    speaker = (str(qq), "bench")
    for first in range(0, len(texts), batch_rows):
        batch = texts[first : first + batch_rows]
        await store.insert_many(
            [
                chat_row(key, start + timedelta(minutes=first + i), "user", text, speaker)
                for i, text in enumerate(batch)
            ]
        )


async def fill_memories(runtime: Runtime, qq: int, texts: Sequence[str], count: int) -> int:
    """Save texts as memories of one scope until `count` are stored; how many are."""
    service = memory_service(runtime)
    scope = session_key(qq)
    stored = 0
    for text in texts:
        if stored >= count:
            break
        outcome = await service.save(scope, text, user_id=str(qq), source="tool")
        stored += outcome.status == "saved"
    return stored
