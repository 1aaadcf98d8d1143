"""`python -m nonebot_plugin_aimemory.migrate` on a file holding rows a database refuses,
written straight into the SQLite file as an old or damaged database has them: a batch the
real PostgreSQL server refuses is written again row by row, a batch SQLite cannot read is
read again row by row, and each row that still fails is listed (table, key, error) in a
file beside the database and counted, with exit status 1; every other row is copied, a
second run copies nothing twice, and once the rows are fixed a run copies just them. Text
holding NUL is copied, NUL stored as U+FFFD."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import pytest

from tests.store.test_migrate_to_postgres import counts, filled_sqlite
from tests.store.test_migrations import (
    AT,
    CHAT_LOG,
    LATEST_VERSION,
    MEMORIES,
    write_old_database,
    write_sample_rows,
)

TOO_BIG_FOR_INTEGER = 2**40  # PostgreSQL's INTEGER is 32 bits; SQLite's is 64
TOO_BIG_FOR_BIGINT = 1e30  # kept as a REAL by SQLite's INTEGER column

# Per table: the row written to be refused, the key the report names it by, and the
# statement that fixes it in the SQLite file.
Refusal = tuple[str, str, str, tuple[object, ...], str]
REFUSALS: dict[int, list[Refusal]] = {
    # A count that is not a number.
    1: [
        (
            "sessions",
            "key='g:bad'",
            "INSERT INTO sessions (key, next_seq, updated_at) VALUES ('g:bad', ?, ?)",
            ("第二条", AT),
            "UPDATE sessions SET next_seq = 0 WHERE key = 'g:bad'",
        ),
        (
            "messages",
            "session_key='g:1', seq=1e+30",
            "INSERT INTO messages (session_key, seq, role, body, created_at) "
            "VALUES ('g:1', ?, 'user', '{}', ?)",
            (TOO_BIG_FOR_BIGINT, AT),
            "UPDATE messages SET seq = 99 WHERE seq > 1e18",
        ),
    ],
    # A text stored as bytes.
    MEMORIES: [
        (
            "memories",
            "scope='g:1', id='m-bad'",
            "INSERT INTO memories (scope, id, content, normalized, created_at, updated_at) "
            "VALUES ('g:1', 'm-bad', ?, '坏了', ?, ?)",
            ("坏了".encode(), AT, AT),
            "UPDATE memories SET content = CAST(content AS TEXT) WHERE id = 'm-bad'",
        ),
    ],
    # A number beyond PostgreSQL's INTEGER.
    CHAT_LOG: [
        (
            "chat_log",
            "id=99",
            "INSERT INTO chat_log (id, session_key, created_at, role, text, addressed) "
            "VALUES (99, 'g:1', ?, 'user', '周末见', ?)",
            (AT, TOO_BIG_FOR_INTEGER),
            "UPDATE chat_log SET addressed = 1 WHERE id = 99",
        ),
        (
            "review_state",
            "session_key='g:bad'",
            "INSERT INTO review_state (session_key, failures) VALUES ('g:bad', ?)",
            (TOO_BIG_FOR_INTEGER,),
            "UPDATE review_state SET failures = 0 WHERE session_key = 'g:bad'",
        ),
    ],
}


def refusals_at(version: int) -> list[Refusal]:
    """The refused rows a file of `version` can hold (its tables)."""
    return [row for since, rows in REFUSALS.items() if version >= since for row in rows]


def sqlite_counts(path: Path) -> dict[str, int]:
    from nonebot_plugin_aimemory.store.copying import COPIED_TABLES

    connection = sqlite3.connect(path)
    try:
        return {
            name: connection.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
            for name, _ in COPIED_TABLES
        }
    finally:
        connection.close()


def report_lines(out: str) -> dict[str, list[int]]:
    """The command's table of counts: per table, SQLite, PostgreSQL, copied now, refused."""
    from nonebot_plugin_aimemory.store.copying import COPIED_TABLES

    names = {name for name, _ in COPIED_TABLES}
    return {
        line.split()[0]: [int(n) for n in line.split()[1:]]
        for line in out.splitlines()
        if line.split() and line.split()[0] in names
    }


def refused_file_rows(source: Path) -> list[dict[str, str]]:
    with (source.parent / f"{source.name}.refused-rows.csv").open(encoding="utf-8-sig") as file:
        return list(csv.DictReader(file))


