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
# Writes nobody waits for (a turn's window rows) are gathered this long, then committed in
# one transaction: a trip to the database thread costs ~0.3 ms of CPU, the rows ~0.05 ms.
GATHER_SECONDS = 0.1


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
    """The plugin's SQLite file. All access goes through `read`, `write`, `write_soon` and
    `write_one`, in the order asked for."""

    def __init__(self, connection: aiosqlite.Connection, path: str) -> None:
        self._connection = connection
        self.path = path
        self._writes: set[asyncio.Future[Any]] = set()
        self._closed = False
        self._gathered: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = []
        self._gather_timer: asyncio.TimerHandle | None = None

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
        """Run the synchronous `work` in one IMMEDIATE transaction on the database thread, in
        a single trip there and back: under a busy event loop every trip waits for the GIL,
        so a transaction of N awaited statements would cost N trips. A cancelled caller does
        not cancel the write: it finishes (or rolls back) and `close` waits for it."""
        return await asyncio.shield(self._queued(partial(_in_transaction, work=work)))

    def write_soon(self, work: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Queue `work` to run in an IMMEDIATE transaction without waiting for it: it is
        committed within GATHER_SECONDS with the other writes queued meanwhile, sooner if
        the database is used otherwise first (which then comes after it: every use is done
        in the order asked for), and before `close` returns. The future tells when it
        committed, or why not; cancelling it does not cancel the write."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        if self._closed:
            future.set_exception(ValueError("the database is closed"))
            return future
        self._gathered.append((work, future))
        self._track(future)
        if self._gather_timer is None:
            loop = asyncio.get_running_loop()
            self._gather_timer = loop.call_later(GATHER_SECONDS, self._send_gathered)
        return future

    async def write_one(self, sql: str, params: Iterable[Any] = ()) -> None:
        """One statement, atomic on its own, without a BEGIN/COMMIT around it: the cheapest
        write, for the paths that run while a busy group is chatting."""
        values = tuple(params)
        await asyncio.shield(self._queued(lambda c: c.execute(sql, values) and None))

    def _queued(self, work: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Put `work` on the connection thread's queue, after the writes gathered so far.
        aiosqlite runs its queue in order, one callable at a time, so no lock is needed:
        every use of the connection here is one callable. The future is only ever awaited
        through `asyncio.shield`, so it is never cancelled (older aiosqlite would fail to
        set a cancelled future's result)."""
        self._send_gathered()
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
        else:  # an aiosqlite whose queue this does not know: its `_execute`, a task a trip
            future = asyncio.ensure_future(connection._execute(function))
        self._track(future)
        return future

    def _track(self, future: asyncio.Future[Any]) -> None:
        self._writes.add(future)
        future.add_done_callback(self._writes.discard)

    def _send_gathered(self) -> None:
        """Queue the gathered writes as one callable; each one's future is settled by it."""
        if self._gather_timer is not None:
            self._gather_timer.cancel()
            self._gather_timer = None
        gathered, self._gathered = self._gathered, []
        if not gathered:
            return
        works = [work for work, _ in gathered]
        futures = [future for _, future in gathered]
        batch = self._queued(partial(_all_in_one_transaction, works=works))
        batch.add_done_callback(lambda done: _settle_each(done, futures))

    async def close(self) -> None:
        """Wait for the work queued, then close."""
        self._send_gathered()
        self._closed = True
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
        await self._connection.close()


def _all_in_one_transaction(
    connection: sqlite3.Connection, works: list[Callable[[sqlite3.Connection], Any]]
) -> list[tuple[bool, Any]]:
    """Run `works` in one transaction; should one fail, each runs again in a transaction
    of its own, so that one failure fails only itself. A failure of the database itself
    (locked, full, unreadable: sqlite3.OperationalError) fails them all at once, as each
    would fail alike (and a locked file would make each wait BUSY_TIMEOUT_MS again).
    (succeeded, result or exception) per work."""
    try:
        return [(True, result) for result in _in_transaction(connection, _each(works))]
    except sqlite3.OperationalError as exc:
        return [(False, exc)] * len(works)
    except Exception:
        pass
    outcomes: list[tuple[bool, Any]] = []
    for work in works:
        try:
            outcomes.append((True, _in_transaction(connection, work)))
        except Exception as exc:
            outcomes.append((False, exc))
    return outcomes


def _each(
    works: list[Callable[[sqlite3.Connection], Any]],
) -> Callable[[sqlite3.Connection], list[Any]]:
    return lambda connection: [work(connection) for work in works]


def _settle_each(
    batch: asyncio.Future[list[tuple[bool, Any]]], futures: list[asyncio.Future[Any]]
) -> None:
    """Give each gathered write its outcome from the batch (all the batch's failure, if it
    could not run at all)."""
    failure = batch.exception()
    for index, future in enumerate(futures):
        if future.done():
            continue
        if failure is not None:
            future.set_exception(failure)
            continue
        succeeded, value = batch.result()[index]
        if succeeded:
            future.set_result(value)
        else:
            future.set_exception(value)


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
