"""The auto-clear's per-group counters on both backends: saved in batches, kept across a
restart, and a batch that clears windows removes their messages too."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.store.conftest import Opener

AT = "2024-05-01T08:00:00.000000Z"


async def test_counters_survive_a_restart_and_are_overwritten(open_backend: Opener) -> None:
    from nonebot_plugin_aimemory.store.counters import ROWS_PER_STATEMENT, GroupCounterStore

    many = {f"g:{i}": i for i in range(ROWS_PER_STATEMENT + 5)}
    database = await open_backend()
    try:
        await GroupCounterStore(database).save(many)
        await GroupCounterStore(database).save({"g:1": 40, "g:2@10001": 3})
    finally:
        await database.close()

    database = await open_backend()
    try:
        loaded = await GroupCounterStore(database).load_all()
    finally:
        await database.close()

    assert loaded == {**many, "g:1": 40, "g:2@10001": 3}


async def test_a_batch_clears_the_windows_it_names_with_their_messages(any_database) -> None:
    from nonebot_plugin_aimemory.store.counters import GroupCounterStore

    def windows(connection) -> None:
        for key in ("g:1", "g:1#猫娘", "g:2", "f:3"):
            connection.execute("INSERT INTO sessions (key, updated_at) VALUES (?, ?)", (key, AT))
            connection.execute(
                "INSERT INTO messages (session_key, seq, role, body, created_at) "
                "VALUES (?, 0, 'user', '{}', ?)",
                (key, AT),
            )

    await any_database.write(windows)
    store = GroupCounterStore(any_database)

    before = await store.load_group_window_keys()
    await store.save({"g:1": 0}, clear_windows=["g:1", "g:1#猫娘"])
    after = await store.load_group_window_keys()

    assert before == {"g:1", "g:1#猫娘", "g:2"}
    assert after == {"g:2"}
    assert await any_database.read("SELECT key FROM sessions ORDER BY key") == [("f:3",), ("g:2",)]
