"""Two processes on one PostgreSQL database, each with its own memory service (its own
cached indexes): what one saves, deletes or rewords, the other's next read sees."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_the_other_process_sees_a_save_a_delete_and_a_reword(open_backend) -> None:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    first_db, second_db = await open_backend(), await open_backend()
    first, second = MemoryService(MemoryStore(first_db)), MemoryService(MemoryStore(second_db))
    try:
        assert await second.list("g:1") == []  # the second process's index is loaded, empty
        saved = await first.save("g:1", "小明喜欢周末爬山")
        assert saved.memory is not None
        assert [m.content for m in await second.list("g:1")] == ["小明喜欢周末爬山"]
        # The same fact saved in the other process is a duplicate there too.
        assert (await second.save("g:1", "小明喜欢周末爬山")).status == "duplicate"
        assert (await first.update("g:1", saved.memory.id, content="小明喜欢周日爬山")).status == (
            "updated"
        )
        assert [m.content for m in await second.list("g:1")] == ["小明喜欢周日爬山"]
        await second.forget("g:1", saved.memory.id, by_person=True)
        assert await first.list("g:1") == []
        # A tombstone set by one process refuses the save in the other.
        assert (await first.save("g:1", "小明喜欢周日爬山")).status == "tombstoned"
    finally:
        await first_db.close()
        await second_db.close()
