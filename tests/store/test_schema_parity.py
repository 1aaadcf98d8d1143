"""The two schemas, declared once per database (store/sqlite/schema.py and
store/postgres/schema.py), hold the same tables, columns, keys and indexes: read back from a
real SQLite file and from the real PostgreSQL server the tests start (tests/fakes/postgres.py),
each as a new database gets it. What each keeps for its own full-text index, and where it
counts its schema version, are the only tables told apart."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

# The chat log's full-text index: FTS5 and the terms it was given on SQLite; term arrays
# with their counts on PostgreSQL (the same search, stored as each database can).
SQLITE_ONLY = frozenset({"chat_log_terms", "chat_log_fts", "chat_log_fts_vocab"})
POSTGRES_ONLY = frozenset(
    {"chat_log_terms", "chat_log_term_rows", "chat_log_terms_total", "schema_version"}
)
# The one index whose key PostgreSQL computes: a btree row holds at most 2 704 bytes, so
# a memory's content is indexed by its md5 there (store/postgres/schema.py).
KEY_EXPRESSIONS = {"md5(normalized)": "normalized"}
# Each database's names for one kind of value.
KINDS = {
    "integer": "integer",
    "bigint": "integer",
    "text": "text",
    "blob": "bytes",
    "bytea": "bytes",
    "double precision": "real",
}


@dataclass(frozen=True, slots=True)
class Column:
    """A column as both schemas must declare it."""

    name: str
    kind: str
    not_null: bool


@dataclass(frozen=True, slots=True)
class Table:
    """A table: its columns in order, its primary key, and its indexes by name."""

    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    indexes: dict[str, tuple[str, ...]]


def sqlite_tables(path: Path) -> dict[str, Table]:
    """The tables of the SQLite file, FTS5's own shadow tables left out."""
    connection = sqlite3.connect(path)
    try:
        names = [
            str(row[0])
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE TABLE ''%'"
            )
        ]
        return {
            name: _sqlite_table(connection, name)
            for name in names
            if not name.startswith("chat_log_fts_") or name == "chat_log_fts_vocab"
        }
    finally:
        connection.close()


def _sqlite_table(connection: sqlite3.Connection, name: str) -> Table:
    info = connection.execute(f"PRAGMA table_info({name})").fetchall()
    # An INTEGER PRIMARY KEY is the rowid: never NULL, declared so or not.
    columns = tuple(
        Column(str(column), KINDS.get(str(kind).lower(), str(kind)), bool(notnull or pk))
        for _, column, kind, notnull, _, pk in info
    )
    key = tuple(
        str(column) for *_, column, _, _, _, pk in sorted(info, key=lambda row: row[5]) if pk
    )
    indexes = {
        str(index): tuple(str(row[2]) for row in connection.execute(f"PRAGMA index_info({index})"))
        for _, index, _, origin, _ in connection.execute(f"PRAGMA index_list({name})")
        if origin == "c"
    }
    return Table(columns, key, indexes)


def postgres_tables(url: str) -> dict[str, Table]:
    """The tables of the plugin's schema on the server."""
    with psycopg.connect(url) as connection:
        names = [
            str(row[0])
            for row in connection.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'aimemory' AND table_type = 'BASE TABLE'"
            )
        ]
        return {name: _postgres_table(connection, name) for name in names}


def _postgres_table(connection: psycopg.Connection, name: str) -> Table:
    columns = tuple(
        Column(str(column), KINDS.get(str(kind), str(kind)), nullable == "NO")
        for column, kind, nullable in connection.execute(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = 'aimemory' AND table_name = %s ORDER BY ordinal_position",
            (name,),
        )
    )
    key: tuple[str, ...] = ()
    indexes: dict[str, tuple[str, ...]] = {}
    for index, primary, keys in connection.execute(
        "SELECT i.relname, x.indisprimary, "
        "ARRAY(SELECT pg_get_indexdef(x.indexrelid, k, true) "
        "FROM generate_series(1, x.indnkeyatts) AS k ORDER BY k) "
        "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "WHERE x.indrelid = ('aimemory.' || %s)::regclass",
        (name,),
    ):
        found = tuple(KEY_EXPRESSIONS.get(str(part), str(part)) for part in keys)
        if primary:
            key = found
        else:
            indexes[str(index)] = found
    return Table(columns, key, indexes)


@pytest.fixture
async def both(postgres_url: str, db_path: Path) -> tuple[dict[str, Table], dict[str, Table]]:
    """The tables of a new SQLite file and of a new PostgreSQL database."""
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    for database in (await Database.open(db_path), await PostgresDatabase.open(postgres_url)):
        await database.close()
    return sqlite_tables(db_path), postgres_tables(postgres_url)


def test_both_databases_declare_the_same_tables(
    both: tuple[dict[str, Table], dict[str, Table]],
) -> None:
    sqlite, postgres = both

    assert set(sqlite) - SQLITE_ONLY == set(postgres) - POSTGRES_ONLY
    assert set(sqlite) >= SQLITE_ONLY
    assert set(postgres) >= POSTGRES_ONLY


def test_both_databases_declare_the_same_columns_keys_and_indexes(
    both: tuple[dict[str, Table], dict[str, Table]],
) -> None:
    sqlite, postgres = both
    shared = sorted(set(sqlite) - SQLITE_ONLY)

    differing = [name for name in shared if sqlite[name] != postgres[name]]

    assert differing == [], "\n".join(
        f"{name}:\n  sqlite   {sqlite[name]}\n  postgres {postgres[name]}" for name in differing
    )


def test_both_databases_migrate_to_the_shared_schema_version() -> None:
    from nonebot_plugin_aimemory.store.postgres.schema import MIGRATIONS as POSTGRES
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION
    from nonebot_plugin_aimemory.store.sqlite.migrations import MIGRATIONS as SQLITE

    assert len(SQLITE) == SCHEMA_VERSION
    assert max(POSTGRES) == SCHEMA_VERSION
