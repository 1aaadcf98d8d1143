"""`python -m nonebot_plugin_aimemory.migrate`: the SQLite file copied into a real
PostgreSQL server, in batches, every table's counts on both sides, a second run copying
nothing, an interrupted run completed by the next, a damaged table reported while the
others are copied, a running bot refused, and a file of every earlier schema version."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.store.test_migrations import LATEST_VERSION, write_old_database, write_sample_rows

REPOSITORY = Path(__file__).resolve().parents[2]


async def filled_sqlite(path: Path, rows: int = 2500) -> None:
    """A SQLite file with more rows than one batch in the biggest tables."""
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(path)

    def work(connection) -> None:
        connection.execute(
            "INSERT INTO sessions (key, next_seq, updated_at) VALUES ('g:1', 0, 'x')"
        )
        connection.executemany(
            "INSERT INTO messages (session_key, seq, role, body, created_at) VALUES (?, ?, ?, ?, ?)",
            [("g:1", seq, "user", '{"role": "user", "content": "嗨"}', "x") for seq in range(rows)],
        )
        connection.executemany(
            "INSERT INTO chat_log (id, session_key, created_at, role, text) VALUES (?, ?, ?, ?, ?)",
            [
                (i, "g:1", "2026-12-01T00:00:00.000000Z", "user", f"第 {i} 条")
                for i in range(1, rows)
            ],
        )
        connection.execute(
            "INSERT INTO chat_log_vectors (row_id, session_key, model, vector) "
            "VALUES (1, 'g:1', 'e5', ?)",
            (bytes(range(16)),),
        )

    await database.write(work)
    await database.close()


async def counts(url: str) -> dict[str, int]:
    import psycopg

    from nonebot_plugin_aimemory.store.copying import COPIED_TABLES

    with psycopg.connect(url) as connection:
        return {
            name: connection.execute(f"SELECT COUNT(*) FROM aimemory.{name}").fetchone()[0]
            for name, _ in COPIED_TABLES
        }


async def test_a_copy_carries_every_row_and_a_second_run_copies_nothing(
    tmp_path: Path, postgres_url: str, capsys
) -> None:
    from nonebot_plugin_aimemory.migrate import migrate

    source = tmp_path / "aimemory.db"
    await filled_sqlite(source)

    assert await migrate(source, postgres_url) == 0
    first = capsys.readouterr()
    assert (await counts(postgres_url))["messages"] == 2500
    assert "messages                   2500         2500         2500" in first.out
    assert "[##############################]      2500 / 2500" in first.err

    assert await migrate(source, postgres_url) == 0
    again = capsys.readouterr().out
    assert "messages                   2500         2500            0" in again
    assert (await counts(postgres_url))["chat_log"] == 2499

    import psycopg

    with psycopg.connect(postgres_url) as connection:
        (vector,) = connection.execute("SELECT vector FROM aimemory.chat_log_vectors").fetchone()
        (last_id,) = connection.execute("SELECT last_id FROM aimemory.chat_log_ids").fetchone()
    assert bytes(vector) == bytes(range(16))
    assert last_id == 2499  # the next row logged on PostgreSQL gets a new id


async def test_an_interrupted_copy_is_completed_by_running_it_again(
    tmp_path: Path, postgres_url: str
) -> None:
    from nonebot_plugin_aimemory.store import copying
    from nonebot_plugin_aimemory.store.opening import open_backend
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    source_path = tmp_path / "aimemory.db"
    await filled_sqlite(source_path)
    source = await Database.open(source_path)
    target = await open_backend("", postgres_url)
    assert target is not None

    def interrupted(table: str, done: int, total: int) -> None:
        if table == "messages" and done >= 1000:
            raise KeyboardInterrupt  # Ctrl-C after the first batch

    with pytest.raises(KeyboardInterrupt):
        await copying.copy_all(source, target, interrupted)
    assert (await counts(postgres_url))["messages"] == 1000
    report = await copying.copy_all(source, target, lambda *_: None)
    await source.close()
    await target.close()

    assert not report.failed
    assert (await counts(postgres_url))["messages"] == 2500
    messages = next(table for table in report.tables if table.name == "messages")
    assert messages.copied == 1500


async def test_a_damaged_table_is_named_and_the_others_are_copied(
    tmp_path: Path, postgres_url: str, capsys
) -> None:
    import sqlite3

    from nonebot_plugin_aimemory.migrate import migrate

    source = tmp_path / "aimemory.db"
    await filled_sqlite(source)
    connection = sqlite3.connect(source)
    connection.execute("DROP TABLE memories")  # what a damaged page of it leaves readable
    connection.commit()
    connection.close()

    # The file is opened as the bot would (which recreates nothing it finds at its version).
    assert await migrate(source, postgres_url) == 1
    said = capsys.readouterr()
    assert "table memories could not be copied" in said.err
    assert (await counts(postgres_url))["messages"] == 2500


async def test_a_running_bot_is_refused(tmp_path: Path, postgres_url: str, capsys) -> None:
    from nonebot_plugin_aimemory.migrate import migrate
    from nonebot_plugin_aimemory.store.liveness import mark_running
    from nonebot_plugin_aimemory.store.plugin_state import PluginStateStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    source = tmp_path / "aimemory.db"
    await filled_sqlite(source, rows=10)
    database = await Database.open(source)
    await mark_running(PluginStateStore(database))
    await database.close()

    assert await migrate(source, postgres_url) == 2
    assert "a bot is running on the SQLite database" in capsys.readouterr().err
    assert (await counts(postgres_url))["messages"] == 0


@pytest.mark.parametrize("version", range(LATEST_VERSION))
async def test_a_file_of_every_earlier_schema_version_is_copied(
    tmp_path: Path, postgres_url: str, version: int
) -> None:
    import sqlite3

    from nonebot_plugin_aimemory.migrate import migrate
    from nonebot_plugin_aimemory.store.copying import COPIED_TABLES

    source = tmp_path / "old.db"
    write_old_database(source, version)
    write_sample_rows(source, version)

    assert await migrate(source, postgres_url) == 0
    copied = await counts(postgres_url)
    connection = sqlite3.connect(source)  # migrated in place to the latest version first
    for name, _ in COPIED_TABLES:
        (expected,) = connection.execute(f"SELECT COUNT(*) FROM {name}").fetchone()
        if name == "plugin_state":
            continue
        assert copied[name] == expected, name
    connection.close()


def test_the_command_runs_as_users_type_it(tmp_path: Path, postgres_url: str) -> None:
    import asyncio

    source = tmp_path / "aimemory.db"
    asyncio.run(filled_sqlite(source, rows=10))
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    environment.pop("AIMEMORY_DATABASE_URL", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nonebot_plugin_aimemory.migrate",
            "--to",
            postgres_url,
            "--from",
            str(source),
        ],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "messages                     10           10           10" in done.stdout
    password = postgres_url.split(":")[2].split("@")[0]
    assert password not in done.stdout + done.stderr
