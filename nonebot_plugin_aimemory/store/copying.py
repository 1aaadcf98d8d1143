"""Copying the SQLite file's rows into a PostgreSQL database (migrate.py): table by table,
in batches in key order, each batch one transaction that skips rows the target holds
already, so an interrupted copy is completed by running it again and a second run copies
nothing twice. A batch the target refuses is written again row by row, and a batch the
source cannot read is read again row by row: a row that still fails is reported with its
key and the error, and every other row is copied. The chat log's search terms are not
copied: the PostgreSQL store indexes the copied rows itself. A table that cannot be read
at all (a damaged file) is reported and the others are copied."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .backend import Backend
from .connection import Connection, database_unavailable

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


@dataclass(frozen=True)
class RefusedRow:
    """A row the copy could not carry: its table, its key, and why (read or write)."""

    table: str
    key: str
    error: str


@dataclass
class TableCopy:
    """What the copy did with one table."""

    name: str
    source_rows: int = 0
    target_rows: int = 0
    copied: int = 0
    refused: list[RefusedRow] = field(default_factory=list)
    error: str | None = None


@dataclass
class CopyReport:
    """Every table's counts, source and target, after the copy."""

    tables: list[TableCopy] = field(default_factory=list)

    @property
    def failed(self) -> list[TableCopy]:
        """The tables that could not be read or written."""
        return [table for table in self.tables if table.error is not None]

    @property
    def refused(self) -> list[RefusedRow]:
        """The rows left behind in tables that were otherwise copied."""
        return [row for table in self.tables for row in table.refused]


@dataclass(frozen=True)
class _Layout:
    """One table as the copy reads and writes it: its columns and its primary key."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    text_columns: frozenset[str]

    def key_of(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """The row's primary key values."""
        return tuple(row[self.columns.index(column)] for column in self.key)

    def shown_key(self, values: Sequence[Any]) -> str:
        """`scope='g:1', id='m1'`: the key as a report names it (repr shows NUL and the
        like as escapes)."""
        return ", ".join(
            f"{column}={value!r}" for column, value in zip(self.key, values, strict=True)
        )

    def bytes_as_text(self, row: Sequence[Any]) -> str | None:
        """The text column of the row that holds bytes (a damaged file), if one does:
        PostgreSQL would store them as their hex digits, another text than the row's."""
        for column, value in zip(self.columns, row, strict=True):
            if column in self.text_columns and isinstance(value, bytes | memoryview):
                return column
        return None


@dataclass
class _Batch:
    """The rows of one batch that could be read, and the keys of all of them."""

    rows: list[Any]
    keys: list[tuple[Any, ...]]


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
            table.error = described(error)
        table.target_rows = await _count(target, name)
    copied_log = any(table.name == "chat_log" and table.copied for table in report.tables)
    await target.write(lambda connection: _ids_after_copy(connection, reindex=copied_log))
    return report


def described(error: BaseException) -> str:
    """`psycopg.errors.NumericValueOutOfRange: integer out of range`, on one line."""
    kind = type(error)
    module = "" if kind.__module__ == "builtins" else f"{kind.__module__}."
    message = " ".join(str(error).split())
    return f"{module}{kind.__qualname__}: {message}" if message else f"{module}{kind.__qualname__}"


async def _copy_table(
    source: Backend, target: Backend, table: TableCopy, key: tuple[str, ...], progress: Progress
) -> None:
    table.source_rows = await _count(source, table.name)
    described_columns = await source.read(f"PRAGMA table_info({table.name})")
    columns = tuple(str(row[1]) for row in described_columns)
    text_columns = frozenset(
        str(row[1]) for row in described_columns if str(row[2]).upper() == "TEXT"
    )
    layout = _Layout(table.name, columns, key, text_columns)
    after: tuple[Any, ...] | None = None
    done = 0
    while True:
        batch = await _read_batch(source, layout, table, after)
        if not batch.keys:
            break
        wanted = [row for row in batch.rows if not _skipped(table.name, row)]
        await _write_batch(target, layout, table, _storable_rows(layout, table, wanted))
        done += len(batch.keys)
        after = batch.keys[-1]
        progress(table.name, done, table.source_rows)


