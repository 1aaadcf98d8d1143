"""One standard-library sqlite3 connection in WAL mode, used from one worker thread of our
own: every use is done in the order asked for, one at a time, and a write is never cut off
halfway."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from ..chat_log_ranking import Postings
from ..connection import Connection
from ..schema import SCHEMA_VERSION
from ..storable import storable_rows, storable_values
from ..vector_column import VectorColumn
from .chat_log_fts5 import Fts5Postings
from .migrations import MIGRATIONS
from .schema import LATEST_SCHEMA, TABLES

logger = logging.getLogger("nonebot_plugin_aimemory")

T = TypeVar("T")
# How long a statement waits for a lock another connection (another program) holds.
BUSY_TIMEOUT_MS = 5000
THREAD_NAME_PREFIX = "aimemory-db"


class SqliteConnection:
    """The sqlite3 connection as a store's work sees it (connection.py): every parameter
    passes the text rule both backends share (storable.py)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def execute(self, sql: str, parameters: Iterable[Any] = (), /) -> sqlite3.Cursor:
        """Run `sql` with `?` placeholders."""
        return self._connection.execute(sql, storable_values(parameters))

    def executemany(
        self, sql: str, seq_of_parameters: Iterable[Iterable[Any]], /
    ) -> sqlite3.Cursor:
        """Run `sql` once per row of values."""
        return self._connection.executemany(sql, storable_rows(seq_of_parameters))

    def setlimit(self, category: int, limit: int, /) -> int:
        """sqlite3's own (Python 3.11+): a test plays an old SQLite's limit on variables."""
        return self._connection.setlimit(category, limit)  # pyright: ignore[reportAttributeAccessIssue]


