"""bench.backends' child processes: start-up on the large database, and two processes writing
chat-log rows and memories to it at once; plus the chat rows and writes they share."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench import generated_chat as gen
from bench import harness as h

CHAT_GROUP_ID, WRITERS_GROUP_ID = 736_451_029, 736_451_030
FIRST_WRITER_SCOPE_GROUP_ID = 820_000_001
SCOPE_MEMORIES = 200  # the plugin's default cap of a group's memories
WRITERS, FLUSH_EVERY_ROWS, SEARCH_LIMIT = 2, 200, 20
READY_TIMEOUT_SECONDS, POLL_SECONDS = 120.0, 0.01


@dataclass(frozen=True)
class Target:
    """One backend under test: a SQLite file, or a PostgreSQL URL (persona files beside
    `db_path`)."""

    label: str
    db_path: Path
    url: str = ""

    def settings(self) -> dict[str, Any]:
        """The plugin's database setting for this backend."""
        return {"aimemory_database_url": self.url} if self.url else {}

    def spec(self) -> dict[str, str]:
        """This backend in a child's spec."""
        return {"label": self.label, "db": str(self.db_path), "url": self.url}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Target:
        """The backend a child's spec names."""
        return cls(spec["label"], Path(spec["db"]), spec["url"])


def chat_rows(rng: random.Random, session_key: str, count: int) -> list[h.ChatRow]:
    """`count` rows of one session, oldest first, about one a minute up to now."""

    def moments() -> Iterator[datetime]:  # drawn row by row, between the rows' own draws
        moment = datetime.now(timezone.utc) - timedelta(minutes=count)
        for _ in range(count):
            moment += timedelta(seconds=rng.randint(1, 119))
            yield moment

    return h.logged_rows(rng, [session_key], moments())


async def write_through(chat_log: h.ChatLog, rows: Sequence[h.ChatRow]) -> float:
    """Rows/s of `add` + `flush` every FLUSH_EVERY_ROWS."""
    gc.collect()
    started = time.perf_counter()
    for index, row in enumerate(rows, start=1):
        chat_log.add(row)
        if index % FLUSH_EVERY_ROWS == 0 or index == len(rows):
            await chat_log.flush()
    return len(rows) / (time.perf_counter() - started)


def chat_search(runtime: h.Runtime) -> Callable[[str], Awaitable[str]]:
    """`search_current_chat` in the large chat as the model calls it."""
    from nonebot_plugin_aimemory.engine.messages import ToolCall

    registry = runtime.build_chatbot(h.group_key(CHAT_GROUP_ID)).tools

    async def search(keyword: str) -> str:
        arguments = json.dumps({"keyword": keyword, "limit": SEARCH_LIMIT}, ensure_ascii=False)
        call = ToolCall("call_bench", "search_current_chat", arguments)
        text = (await registry.execute(call)).text
        if text.startswith("错误："):
            raise RuntimeError(f"search_current_chat({keyword!r}) failed: {text[:200]}")
        return text

    return search


async def measure_startup(target: Target, runs: int) -> dict[str, float]:
    """Start-up in fresh processes on the large database, the medians of `runs`."""
    done = [
        await h.run_child("bench.backends", {"role": "startup", **target.spec()})
        for _ in range(runs)
    ]
    return {key: statistics.median(run[key] for run in done) for key in done[0]}


async def startup_child(target: Target) -> dict[str, float]:
    """A child: how long Runtime.start takes, and until the first chat-log search answers."""
    with h.fake_llm() as llm:
        started = time.perf_counter()
        async with h.plugin_runtime(llm, target.db_path, **target.settings()) as runtime:
            start_s = time.perf_counter() - started
            await chat_search(runtime)("上次谁说要去杭州吃火锅来着")
            first_search_s = time.perf_counter() - started
    return {"start_s": start_s, "first_search_s": first_search_s}


def writer_scopes(index: int, memories: int) -> list[str]:
    """The memory scopes writing process `index` saves into (its own, SCOPE_MEMORIES each)."""
    count = math.ceil(memories / SCOPE_MEMORIES)
    return [h.group_key(FIRST_WRITER_SCOPE_GROUP_ID + index * 100 + i) for i in range(count)]