def damage(path: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    """A statement run on the file with sqlite3 itself, as an old or damaged file holds it."""
    connection = sqlite3.connect(path)
    connection.execute(sql, params)
    connection.commit()
    connection.close()


@pytest.mark.parametrize("version", range(1, LATEST_VERSION + 1))
async def test_rows_postgresql_refuses_are_listed_and_a_run_after_fixing_copies_them(
    tmp_path: Path, postgres_url: str, version: int, capsys
) -> None:
    from nonebot_plugin_aimemory.migrate import migrate

    source = tmp_path / "old.db"
    write_old_database(source, version)
    write_sample_rows(source, version)
    refusals = refusals_at(version)
    for _, _, insert, params, _ in refusals:
        damage(source, insert, params)

    assert await migrate(source, postgres_url) == 1
    first = capsys.readouterr()
    listed = refused_file_rows(source)
    assert sorted((row["table"], row["key"]) for row in listed) == sorted(
        (table, key) for table, key, *_ in refusals
    )
    assert all(row["error"].startswith("write: ") for row in listed)
    assert f"{len(refusals)} rows were not copied" in first.err
    assert f"{source.name}.refused-rows.csv" in first.err
    in_sqlite, in_postgres = sqlite_counts(source), await counts(postgres_url)
    for table in in_sqlite.keys() - {"plugin_state"}:
        left = sum(1 for refused, *_ in refusals if refused == table)
        assert in_postgres[table] == in_sqlite[table] - left, table
        assert report_lines(first.out)[table][3] == left, table

    assert await migrate(source, postgres_url) == 1
    again = report_lines(capsys.readouterr().out)
    assert all(numbers[2] == 0 for numbers in again.values())  # nothing copied twice
    assert await counts(postgres_url) == in_postgres

    for *_, fix in refusals:
        damage(source, fix)
    assert await migrate(source, postgres_url) == 0
    fixed = report_lines(capsys.readouterr().out)
    for table in in_sqlite.keys() - {"plugin_state"}:
        assert fixed[table][2] == sum(1 for refused, *_ in refusals if refused == table), table
        assert fixed[table][0] == fixed[table][1], table
    assert not (tmp_path / "old.db.refused-rows.csv").exists()


async def test_a_refused_row_in_a_full_batch_costs_only_itself(
    tmp_path: Path, postgres_url: str, capsys
) -> None:
    from nonebot_plugin_aimemory.migrate import migrate

    source = tmp_path / "aimemory.db"
    await filled_sqlite(source)  # 2500 messages, 2499 chat lines: three batches each
    for row_id in (500, 1700):
        damage(source, "UPDATE chat_log SET addressed = ? WHERE id = ?", (2**40, row_id))
    damage(source, "UPDATE messages SET role = ? WHERE seq = 1500", (b"user",))

    assert await migrate(source, postgres_url) == 1
    said = capsys.readouterr()
    copied = await counts(postgres_url)
    assert copied["chat_log"] == 2497
    assert copied["messages"] == 2499
    assert "[##############################]      2499 / 2499" in said.err
    listed = {(row["table"], row["key"]) for row in refused_file_rows(source)}
    assert listed == {
        ("chat_log", "id=500"),
        ("chat_log", "id=1700"),
        ("messages", "session_key='g:1', seq=1500"),
    }
    assert "3 rows were not copied (messages 1, chat_log 2)" in said.err


async def test_a_row_sqlite_cannot_read_is_listed_and_the_rest_are_copied(
    tmp_path: Path, postgres_url: str, capsys
) -> None:
    from nonebot_plugin_aimemory.migrate import migrate

    source = tmp_path / "aimemory.db"
    await filled_sqlite(source)
    # Bytes that are not UTF-8 in a text column: Python's sqlite3 cannot hand them out.
    damage(source, "UPDATE chat_log SET text = CAST(X'FFFE' AS TEXT) WHERE id = 700")

    assert await migrate(source, postgres_url) == 1
    assert "1 row was not copied (chat_log 1)" in capsys.readouterr().err
    assert (await counts(postgres_url))["chat_log"] == 2498
    (listed,) = refused_file_rows(source)
    assert (listed["table"], listed["key"]) == ("chat_log", "id=700")
    assert listed["error"].startswith("read: sqlite3.OperationalError: Could not decode")


async def test_a_memory_and_a_chat_line_holding_nul_are_copied_with_nul_replaced(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg

    from nonebot_plugin_aimemory.migrate import migrate

    source = tmp_path / "aimemory.db"
    await filled_sqlite(source, rows=10)
    for memory_id, content in (("m1", "小明喜欢\x00爬山"), ("m2", "小红"), ("m3", "小刚")):
        damage(
            source,
            "INSERT INTO memories (scope, id, content, normalized, created_at, updated_at) "
            "VALUES ('g:1', ?, ?, ?, ?, ?)",
            (memory_id, content, content, AT, AT),
        )
    damage(source, "UPDATE chat_log SET text = ? WHERE id = 3", ("周五\x00见",))

    assert await migrate(source, postgres_url) == 0
    in_sqlite, in_postgres = sqlite_counts(source), await counts(postgres_url)
    assert in_postgres["memories"] == in_sqlite["memories"] == 3
    assert in_postgres["chat_log"] == in_sqlite["chat_log"] == 9
    with psycopg.connect(postgres_url) as connection:
        memory = connection.execute("SELECT content FROM aimemory.memories WHERE id = 'm1'")
        line = connection.execute("SELECT text FROM aimemory.chat_log WHERE id = 3")
        assert memory.fetchone() == ("小明喜欢\ufffd爬山",)
        assert line.fetchone() == ("周五\ufffd见",)
    assert not (tmp_path / "aimemory.db.refused-rows.csv").exists()


async def test_a_key_holding_nul_at_a_batchs_end_skips_no_row_after_it(
    tmp_path: Path, postgres_url: str
) -> None:
    from nonebot_plugin_aimemory.migrate import migrate
    from nonebot_plugin_aimemory.store.copying import BATCH_ROWS

    source = tmp_path / "aimemory.db"
    await filled_sqlite(source, rows=10)
    # The first batch ends on 'b\x00'; 'b\x01' and 'bz' sort after it but before 'b\ufffd'.
    keys = [f"a{i:04}" for i in range(BATCH_ROWS - 1)] + ["b\x00", "b\x01", "bz"]
    connection = sqlite3.connect(source)
    connection.executemany(
        "INSERT INTO memory_tombstones (scope, normalized, memory_id, deleted_at) "
        "VALUES ('g:1', ?, 'm', ?)",
        [(key, AT) for key in keys],
    )
    connection.commit()
    connection.close()

    assert await migrate(source, postgres_url) == 0
    assert (await counts(postgres_url))["memory_tombstones"] == len(keys)
