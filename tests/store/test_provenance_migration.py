"""Memories of a database written before provenance was kept, on each backend: migrated with
what their `source` tells (the reviewer's, the extraction's, the panel's), the rest unknown,
and shown so: an unknown provenance shows nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import command
from tests.store.test_migrations import write_old_database

AT = "2026-11-30T08:00:00.000000Z"
# The version before provenance (20) was added.
BEFORE_PROVENANCE = 19
# (id, content, source) as the previous version stored them.
OLD_MEMORIES = (
    ("t1", "小明喜欢爬山", "tool"),
    ("r1", "小红对花生过敏", "review"),
    ("e1", "群里约好周五开例会", "extract"),
    ("c1", "群主是老王", "command"),  # the panel's: the one writer of 'command' so far
)
INSERT = (
    "INSERT INTO memories (scope, id, content, normalized, source, created_at, updated_at) "
    "VALUES ('g:111', {0}, {0}, {0}, {0}, {0}, {0})"
)
PROVENANCE_COLUMNS = ("origin", "said_by_id", "said_by_name", "told_by_id", "told_by_name")


def old_sqlite(path: Path, version: int) -> None:
    write_old_database(path, version)
    connection = sqlite3.connect(path)
    for memory_id, said, source in OLD_MEMORIES:
        connection.execute(INSERT.format("?"), (memory_id, said, said, source, AT, AT))
    connection.commit()
    connection.close()


async def old_postgres(url: str, version: int) -> None:
    """A database of the previous version: the schema of this one without what the last
    migration adds (its provenance columns), at that version, with memories of then."""
    import psycopg

    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase

    await (await PostgresDatabase.open(url)).close()
    with psycopg.connect(url) as connection:
        for column in (*PROVENANCE_COLUMNS, "said_in"):
            connection.execute(f"ALTER TABLE aimemory.memories DROP COLUMN {column}")
        connection.execute("UPDATE aimemory.schema_version SET version = %s", (version,))
        for memory_id, said, source in OLD_MEMORIES:
            connection.execute(
                INSERT.format("%s").replace("memories", "aimemory.memories"),
                (memory_id, said, said, source, AT, AT),
            )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_old_memories_show_what_is_known_of_where_they_came_from(
    plugin, tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:

    if backend == "sqlite":
        path = tmp_path / "old.db"
        old_sqlite(path, BEFORE_PROVENANCE)
        await plugin.restart(aimemory_db_path=str(path))
    else:
        url = str(request.getfixturevalue("postgres_url"))
        await old_postgres(url, BEFORE_PROVENANCE)
        await plugin.restart(aimemory_database_url=url)

    records = {r.id: r for r in await plugin.runtime.memory.service.store.load_scope("g:111")}
    origins = {memory_id: record.provenance.origin for memory_id, record in records.items()}
    assert origins == {"t1": None, "r1": "review", "e1": "extract", "c1": "panel"}
    assert all(r.provenance.said_by is None and r.provenance.chat is None for r in records.values())
    listing = await command(RecordingBot(), group_message("~记忆 列表", group_id=111))
    lines = listing.splitlines()[1:]
    assert sorted(lines) == sorted(
        [
            "#t1 小明喜欢爬山",
            "#r1 小红对花生过敏（自动整理）",
            "#e1 群里约好周五开例会（自动整理）",
            "#c1 群主是老王（管理面板添加，11-30）",
        ]
    )
