"""Copying the SQLite file's rows into a PostgreSQL database (migrate.py): table by table,
in batches in key order, each batch one transaction that skips rows the target holds
already, so an interrupted copy is completed by running it again and a second run copies
nothing twice. The chat log's search terms are not copied: the PostgreSQL store indexes
the copied rows itself. A table that cannot be read (a damaged file) is reported and the
others are copied."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .connection import Backend, Connection

BATCH_ROWS = 1000

# Every table the copy carries, with its primary key (what a batch is ordered and resumed
# by, and what "already there" means).
COPIED_TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("plugin_state", ("name",)),
    ("sessions", ("key",)),
    ("messages", ("session_key", "seq")),
    ("chat_counters", ("chat_key",)),
    ("persona_choices", ("chat_key",)),
    ("memories", ("scope", "id")),
    ("memory_tombstones", ("scope", "normalized")),
    ("chat_log", ("id",)),
    ("chat_log_vectors", ("row_id",)),
    ("review_state", ("session_key",)),
    ("image_descriptions", ("hash",)),
    ("token_usage", ("chat_key", "day", "role")),
    ("sent_messages", ("account", "message_id")),
)
# Left behind: the running bot's mark is about the SQLite file.
SKIPPED_STATE = ("running",)

Progress = Callable[[str, int, int], None]


@dataclass
class TableCopy:
    """What the copy did with one table."""

    name: str
    source_rows: int = 0
    target_rows: int = 0
    copied: int = 0
    error: str | None = None


@dataclass
class CopyReport:
    """Every table's counts, source and target, after the copy."""

    tables: list[TableCopy] = field(default_factory=list)

    @property
    def failed(self) -> list[TableCopy]:
        """The tables that could not be read or written."""
        return [table for table in self.tables if table.error is not None]


async def copy_all(source: Backend, target: Backend, progress: Progress) -> CopyReport:
    """Copy every table of `source` into `target`; `progress(table, done, total)` is
    called after each batch."""
    report = CopyReport()
    for name, key in COPIED_TABLES:
        table = TableCopy(name)
        report.tables.append(table)
        try:
            await _copy_table(source, target, table, key, progress)
        except Exception as error:  # a damaged table: say which, copy the rest
            table.error = " ".join(str(error).split()) or type(error).__name__
        table.target_rows = await _count(target, name)
    copied_log = any(table.name == "chat_log" and table.copied for table in report.tables)
    await target.write(lambda connection: _ids_after_copy(connection, reindex=copied_log))
    return report


async def _copy_table(
    source: Backend, target: Backend, table: TableCopy, key: tuple[str, ...], progress: Progress
) -> None:
    table.source_rows = await _count(source, table.name)
    columns = [str(row[1]) for row in await source.read(f"PRAGMA table_info({table.name})")]
    after: tuple[Any, ...] | None = None
    done = 0
    while True:
        rows = await source.read(*_batch_query(table.name, columns, key, after))
        if not rows:
            break
        wanted = [row for row in rows if not _skipped(table.name, row)]
        table.copied += await target.write(_inserter(table.name, columns, wanted))
        done += len(rows)
        after = tuple(rows[-1][columns.index(column)] for column in key)
        progress(table.name, done, table.source_rows)


def _batch_query(
    name: str, columns: Sequence[str], key: tuple[str, ...], after: tuple[Any, ...] | None
) -> tuple[str, tuple[Any, ...]]:
    """The next BATCH_ROWS rows in key order, after the last key copied."""
    order = ", ".join(key)
    where = ""
    if after is not None:
        where = f"WHERE ({order}) > ({', '.join('?' for _ in key)}) "
    sql = f"SELECT {', '.join(columns)} FROM {name} {where}ORDER BY {order} LIMIT {BATCH_ROWS}"
    return sql, after or ()


def _inserter(name: str, columns: Sequence[str], rows: list[Any]) -> Callable[[Connection], int]:
    """One batch into the target, keeping what it holds already; how many rows were new."""
    sql = (
        f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)}) "
        "ON CONFLICT DO NOTHING"
    )

    def work(connection: Connection) -> int:
        if not rows:
            return 0
        values = [tuple(_value(value) for value in row) for row in rows]
        return max(connection.executemany(sql, values).rowcount, 0)

    return work


def _value(value: Any) -> Any:
    """A value as PostgreSQL's column takes it (SQLite hands BLOBs out as bytes already)."""
    return bytes(value) if isinstance(value, memoryview) else value


def _skipped(table: str, row: Sequence[Any]) -> bool:
    return table == "plugin_state" and row[0] in SKIPPED_STATE


def _ids_after_copy(connection: Connection, *, reindex: bool) -> None:
    """The target's next chat-log id comes after every copied one; rows copied now are
    indexed for search by the store, newest first, from the newest down."""
    connection.execute(
        "UPDATE chat_log_ids SET last_id = CASE "
        "WHEN last_id >= (SELECT COALESCE(MAX(id), 0) FROM chat_log) THEN last_id "
        "ELSE (SELECT COALESCE(MAX(id), 0) FROM chat_log) END"
    )
    if not reindex:
        return
    connection.execute(
        "INSERT INTO chat_log_reindex (only_row, below_id) "
        "SELECT 1, MAX(id) + 1 FROM chat_log HAVING COUNT(*) > 0 "
        "ON CONFLICT (only_row) DO UPDATE SET below_id = excluded.below_id"
    )


async def _count(database: Backend, table: str) -> int:
    try:
        ((count,),) = await database.read(f"SELECT COUNT(*) FROM {table}")
    except Exception:
        return 0
    return int(count)
