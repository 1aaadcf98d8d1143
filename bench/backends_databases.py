"""The databases of bench/backends.py: a throwaway PostgreSQL server, the SQLite file filled
with memories through MemoryStore, and its copy into PostgreSQL by the plugin's migration
copy (store/copying.py)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path

from bench import generated_chat as gen
from bench.backends_children import SCOPE_MEMORIES


@asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """A throwaway PostgreSQL server and an empty database on it; yields its URL. Started and
    removed in a worker thread (initdb and pg_ctl block)."""
    from tests.fakes.postgres import PostgresNotFoundError, PostgresServer

    stack = ExitStack()

    def start() -> str:
        return stack.enter_context(stack.enter_context(PostgresServer()).fresh_database())

    try:
        url = await asyncio.to_thread(start)
    except PostgresNotFoundError as error:
        await asyncio.to_thread(stack.close)
        raise SystemExit(f"bench.backends needs a PostgreSQL server: {error}") from None
    try:
        yield url
    finally:
        await asyncio.to_thread(stack.close)


async def insert_fill_memories(path: Path, scopes: Sequence[str], seen: set[str]) -> int:
    """Insert SCOPE_MEMORIES memories into each scope of the SQLite file through MemoryStore
    (its rules held in SQL, one transaction each); how many."""
    from nonebot_plugin_aimemory.memory.rules import new_id, normalize
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore
    from nonebot_plugin_aimemory.store.opening import open_backend
    from nonebot_plugin_aimemory.store.times import utc_now_text

    database = await open_backend(str(path))
    if database is None:
        raise SystemExit(f"cannot open {path}")
    rng, inserted, now, store = random.Random(27), 0, utc_now_text(), MemoryStore(database)
    try:
        for scope in scopes:
            taken: set[str] = set()
            for memory in gen.memories(rng, SCOPE_MEMORIES, seen):
                record = MemoryRecord(
                    *(new_id(taken), memory.content, normalize(memory.content)),
                    *(list(memory.tags), memory.user_id),
                    created_at=now,
                    updated_at=now,
                )
                taken.add(record.id)
                if (result := await store.insert(scope, record)) != "inserted":
                    raise RuntimeError(f"fill of {scope}: {result}: {memory.content}")
                inserted += 1
    finally:
        await database.close()
    return inserted


async def copy_database(source: Path, url: str) -> None:
    """Copy the SQLite file's tables into the PostgreSQL database (the plugin's migration)."""
    from nonebot_plugin_aimemory.store.copying import copy_all
    from nonebot_plugin_aimemory.store.opening import open_backend

    sqlite, postgres = await open_backend(str(source)), await open_backend("", url)
    try:
        if sqlite is None or postgres is None:
            raise SystemExit("cannot open the databases to copy")
        report = await copy_all(sqlite, postgres, lambda table, done, total: None)
    finally:
        for database in (sqlite, postgres):
            if database is not None:
                await database.close()
    if report.failed:
        raise SystemExit(f"copy into PostgreSQL failed: {report.failed}")