async def measure_two_writers(
    target: Target, rows: int, memories: int, work_dir: Path
) -> dict[str, float]:
    """Two child processes, started together once both are ready, write rows of one chat
    and memories each into scopes of its own (on SQLite a process trusts that it alone
    writes the scopes it holds, memory/index.py): their combined rates, and what is lost."""
    go = work_dir / f"go-{target.label}"
    ready = [work_dir / f"ready-{target.label}-{index}" for index in range(WRITERS)]
    spec = {**target.spec(), "role": "writer", "rows": rows, "memories": memories, "go": str(go)}
    children = [
        asyncio.create_task(
            h.run_child("bench.backends", {**spec, "index": i, "ready": str(ready[i])})
        )
        for i in range(WRITERS)
    ]
    try:
        await wait_for_files(ready, children)
        await asyncio.to_thread(go.touch)
        results = await asyncio.gather(*children)
    finally:
        for child in children:
            child.cancel()
    rows_written = sum(int(r["rows"]) for r in results)
    saved = sum(int(r["saved"]) for r in results)
    stored_rows, stored_memories = await count_written(target, memories)
    return {
        "rows_per_s": rows_written / span(results, "rows"),
        "saves_per_s": saved / span(results, "saves"),
        "rows_lost": rows_written - stored_rows,
        "saves_lost": saved - stored_memories,
    }


def span(results: Sequence[dict[str, Any]], what: str) -> float:
    """Seconds from the first process's start of `what` to the last one's end."""
    return max(r[f"{what}_ended"] for r in results) - min(r[f"{what}_started"] for r in results)


async def wait_for_files(paths: Sequence[Path], children: Sequence[asyncio.Task[Any]] = ()) -> None:
    """Wait until every file of `paths` exists; a child that ended early raises its error."""
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while not all(await asyncio.to_thread(lambda: [p.exists() for p in paths])):
        for child in children:
            if child.done():
                child.result()  # its failure, or an early end
                raise RuntimeError("a writing process ended before the start")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {paths} after {READY_TIMEOUT_SECONDS} s")
        await asyncio.sleep(POLL_SECONDS)


async def count_written(target: Target, memories_each: int) -> tuple[int, int]:
    """The writers' chat-log rows and memories the database holds, read through the plugin."""
    async with h.plugin(target.db_path, **target.settings()) as (_, runtime):
        store, service = h.chat_log_writer(runtime).store, h.memory_service(runtime)
        rows = await store.count_since(h.group_key(WRITERS_GROUP_ID), 0)
        scopes = [scope for i in range(WRITERS) for scope in writer_scopes(i, memories_each)]
        memories = sum([await service.count(scope) for scope in scopes])
    return rows, memories


async def writer_child(spec: dict[str, Any]) -> dict[str, float]:
    """A child: once ready, wait for the go, then log rows and save memories concurrently."""
    from nonebot_plugin_aimemory.conversation.warmup import text_tools_ready

    target, index = Target.from_spec(spec), int(spec["index"])
    rng = random.Random(1000 + index)
    rows = chat_rows(rng, h.group_key(WRITERS_GROUP_ID), int(spec["rows"]))
    scopes = writer_scopes(index, int(spec["memories"]))
    batches = [gen.memories(rng, SCOPE_MEMORIES, set()) for _ in scopes]
    memories = [(scope, m) for scope, batch in zip(scopes, batches, strict=True) for m in batch]
    memories = memories[: int(spec["memories"])]
    figures: dict[str, float] = {}
    settings = {**target.settings(), "aimemory_chat_log_flush_seconds": 60}
    async with h.plugin(target.db_path, **settings) as (_, runtime):
        await text_tools_ready(runtime.counter)
        await asyncio.to_thread(Path(spec["ready"]).touch)
        await wait_for_files([Path(spec["go"])])

        async def log_rows() -> None:
            figures["rows_started"] = time.time()
            await write_through(h.chat_log_writer(runtime), rows)
            figures["rows_ended"] = time.time()

        async def save_memories() -> None:
            service, saved = h.memory_service(runtime), 0
            figures["saves_started"] = time.time()
            for scope, memory in memories:
                saved += await gen.save(service, scope, memory) == "saved"
            figures["saves_ended"], figures["saved"] = time.time(), saved

        await asyncio.gather(log_rows(), save_memories())
    return {**figures, "rows": len(rows)}
