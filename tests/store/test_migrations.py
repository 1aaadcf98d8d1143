"""Schema migrations applied to a database written by an older version."""

from __future__ import annotations

import sqlite3

from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
from nonebot_plugin_aimemory.store.database import Database
from nonebot_plugin_aimemory.store.schema import MIGRATIONS, SCHEMA_VERSION

FTS_WITH_SESSION_TOKEN = 6


def write_old_database(path, version: int) -> None:
    connection = sqlite3.connect(path)
    for target, script in enumerate(MIGRATIONS[:version], start=1):
        connection.executescript(f"{script}\nPRAGMA user_version = {target};")
    connection.commit()
    connection.close()


async def test_chat_log_search_index_is_rebuilt_with_the_session_bound(tmp_path) -> None:
    path = tmp_path / "old.db"
    write_old_database(path, FTS_WITH_SESSION_TOKEN - 1)
    connection = sqlite3.connect(path)
    for row_id, key, text, tokens in (
        (1, "g:1", "周五去爬山", "周五 爬山"),
        (2, "g:2", "周五去看电影", "周五 电影"),
    ):
        connection.execute(
            "INSERT INTO chat_log (id, session_key, created_at, role, text) "
            "VALUES (?, ?, '2026-11-30T00:00:00.000000Z', 'user', ?)",
            (row_id, key, text),
        )
        connection.execute(
            "INSERT INTO chat_log_fts (rowid, session_key, tokens) VALUES (?, ?, ?)",
            (row_id, key, tokens),
        )
    connection.commit()
    connection.close()

    database = await Database.open(path)
    try:
        (version,) = (await database.read("PRAGMA user_version"))[0]
        found = await ChatLogStore(database).search("g:1", "周五", 10)
    finally:
        await database.close()

    assert version == SCHEMA_VERSION
    assert [row.text for row in found] == ["周五去爬山"]
