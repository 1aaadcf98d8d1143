"""What a store's work is handed inside a transaction, whichever database holds the data:
SQLite's own connection, or PostgreSQL's behind the same two calls (postgres/database.py).
The stores write their SQL once, with `?` placeholders."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    """The rows a statement returned, and how many it changed."""

    @property
    def rowcount(self) -> int:
        """Rows the statement changed (-1 where the database does not say)."""
        ...

    def fetchone(self) -> Any:
        """The next row as a tuple, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining rows, as tuples."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """The remaining rows, one by one."""
        ...


class Connection(Protocol):
    """One statement at a time, or one statement over many rows of values."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor:
        """Run `sql` with `?` placeholders."""
        ...

    def executemany(self, sql: str, seq_of_parameters: Iterable[Sequence[Any]], /) -> Cursor:
        """Run `sql` once per row of values."""
        ...


def database_unavailable(error: BaseException) -> bool:
    """Whether `error` says the database itself cannot be used now (a full disk, a locked
    file, a server gone), so every statement would fail alike and the work should wait,
    rather than something in the data."""
    if isinstance(error, sqlite3.OperationalError):
        return True
    # psycopg only when it is loaded: a bot on SQLite never imports it.
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(error, psycopg.OperationalError)
