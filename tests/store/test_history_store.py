"""The SQLite file: conversation history row per message, group counters, and a database
that survives restarts, concurrency and cancelled callers."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

ALICE = "private:10001"
GROUP = "group:20002"


@pytest.fixture
def database(any_database: Database) -> Database:
    return any_database


@pytest.fixture
def history(database: Database) -> DatabaseHistoryStore:
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

    return DatabaseHistoryStore(database)


async def seqs(database: Database, key: str) -> list[int]:
    rows = await database.read(
        "SELECT seq FROM messages WHERE session_key = ? ORDER BY seq", (key,)
    )
    return [seq for (seq,) in rows]


def exchange(n: int) -> list[Message]:
    from nonebot_plugin_aimemory.engine.messages import assistant, user

    return [user(f"问题 {n}"), assistant(f"回答 {n}")]


# --------------------------------------------------------------------------- history


async def test_append_allocates_consecutive_seqs(
    database: Database, history: DatabaseHistoryStore
) -> None:
    await history.append(ALICE, exchange(1))
    await history.append(ALICE, exchange(2))

    assert await seqs(database, ALICE) == [0, 1, 2, 3]
    assert await history.load(ALICE) == [*exchange(1), *exchange(2)]


async def test_concurrent_appends_to_one_session_keep_every_row(
    database: Database, history: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given twenty writers appending to the same conversation at once
    batches = [exchange(n) if n % 2 else [user(f"单独 {n}")] for n in range(20)]
    # when they all run together
    await asyncio.gather(*(history.append(ALICE, batch) for batch in batches))
    # then every message is there, each batch contiguous, with no seq reused or skipped
    loaded = await history.load(ALICE)
    total = sum(len(batch) for batch in batches)
    assert await seqs(database, ALICE) == list(range(total))
    assert sorted(m.text for m in loaded) == sorted(m.text for b in batches for m in b)
    for batch in batches:
        start = loaded.index(batch[0])
        assert loaded[start : start + len(batch)] == batch


async def test_append_of_nothing_writes_nothing(
    database: Database, history: DatabaseHistoryStore
) -> None:
    await history.append(ALICE, [])

    assert await database.read("SELECT key FROM sessions") == []


async def test_history_survives_a_restart(db_path: Path) -> None:
    from nonebot_plugin_aimemory.engine.messages import (
        ImagePart,
        TextPart,
        ToolCall,
        assistant,
        tool_result,
        user,
    )
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    # given a conversation with a tool round and a picture, written and closed
    call = ToolCall("call_1", "get_weather", '{"city":"北京"}')
    image = ImagePart.from_source("https://example.com/cat.png", identity="file-cat")
    written = [
        user((TextPart("看看这只猫，再查下天气"), image)),
        assistant("我查一下", (call,)),
        tool_result(call, "晴，25 度"),
        assistant("猫很可爱；北京晴，25 度。"),
    ]
    first = await Database.open(db_path)
    await DatabaseHistoryStore(first).append(ALICE, written)
    await first.close()
    # when the file is opened again
    second = await Database.open(db_path)
    try:
        loaded = await DatabaseHistoryStore(second).load(ALICE)
    finally:
        await second.close()
    # then the same messages come back, the picture as its marker
    assert loaded == [written[0].with_image_markers(), *written[1:]]


async def test_replace_rewrites_only_that_session(history: DatabaseHistoryStore) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    await history.append(ALICE, [*exchange(1), *exchange(2)])
    await history.append(GROUP, exchange(3))

    await history.replace(ALICE, [user("总结：聊了两个问题")])

    assert await history.load(ALICE) == [user("总结：聊了两个问题")]
    assert await history.load(GROUP) == exchange(3)


async def test_append_after_replace_continues_the_sequence(
    database: Database, history: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    await history.append(ALICE, [*exchange(1), *exchange(2)])
    await history.replace(ALICE, [user("总结")])

    await history.append(ALICE, exchange(3))

    assert await seqs(database, ALICE) == [0, 1, 2]
    assert await history.load(ALICE) == [user("总结"), *exchange(3)]


async def test_clear_removes_only_that_session(history: DatabaseHistoryStore) -> None:
    await history.append(ALICE, exchange(1))
    await history.append(GROUP, exchange(2))

    await history.clear(ALICE)

    assert await history.load(ALICE) == []
    assert await history.load(GROUP) == exchange(2)


async def test_append_after_clear_starts_again_at_zero(
    database: Database, history: DatabaseHistoryStore
) -> None:
    await history.append(ALICE, exchange(1))
    await history.clear(ALICE)

    await history.append(ALICE, exchange(2))

    assert await seqs(database, ALICE) == [0, 1]


async def test_unreadable_rows_are_skipped(
    database: Database, history: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, user

    # given good rows around rows no Message can be made of
    bodies = [
        '{"role":"user","content":"还好"}',
        "not json at all",
        '{"role":"robot","content":"?"}',
        '["a","list"]',
        '{"role":"user","content":42}',
        '{"role":"assistant","content":null,"tool_calls":[{"function":{}}]}',
        '{"role":"assistant","content":"也还好"}',
    ]

    def insert(connection: sqlite3.Connection) -> None:
        connection.executemany(
            "INSERT INTO messages (session_key, seq, role, body, created_at) "
            "VALUES (?, ?, 'user', ?, '2024-01-01T00:00:00.000000Z')",
            [(ALICE, seq, body) for seq, body in enumerate(bodies)],
        )

    await database.write(insert)
    # when the history is loaded
    loaded = await history.load(ALICE)
    # then only the readable ones come back, in order
    assert loaded == [user("还好"), assistant("也还好")]


async def test_sql_looking_text_round_trips_unchanged(history: DatabaseHistoryStore) -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, user

    sneaky = "'); DROP TABLE messages; --"

    await history.append(sneaky, [user(sneaky), assistant('"; DELETE FROM sessions; --')])

    assert await history.load(sneaky) == [
        user(sneaky),
        assistant('"; DELETE FROM sessions; --'),
    ]


# --------------------------------------------------------------------------- database


async def test_write_finishes_even_if_the_caller_is_cancelled(database: Database) -> None:
    # given a write that is halfway through its transaction
    started = threading.Event()

    def slow_insert(connection: sqlite3.Connection) -> None:
        connection.execute(
            "INSERT INTO chat_counters VALUES ('g:1', 1, '2024-01-01T00:00:00.000000Z')"
        )
        started.set()
        time.sleep(0.05)  # on the database thread, not the event loop
        connection.execute(
            "INSERT INTO chat_counters VALUES ('g:2', 2, '2024-01-01T00:00:00.000000Z')"
        )

    caller = asyncio.create_task(database.write(slow_insert))
    assert await asyncio.to_thread(started.wait, 5)
    # when its caller is cancelled
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    # then the whole transaction still commits
    rows = await database.read("SELECT chat_key FROM chat_counters ORDER BY chat_key")
    assert [chat_key for (chat_key,) in rows] == ["g:1", "g:2"]


async def test_close_waits_for_a_write_whose_caller_was_cancelled(db_path: Path) -> None:
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(db_path)
    history = DatabaseHistoryStore(database)

    async def append() -> None:
        await history.append(ALICE, exchange(1))

    caller = asyncio.create_task(append())
    await asyncio.sleep(0)
    caller.cancel()

    await database.close()

    reopened = await Database.open(db_path)
    try:
        assert await DatabaseHistoryStore(reopened).load(ALICE) == exchange(1)
    finally:
        await reopened.close()


def half_then_fail(connection: sqlite3.Connection) -> None:
    """A write that breaks halfway: one row in, then an error."""
    connection.execute("INSERT INTO chat_counters VALUES ('g:1', 1, '2024-01-01T00:00:00.000000Z')")
    raise RuntimeError("a write that breaks halfway")


async def test_failed_write_rolls_back_entirely(
    database: Database, history: DatabaseHistoryStore
) -> None:
    with pytest.raises(RuntimeError):
        await database.write(half_then_fail)

    assert await database.read("SELECT * FROM chat_counters") == []
    await history.append(ALICE, exchange(1))  # and the connection is still usable
    assert await history.load(ALICE) == exchange(1)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # SQLite's own
async def test_database_is_in_wal_mode(database: Database) -> None:
    assert await database.read("PRAGMA journal_mode") == [("wal",)]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # SQLite's own
async def test_schema_is_at_the_latest_version(database: Database) -> None:
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION

    assert await database.read("PRAGMA user_version") == [(SCHEMA_VERSION,)]


async def test_open_creates_missing_folders(tmp_path: Path) -> None:
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    path = tmp_path / "a" / "b" / "aimemory.db"

    database = await Database.open(path)
    await database.close()

    assert path.is_file()


async def test_open_under_a_regular_file_raises(tmp_path: Path) -> None:
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")

    with pytest.raises((OSError, sqlite3.Error)):
        await Database.open(blocker / "x.db")


async def test_open_of_a_file_that_is_not_a_database_raises(tmp_path: Path) -> None:
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not an sqlite file" * 100)

    with pytest.raises((OSError, sqlite3.Error)):
        await Database.open(path)


# --------------------------------------------------------------------------- counters


async def test_group_counters_are_saved_and_loaded(database: Database) -> None:
    from nonebot_plugin_aimemory.store.counters import GroupCounterStore

    counters = GroupCounterStore(database)

    await counters.save({"g:20002": 3, "g:30003": 0})

    assert await counters.load_all() == {"g:20002": 3, "g:30003": 0}


async def test_saving_a_group_counter_again_overwrites_it(database: Database) -> None:
    from nonebot_plugin_aimemory.store.counters import GroupCounterStore

    counters = GroupCounterStore(database)
    await counters.save({"g:20002": 3, "g:30003": 1})

    await counters.save({"g:20002": 7})

    assert await counters.load_all() == {"g:20002": 7, "g:30003": 1}


async def test_group_counters_survive_a_restart(db_path: Path) -> None:
    from nonebot_plugin_aimemory.store.counters import GroupCounterStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    first = await Database.open(db_path)
    await GroupCounterStore(first).save({"g:20002": 5})
    await first.close()

    second = await Database.open(db_path)
    try:
        assert await GroupCounterStore(second).load_all() == {"g:20002": 5}
    finally:
        await second.close()


async def test_saving_no_counters_is_a_no_op(database: Database) -> None:
    from nonebot_plugin_aimemory.store.counters import GroupCounterStore

    counters = GroupCounterStore(database)

    await counters.save({})

    assert await counters.load_all() == {}


async def test_uses_not_awaited_yet_are_done_in_the_order_asked_for(
    database: Database, history: DatabaseHistoryStore
) -> None:
    # given a write and then a read, both started before either is awaited
    written = asyncio.ensure_future(history.append(ALICE, exchange(1)))
    loaded = asyncio.ensure_future(history.load(ALICE))
    # when both are done
    await asyncio.gather(written, loaded)
    # then the read came after the write
    assert loaded.result() == exchange(1)


async def test_every_use_runs_on_the_databases_own_thread(database: Database) -> None:
    def thread_of(connection: object) -> threading.Thread:
        return threading.current_thread()

    first = await database.write(thread_of)
    second = await database.write(thread_of)

    assert first is second
    assert first is not threading.current_thread()
    assert first.name.startswith("aimemory-")


async def test_close_ends_the_databases_thread(db_path: Path) -> None:
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(db_path)
    thread = await database.write(lambda connection: threading.current_thread())

    await database.close()

    await asyncio.to_thread(thread.join, 5)
    assert not thread.is_alive()


async def test_a_write_asked_of_a_closed_database_fails_where_it_is_awaited(
    db_path: Path,
) -> None:
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(db_path)
    await database.close()

    written = DatabaseHistoryStore(database).append(ALICE, exchange(1))  # does not raise here

    with pytest.raises(ValueError, match="closed"):
        await written


async def test_closing_twice_is_harmless(db_path: Path) -> None:
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(db_path)

    await database.close()
    await database.close()

    with pytest.raises(ValueError, match="closed"):
        await database.read("SELECT 1")


def rows_seen_from_outside(db_path: Path, key: str) -> int:
    """What another connection to the file (another process) sees committed for `key`."""
    with sqlite3.connect(db_path) as outside:
        ((count,),) = outside.execute(
            "SELECT COUNT(*) FROM messages WHERE session_key = ?", (key,)
        ).fetchall()
    return int(count)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # SQLite's own
async def test_an_append_is_committed_when_it_returns(
    db_path: Path, history: DatabaseHistoryStore
) -> None:
    await history.append(ALICE, exchange(1))

    assert rows_seen_from_outside(db_path, ALICE) == 2


async def test_a_write_on_a_locked_file_fails_after_the_busy_timeout_and_leaves_nothing(
    db_path: Path,
) -> None:
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    # given another program holding the file's write lock, and a short busy timeout
    database = await Database.open(db_path, busy_timeout_ms=200)
    history = DatabaseHistoryStore(database)
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        # when a write is asked for
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await history.append(ALICE, exchange(1))
        waited = time.monotonic() - started
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    try:
        # then it failed after about the busy timeout, wrote nothing, and writes go on
        assert 0.15 < waited < 2.0
        assert rows_seen_from_outside(db_path, ALICE) == 0
        await history.append(ALICE, exchange(2))
        assert await history.load(ALICE) == exchange(2)
    finally:
        await database.close()
