"""The panel overview's reads on both backends: windows, logged chats, the chats and persons
with memories, and what is stored of one scope, rows written here with plain SQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.backend import Backend
    from nonebot_plugin_aimemory.store.overview_store import OverviewStore

T0 = "2024-05-01T08:00:00.000000Z"
T1 = "2024-05-01T09:00:00.000000Z"
T2 = "2024-05-02T10:00:00.000000Z"


@pytest.fixture
async def overview(any_database: Backend) -> OverviewStore:
    from nonebot_plugin_aimemory.store.overview_store import OverviewStore

    return OverviewStore(any_database)


async def insert(database: Backend, table: str, columns: str, *rows: Sequence[object]) -> None:
    """Rows of `table`, its `columns` given in order."""
    marks = ", ".join("?" for _ in columns.split(","))
    sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"
    await database.write(lambda connection: connection.executemany(sql, rows))


async def log(database: Backend, *rows: tuple[int, str, str]) -> None:
    """Chat-log rows (id, chat, time)."""
    await insert(
        database,
        "chat_log",
        "id, session_key, created_at, role, text",
        *((row_id, chat, at, "user", "你好") for row_id, chat, at in rows),
    )


async def memory(database: Backend, scope: str, memory_id: str, *, deleted: bool = False) -> None:
    await insert(
        database,
        "memories",
        "scope, id, content, normalized, created_at, updated_at, deleted_at",
        (scope, memory_id, memory_id, memory_id, T0, T0, T1 if deleted else None),
    )


async def test_every_window_is_listed_with_its_counts(overview: OverviewStore) -> None:
    from nonebot_plugin_aimemory.store.overview_store import StoredWindow

    await insert(
        overview.database,
        "sessions",
        "key, next_seq, compressions, updated_at",
        ("g:1", 12, 2, T1),
        ("f:2#猫娘", 3, 0, T0),
    )

    windows = await overview.windows()

    assert sorted(windows, key=lambda w: w.key) == [
        StoredWindow("f:2#猫娘", 3, 0, T0),
        StoredWindow("g:1", 12, 2, T1),
    ]
    assert await overview.window("g:1") == StoredWindow("g:1", 12, 2, T1)
    assert await overview.window("g:9") is None


async def test_an_empty_log_has_no_chats_and_no_newest_row(overview: OverviewStore) -> None:
    assert await overview.logged_chats() == ({}, 0)
    assert await overview.last_logged("g:1") is None


async def test_every_logged_chat_comes_with_its_newest_time_and_the_newest_id(
    overview: OverviewStore,
) -> None:
    await log(overview.database, (1, "g:1", T0), (2, "f:2", T1), (3, "g:1", T2), (4, "g:1@5", T0))

    chats = await overview.logged_chats()

    assert chats == ({"g:1": T2, "f:2": T1, "g:1@5": T0}, 4)
    assert await overview.last_logged("g:1") == T2


async def test_rows_logged_since_an_id_name_only_their_chats(overview: OverviewStore) -> None:
    await log(overview.database, (1, "g:1", T0), (2, "f:2", T1), (3, "g:3", T2))

    since = await overview.logged_since(1)
    nothing_new = await overview.logged_since(3)

    assert since == ({"f:2": T1, "g:3": T2}, 3)
    assert nothing_new == ({}, 3)


async def test_chats_with_memories_or_tombstones_are_listed_but_not_persons(
    overview: OverviewStore,
) -> None:
    database = overview.database
    await memory(database, "g:1", "a")
    await memory(database, "f:2#猫娘", "b", deleted=True)
    await memory(database, "u:3", "uc")
    await insert(
        database,
        "memory_tombstones",
        "scope, normalized, memory_id, deleted_at",
        ("g:4", "删掉的", "d", T1),
        ("u:5", "也删了", "ue", T1),
    )

    assert await overview.memory_scopes() == {"g:1", "f:2#猫娘", "g:4"}


async def test_chats_with_usage_or_a_persona_choice_are_active(overview: OverviewStore) -> None:
    database = overview.database
    await insert(
        database,
        "token_usage",
        "chat_key, day, role, prompt_tokens, calls",
        ("g:1", "2024-05-01", "chat", 10, 1),
        ("g:1", "2024-05-02", "chat", 10, 1),
        ("", "2024-05-01", "review", 5, 1),
    )
    await insert(database, "persona_choices", "chat_key, persona", ("f:2", "猫娘"))

    assert await overview.active_chats() == {"g:1", "", "f:2"}


async def test_live_personal_memories_are_counted_by_person(overview: OverviewStore) -> None:
    from nonebot_plugin_aimemory.store.overview_store import PersonalScope

    database = overview.database
    await memory(database, "u:2", "ua")
    await memory(database, "u:2", "ub")
    await memory(database, "u:2", "uc", deleted=True)
    await memory(database, "u:2#猫娘", "ud")
    await memory(database, "u:3", "ue", deleted=True)
    await memory(database, "g:1", "a")

    assert await overview.personal_scopes() == [
        PersonalScope("u:2", 2),
        PersonalScope("u:2#猫娘", 1),
    ]


async def test_a_scope_with_nothing_stored_has_no_traces(overview: OverviewStore) -> None:
    from nonebot_plugin_aimemory.store.overview_store import ScopeTraces

    assert await overview.traces("g:1", "g:1") == ScopeTraces(False, False, False)


async def test_a_persona_s_memories_are_traces_in_its_chat_not_of_its_neighbours(
    overview: OverviewStore,
) -> None:
    from nonebot_plugin_aimemory.store.overview_store import ScopeTraces

    database = overview.database
    await memory(database, "g:1#猫娘", "a")
    await memory(database, "g:12", "b")
    await memory(database, "g:1@5#猫娘", "c")

    assert await overview.traces("g:1", "g:1") == ScopeTraces(False, True, False)
    assert await overview.traces("g:1#猫娘", "g:1") == ScopeTraces(True, True, False)
    assert await overview.traces("g:2", "g:2") == ScopeTraces(False, False, False)


async def test_a_window_a_tombstone_or_the_chat_s_log_are_traces(overview: OverviewStore) -> None:
    from nonebot_plugin_aimemory.store.overview_store import ScopeTraces

    database = overview.database
    await insert(database, "sessions", "key, updated_at", ("f:2", T0))
    await insert(
        database,
        "memory_tombstones",
        "scope, normalized, memory_id, deleted_at",
        ("g:3#猫娘", "删掉的", "d", T1),
    )
    await log(database, (1, "g:4", T0))
    await insert(database, "persona_choices", "chat_key, persona", ("g:5", "猫娘"))

    assert await overview.traces("f:2", "f:2") == ScopeTraces(True, True, False)
    assert await overview.traces("g:3", "g:3") == ScopeTraces(False, True, False)
    assert await overview.traces("g:4#猫娘", "g:4") == ScopeTraces(False, False, True)
    assert await overview.traces("g:5", "g:5") == ScopeTraces(False, False, True)


# A server's database is often made with a language's collation (ICU's root here), under
# which `u;` sorts before `u:1` and `$` before digits: the overview's key ranges must not
# follow it.
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_key_ranges_hold_under_a_collation_that_is_not_byte_order(
    overview: OverviewStore,
) -> None:
    from nonebot_plugin_aimemory.store.overview_store import PersonalScope, ScopeTraces

    database = overview.database
    rows = await database.read("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'")
    if not rows:
        pytest.skip("this PostgreSQL server was built without ICU")
    for table in ("memories", "memory_tombstones"):
        await database.write_one(
            f'ALTER TABLE {table} ALTER COLUMN scope TYPE TEXT COLLATE "und-x-icu"'
        )
    await memory(database, "u:2", "ua")
    await memory(database, "g:1#猫娘", "a")
    await memory(database, "g:12", "b")

    assert await overview.personal_scopes() == [PersonalScope("u:2", 1)]
    assert await overview.traces("g:1", "g:1") == ScopeTraces(False, True, False)
    assert await overview.traces("g:2", "g:2") == ScopeTraces(False, False, False)
