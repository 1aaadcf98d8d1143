"""The plugin's data on a PostgreSQL server, behind the same three calls as the SQLite file
(`read`, `write`, `write_one`: sqlite/database.py), through psycopg 3 (the optional `[postgres]`
extra). Every table lives in the plugin's own schema (`aimemory`), so a database shared
with another application is never touched outside it. One connection, used from one
worker thread of its own, in the order asked for, as with SQLite; a broken connection is
opened again by the next call."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from ..addresses import redacted
from ..chat_log_ranking import Postings
from ..connection import Connection, Cursor
from ..storable import storable_rows, storable_values
from ..vector_column import VectorColumn
from .chat_log_pgvector import open_pgvector_column
from .chat_log_terms_index import TermArrayPostings
from .schema import SCHEMA_NAME, create_or_check_schema

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger("nonebot_plugin_aimemory")

T = TypeVar("T")
MINIMUM_SERVER_VERSION = 130000  # PostgreSQL 13
CONNECT_TIMEOUT_SECONDS = 10
# Slow queries are bounded: a turn waits for the database at most this long.
STATEMENT_TIMEOUT_MS = 15_000
THREAD_NAME_PREFIX = "aimemory-pg"


class ServerTooOld(RuntimeError):
    """The server is older than PostgreSQL 13."""


@functools.lru_cache(maxsize=1024)
def pg_sql(sql: str) -> str:
    """The stores' SQL (`?` placeholders, never inside a literal) in psycopg's style."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgConnection:
    """A psycopg connection as a store's work sees it (connection.py)."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        """Run `sql` with `?` placeholders."""
        return self._connection.execute(pg_sql(sql), storable_values(parameters))  # type: ignore[arg-type]

    def executemany(self, sql: str, seq_of_parameters: Iterable[Sequence[Any]], /) -> Cursor:
        """Run `sql` once per row of values."""
        cursor = self._connection.cursor()
        cursor.executemany(pg_sql(sql), storable_rows(seq_of_parameters))  # type: ignore[arg-type]
        return cursor

    def script(self, sql: str) -> None:
        """Run several statements without parameters (a schema script)."""
        self._connection.execute(sql)  # type: ignore[arg-type]

    def transaction(self) -> AbstractContextManager[object]:
        """A transaction: committed when the block ends, rolled back when it raises."""
        return self._connection.transaction()


class PostgresDatabase:
    """The plugin's tables on a PostgreSQL server (a `Backend`, store/backend.py). `url` is
    `postgresql://…` (libpq's form; `?sslmode=…` and the like pass through); its password
    is never logged. Transactions run side by side (READ COMMITTED), and other bot
    processes may share the server: what must go one at a time takes an advisory lock."""

    shared = True
    null_safe_equals = "IS NOT DISTINCT FROM"

    def __init__(self, url: str, executor: ThreadPoolExecutor) -> None:
        self._url = url
        self._executor = executor
        self._connection: psycopg.Connection[Any] | None = None
        self._closed = False
        self.path = redacted(url)

    @classmethod
    async def open(cls, url: str) -> PostgresDatabase:
        """Connect, create or check the schema; raises psycopg's errors (a wrong password,
        a missing database, an unreachable server) or ServerTooOld."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME_PREFIX)
        database = cls(url, executor)
        try:
            await database._run(lambda connection: None)
        except BaseException:
            await database.close()
            raise
        return database

    async def read(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Run one query and return all its rows, as tuples."""
        values = tuple(params)
        return await self._run(lambda connection: connection.execute(sql, values).fetchall())

    async def read_all(self, work: Callable[[Connection], T]) -> T:
        """Run the synchronous, read-only `work` in one hand-over to the database thread,
        outside a transaction (each statement reads what is committed)."""
        return await self._run(work)

    async def write(self, work: Callable[[Connection], T]) -> T:
        """Run the synchronous `work` in one transaction, committed when this returns,
        rolled back when it raises; a cancelled caller does not cancel it."""
        return await self._run(functools.partial(_in_transaction, work=work))

    async def write_one(self, sql: str, params: Iterable[Any] = ()) -> None:
        """One statement, atomic on its own."""
        values = tuple(params)
        await self._run(lambda connection: connection.execute(sql, values))

    async def _run(self, work: Callable[[PgConnection], T]) -> T:
        """Run `work` on the database thread, after everything asked for before it."""
        if self._closed:
            raise ValueError("the database is closed")
        loop = asyncio.get_running_loop()
        call = functools.partial(self._with_connection, work)
        return await asyncio.shield(loop.run_in_executor(self._executor, call))

    def _with_connection(self, work: Callable[[PgConnection], T]) -> T:
        """On the database thread: `work` over the connection, opened (again) first if
        there is none or it broke."""
        if self._connection is None or self._connection.broken or self._connection.closed:
            self._connection = _connect(self._url)
        return work(PgConnection(self._connection))

    async def close(self) -> None:
        """Wait for the work asked for so far, then close."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_connection)
        self._executor.shutdown(wait=False)

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def now_seconds(self, connection: Connection) -> float:
        """The server's clock: every process on every machine reads the same."""
        (now,) = connection.execute(
            "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)"
        ).fetchone()
        return float(now)

    def lock(self, connection: Connection, space: int, key: int) -> None:
        """The advisory lock in the two-key space, held until the transaction ends."""
        connection.execute(
            "SELECT pg_advisory_xact_lock(CAST(? AS INTEGER), CAST(? AS INTEGER))", (space, key)
        )

    def try_lock(self, connection: Connection, space: int, key: int) -> bool:
        """The advisory lock in the two-key space, unless another transaction holds it."""
        (claimed,) = connection.execute(
            "SELECT pg_try_advisory_xact_lock(CAST(? AS INTEGER), CAST(? AS INTEGER))",
            (space, key),
        ).fetchone()
        return bool(claimed)

    def byte_order(self, column: str) -> str:
        """`column` in the C collation: the database's own may order text otherwise."""
        return f'{column} COLLATE "C"'

    def chat_log_postings(self) -> Postings:
        """Term arrays ranked in SQL (chat_log_terms_index.py)."""
        return TermArrayPostings()

    async def vector_column(self) -> VectorColumn | None:
        """pgvector's column where pgvector is there or can be created
        (chat_log_pgvector.py)."""
        return await open_pgvector_column(self)


def _connect(url: str) -> psycopg.Connection[Any]:
    """A connection in autocommit mode (transactions are begun explicitly), its searches
    in the plugin's schema, created or checked; closed again on failure."""
    import psycopg

    connection = psycopg.connect(
        url,
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
    )
    try:
        version = connection.info.server_version
        if version < MINIMUM_SERVER_VERSION:
            shown = connection.info.parameter_status("server_version") or str(version)
            raise ServerTooOld(
                f"PostgreSQL {shown} is too old: the plugin needs PostgreSQL 13 or newer"
            )
        create_or_check_schema(PgConnection(connection))
        connection.execute(f"SET search_path TO {SCHEMA_NAME}")
    except BaseException:
        connection.close()
        raise
    return connection


def _in_transaction(connection: PgConnection, work: Callable[[Connection], T]) -> T:
    with connection.transaction():
        return work(connection)