class Database:
    """The plugin's SQLite file (a `Backend`, store/backend.py). All access goes through
    `read`, `write` and `write_one`: each is one callable run on the database's own thread
    (a single-worker executor runs them first in, first out, one at a time, so they need no
    lock), in the order asked for. A write transaction (BEGIN IMMEDIATE) is the file's only
    one: a lock is held already, and the file is one bot's own."""

    shared = False
    null_safe_equals = "IS"

    def __init__(
        self, connection: sqlite3.Connection, path: str, executor: ThreadPoolExecutor
    ) -> None:
        self._connection = connection
        self._executor = executor
        self.path = path
        self._closing: asyncio.Future[None] | None = None

    @classmethod
    async def open(cls, path: str | Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Database:
        """Open (creating folders and schema as needed); raises OSError/sqlite3.Error on
        failure. `busy_timeout_ms` bounds each wait for a lock held by another program."""
        path = Path(path)
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME_PREFIX)
        opening = asyncio.get_running_loop().run_in_executor(
            executor, partial(_connect, path, busy_timeout_ms)
        )
        try:
            connection = await asyncio.shield(opening)
        except asyncio.CancelledError:
            # The thread goes on opening: close what it opens, then let the thread end.
            opening.add_done_callback(partial(_close_when_opened, executor=executor))
            raise
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(connection, str(path), executor)

    async def read(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Run one query and return all its rows, as tuples."""
        values = storable_values(params)
        return await self._run(lambda connection: connection.execute(sql, values).fetchall())

    async def read_all(self, work: Callable[[Connection], T]) -> T:
        """Run the synchronous, read-only `work` in one hand-over to the database thread,
        outside a transaction (each statement reads what is committed)."""
        return await self._run(lambda connection: work(SqliteConnection(connection)))

    async def write(self, work: Callable[[Connection], T]) -> T:
        """Run the synchronous `work` in one IMMEDIATE transaction, committed when this
        returns, rolled back (nothing of it written) when it raises. A cancelled caller
        does not cancel the write: it finishes (or rolls back) and `close` waits for it."""
        return await self._run(partial(_in_transaction, work=work))

    async def write_one(self, sql: str, params: Iterable[Any] = ()) -> None:
        """One statement, atomic on its own, without a BEGIN/COMMIT around it: the cheapest
        write, for the paths that run while a busy group is chatting."""
        values = storable_values(params)
        await self._run(lambda connection: _execute_only(connection, sql, values))

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on the database thread, after everything asked for before it. It is
        handed to the executor before the first await, so the order of calls is the order
        of work; the shield keeps a cancelled caller from taking it off the queue."""
        if self._closing is not None:
            raise ValueError("the database is closed")
        loop = asyncio.get_running_loop()
        return await asyncio.shield(loop.run_in_executor(self._executor, work, self._connection))

    async def close(self) -> None:
        """Wait for the work asked for so far (it is ahead of the close on the database
        thread), then close; asking for anything afterwards raises ValueError."""
        if self._closing is None:
            loop = asyncio.get_running_loop()
            self._closing = loop.run_in_executor(self._executor, self._connection.close)
            self._closing.add_done_callback(lambda _: self._executor.shutdown(wait=False))
        await asyncio.shield(self._closing)

    def now_seconds(self, connection: Connection) -> float:
        """This machine's clock: the file is on it."""
        return time.time()

    def lock(self, connection: Connection, space: int, key: int) -> None:
        """Nothing to wait for: the write transaction excludes every other."""

    def try_lock(self, connection: Connection, space: int, key: int) -> bool:
        """Always held: the write transaction excludes every other."""
        return True

    def byte_order(self, column: str) -> str:
        """`column` as it is: SQLite compares text by its bytes."""
        return column

    def chat_log_postings(self) -> Postings:
        """FTS5 (chat_log_fts5.py)."""
        return Fts5Postings()

    async def vector_column(self) -> VectorColumn | None:
        """None: the plugin ranks the packed vectors."""
        return None


def _connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """On the database thread: the connection, set up and migrated (closed on failure).
    Autocommit mode (isolation_level=None): transactions are begun explicitly."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(
        path,
        timeout=busy_timeout_ms / 1000,
        isolation_level=None,
        check_same_thread=False,  # made here, used on this same thread, closed there too
    )
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
        _migrate(connection)
    except BaseException:
        connection.close()
        raise
    return connection


def _close_when_opened(
    opening: asyncio.Future[sqlite3.Connection], *, executor: ThreadPoolExecutor
) -> None:
    if not opening.cancelled() and opening.exception() is None:
        executor.submit(opening.result().close)
    executor.shutdown(wait=False)


def _execute_only(connection: sqlite3.Connection, sql: str, values: tuple[Any, ...]) -> None:
    connection.execute(sql, values)


def _in_transaction(connection: sqlite3.Connection, work: Callable[[Connection], T]) -> T:
    connection.execute("BEGIN IMMEDIATE")
    try:
        result = work(SqliteConnection(connection))
        connection.execute("COMMIT")
    except BaseException:
        # Also when COMMIT itself failed (a full disk): the transaction may still be open.
        if connection.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the first failure is the one to tell
                connection.execute("ROLLBACK")
        raise
    return result


def _migrate(connection: sqlite3.Connection) -> None:
    """Bring the file to SCHEMA_VERSION: a new one in one step, an older one by migrations."""
    row = connection.execute("PRAGMA user_version").fetchone()
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
    if version == 0 and not _holds_our_tables(connection):
        connection.executescript(
            f"BEGIN IMMEDIATE;\n{LATEST_SCHEMA}\nPRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;"
        )
        logger.info("database created at schema version %d", SCHEMA_VERSION)
        return
    # One transaction per migration: a failure keeps the steps before it, and the next
    # start resumes from there.
    for target, script in enumerate(MIGRATIONS[version:], start=version + 1):
        connection.executescript(
            f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {target};\nCOMMIT;"
        )
    logger.info("database migrated from schema version %d to %d", version, SCHEMA_VERSION)


def _holds_our_tables(connection: sqlite3.Connection) -> bool:
    placeholders = ", ".join("?" for _ in TABLES)
    cursor = connection.execute(
        f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ({placeholders}) LIMIT 1",
        TABLES,
    )
    return cursor.fetchone() is not None


async def open_database(path: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Database | None:
    """The database, or None (logged) when the file cannot be opened: the bot then runs
    with in-memory history rather than not at all."""
    try:
        database = await Database.open(path, busy_timeout_ms=busy_timeout_ms)
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
