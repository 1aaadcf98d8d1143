"""One aiosqlite connection in WAL mode, with writes serialised and never cut off halfway."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from .schema import LATEST_SCHEMA, MIGRATIONS, SCHEMA_VERSION, TABLES

logger = logging.getLogger("nonebot_plugin_aimemory")

T = TypeVar("T")
BUSY_TIMEOUT_MS = 5000


UTC_TEXT_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utc_text(moment: datetime) -> str:
    """Fixed-width UTC timestamp: text order is time order."""
    return moment.astimezone(timezone.utc).strftime(UTC_TEXT_FORMAT)


def utc_now_text() -> str:
    """The current UTC time in the stored text format."""
    return utc_text(datetime.now(timezone.utc))


def parse_utc_text(text: str) -> datetime:
    """A stored UTC timestamp back as an aware datetime."""
    return datetime.strptime(text, UTC_TEXT_FORMAT).replace(tzinfo=timezone.utc)


class Database:
    """The plugin's SQLite file. All access goes through `read` and `write`."""

    def __init__(self, connection: aiosqlite.Connection, path: str) -> None:
        self._connection = connection
        self.path = path
        self._writes: set[asyncio.Future[Any]] = set()
        self._closed = False

    @classmethod
    async def open(cls, path: str | Path) -> Database:
        """Open (creating folders and schema as needed); raises OSError/sqlite3.Error on failure."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = await aiosqlite.connect(str(path), isolation_level=None)
        try:
            await connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await connection.execute("PRAGMA journal_mode = WAL")
            await connection.execute("PRAGMA synchronous = NORMAL")
            await connection.execute("PRAGMA foreign_keys = ON")
            await _migrate(connection)
        except BaseException:
            await connection.close()
            raise
        return cls(connection, str(path))

    async def read(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """Run one query and return all rows (one trip to the database thread)."""
        values = tuple(params)
        return await asyncio.shield(self._queued(lambda c: c.execute(sql, values).fetchall()))

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`write_soon`, awaited. A cancelled caller does not cancel the write."""
        return await self.write_soon(work)

    def write_soon(self, work: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Queue the synchronous `work` to run in one IMMEDIATE transaction on the database
        thread, in a single trip there and back: under a busy event loop every trip waits
        for the GIL, so a transaction of N awaited statements would cost N trips. Queued
        work runs in the order queued whatever becomes of its callers, and `close` waits
        for it; the future tells when it committed, or why not (cancelling it cancels
        only the waiting)."""
        return asyncio.shield(self._queued(partial(_in_transaction, work=work)))

    async def write_one(self, sql: str, params: Iterable[Any] = ()) -> None:
        """One statement, atomic on its own, without a BEGIN/COMMIT around it: the cheapest
        write, for the paths that run while a busy group is chatting."""
        values = tuple(params)
        await asyncio.shield(self._queued(lambda c: c.execute(sql, values) and None))

    def _queued(self, work: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Put `work` on the connection thread's queue. aiosqlite runs its queue in order,
        one callable at a time, so no lock is needed: every use of the connection here is
        one callable. The future is only ever awaited through `asyncio.shield`, so it is
        never cancelled (older aiosqlite would fail to set a cancelled future's result)."""
        connection = self._connection
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        try:
            if self._closed:
                raise ValueError("the database is closed")
            function = partial(work, connection._conn)  # ValueError once it was closed
        except ValueError as exc:
            future.set_exception(exc)  # reported where it is awaited, as any failure
            return future
        queue = getattr(connection, "_tx", None)
        if queue is not None:
            # The queue's item is what aiosqlite's own `_execute` puts there, minus the
            # coroutine and task that awaiting `_execute` would cost on every trip.
            queue.put_nowait((future, function))
        else:  # a layout this version does not know: the documented-enough way
            future = asyncio.ensure_future(connection._execute(function))
        self._writes.add(future)
        future.add_done_callback(self._writes.discard)
        return future

    async def close(self) -> None:
        """Wait for the work queued, then close."""
        self._closed = True
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
        await self._connection.close()


def _in_transaction(connection: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    connection.execute("BEGIN IMMEDIATE")
    try:
        result = work(connection)
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
    return result


async def _migrate(connection: aiosqlite.Connection) -> None:
    """Bring the file to SCHEMA_VERSION: a new one in one step, an older one by migrations."""
    cursor = await connection.execute("PRAGMA user_version")
    row = await cursor.fetchone()
    version = int(row[0]) if row else 0
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        # Written by a newer release: its additions are unknown here, so leave them be.
        logger.warning(
            "database is at schema version %d, newer than this release's %d",
            version,
            SCHEMA_VERSION,
        )
        return
    if version == 0 and not await _holds_our_tables(connection):
        await connection.executescript(
            f"BEGIN IMMEDIATE;\n{LATEST_SCHEMA}\nPRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;"
        )
        logger.info("database created at schema version %d", SCHEMA_VERSION)
        return
    # One transaction per migration: a failure keeps the steps before it, and the next
    # start resumes from there.
    for target, script in enumerate(MIGRATIONS[version:], start=version + 1):
        await connection.executescript(
            f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {target};\nCOMMIT;"
        )
    logger.info("database migrated from schema version %d to %d", version, SCHEMA_VERSION)


async def _holds_our_tables(connection: aiosqlite.Connection) -> bool:
    placeholders = ", ".join("?" for _ in TABLES)
    cursor = await connection.execute(
        f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ({placeholders}) LIMIT 1",
        TABLES,
    )
    return await cursor.fetchone() is not None


async def open_database(path: str) -> Database | None:
    """The database, or None (logged) when the file cannot be opened: the bot then runs
    with in-memory history rather than not at all."""
    try:
        database = await Database.open(path)
    except (OSError, sqlite3.Error) as exc:
        logger.error(
            "aimemory: cannot open database %s (%s); running with in-memory history only: "
            "conversations will not survive a restart",
            path,
            exc,
        )
        return None
    logger.info("aimemory: database %s opened", path)
    return database