async def _read_batch(
    source: Backend, layout: _Layout, table: TableCopy, after: tuple[Any, ...] | None
) -> _Batch:
    """The next BATCH_ROWS rows after `after`. When they cannot be read together (a text
    that is not UTF-8), their keys are read, then each row alone: the ones that still fail
    are refused. When not even the keys can be read, the table is (the error is raised)."""
    try:
        rows = await source.read(*_batch_query(layout, layout.columns, after))
    except Exception:
        keys = [tuple(row) for row in await source.read(*_batch_query(layout, layout.key, after))]
    else:
        return _Batch(rows, [layout.key_of(row) for row in rows])
    readable: list[Any] = []
    for key in keys:
        condition, params = _key_condition(layout.key, key, "=")
        sql = f"SELECT {', '.join(layout.columns)} FROM {layout.name} WHERE {condition}"
        try:
            readable += await source.read(sql, params)
        except Exception as error:
            table.refused.append(
                RefusedRow(layout.name, layout.shown_key(key), f"read: {described(error)}")
            )
    return _Batch(readable, keys)


def _storable_rows(layout: _Layout, table: TableCopy, rows: list[Any]) -> list[Any]:
    """The rows the target can store as they are; the others refused, saying why."""
    storable = []
    for row in rows:
        if (column := layout.bytes_as_text(row)) is None:
            storable.append(row)
            continue
        shown = layout.shown_key(layout.key_of(row))
        error = f"write: the text column {column} holds bytes, not text"
        table.refused.append(RefusedRow(layout.name, shown, error))
    return storable


async def _write_batch(target: Backend, layout: _Layout, table: TableCopy, rows: list[Any]) -> None:
    """One batch into the target in one transaction; when the target refuses it, each row
    in a transaction of its own, so one bad row costs only itself. A database that is
    down fails the table instead: every row would fail alike."""
    try:
        table.copied += await target.write(_inserter(layout, rows))
        return
    except Exception as error:  # whatever the target refuses a row for
        if database_unavailable(error):
            raise
    for row in rows:
        try:
            table.copied += await target.write(_inserter(layout, [row]))
        except Exception as error:
            if database_unavailable(error):
                raise
            shown = layout.shown_key(layout.key_of(row))
            table.refused.append(RefusedRow(layout.name, shown, f"write: {described(error)}"))


def _batch_query(
    layout: _Layout, columns: Sequence[str], after: tuple[Any, ...] | None
) -> tuple[str, tuple[Any, ...]]:
    """`columns` of the next BATCH_ROWS rows in key order, after the last key copied."""
    where, params = "", ()
    if after is not None:
        condition, params = _key_condition(layout.key, after, ">")
        where = f"WHERE {condition} "
    order = ", ".join(layout.key)
    sql = f"SELECT {', '.join(columns)} FROM {layout.name} {where}ORDER BY {order} "
    return sql + f"LIMIT {BATCH_ROWS}", params


def _key_condition(
    key: tuple[str, ...], values: tuple[Any, ...], operator: str
) -> tuple[str, tuple[Any, ...]]:
    """`(scope, id) > (?, ?)` for a key read from the file. A text goes in as its UTF-8
    bytes read back as text: a text parameter passes the storable rule (NUL becomes
    U+FFFD), which would compare another key than the row's own and skip rows."""
    placeholders = ", ".join("CAST(? AS TEXT)" if isinstance(v, str) else "?" for v in values)
    params = tuple(v.encode() if isinstance(v, str) else v for v in values)
    return f"({', '.join(key)}) {operator} ({placeholders})", params


def _inserter(layout: _Layout, rows: list[Any]) -> Callable[[Connection], int]:
    """Rows into the target, keeping what it holds already; how many rows were new."""
    names, marks = ", ".join(layout.columns), ", ".join("?" for _ in layout.columns)
    sql = f"INSERT INTO {layout.name} ({names}) VALUES ({marks}) ON CONFLICT DO NOTHING"

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
