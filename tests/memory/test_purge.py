"""Deleted memories are purged for good after PURGE_DELETED_AFTER_DAYS (at start-up and
then daily), their tombstones staying: a save/forget loop cannot grow storage without bound."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import command, wait_for

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.memory.service import MemoryService

SCOPE = "g:1401"
DELETED = "住在阳光小区3号楼"
REWORDED = "住阳光小区的3号楼"


def days_from_now(days: float) -> datetime:
    return datetime.now(timezone.utc) + timedelta(days=days)


async def rows(memory: MemoryService, table: str = "memories") -> int:
    ((count,),) = await memory.store.database.read(f"SELECT COUNT(*) FROM {table}")
    return count


async def age_deletion(memory: MemoryService, memory_id: str, days: float) -> None:
    """Make the memory's deletion `days` old, as if it had been deleted back then."""
    from nonebot_plugin_aimemory.store.times import utc_text

    moment = utc_text(days_from_now(-days))
    await memory.store.database.write_one(
        "UPDATE memories SET deleted_at = ? WHERE scope = ? AND id = ?", (moment, SCOPE, memory_id)
    )


async def saved_and_deleted(memory: MemoryService, content: str, **fields) -> str:
    outcome = await memory.save(SCOPE, content, **fields)
    assert outcome.status == "saved"
    assert await memory.forget(SCOPE, outcome.memory.id, by_person=True) is not None
    return outcome.memory.id


async def stored_ids(memory: MemoryService) -> set[str]:
    return {r.id for r in await memory.store.load_scope(SCOPE)}


def test_deleted_memories_are_kept_thirty_days() -> None:
    from nonebot_plugin_aimemory.memory.service import PURGE_DELETED_AFTER_DAYS

    assert PURGE_DELETED_AFTER_DAYS == 30


async def test_a_memory_deleted_over_thirty_days_ago_is_purged(memory: MemoryService) -> None:
    old = await saved_and_deleted(memory, DELETED)
    await age_deletion(memory, old, days=31)

    purged = await memory.purge_deleted()

    assert purged == 1
    assert await stored_ids(memory) == set()


async def test_recently_deleted_and_live_memories_stay(memory: MemoryService) -> None:
    old = await saved_and_deleted(memory, DELETED)
    await age_deletion(memory, old, days=31)
    recent = await saved_and_deleted(memory, "小明怕狗")
    await age_deletion(memory, recent, days=29)
    live = (await memory.save(SCOPE, "阿强对花生过敏")).memory.id

    await memory.purge_deleted()

    assert await stored_ids(memory) == {recent, live}
    assert [r.id for r in await memory.list(SCOPE)] == [live]


async def test_the_tombstone_outlives_the_purge(memory: MemoryService) -> None:
    await saved_and_deleted(memory, DELETED)

    assert await memory.purge_deleted(now=days_from_now(31)) == 1

    assert await rows(memory, "memory_tombstones") == 1
    assert (await memory.save(SCOPE, DELETED)).status == "tombstoned"
    assert (await memory.save(SCOPE, REWORDED)).status == "tombstoned"


async def test_the_purged_tombstone_still_tells_people_apart(open_backend) -> None:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    database = await open_backend()
    try:
        memory = MemoryService(MemoryStore(database))
        await saved_and_deleted(memory, DELETED, user_id="10001")
        await memory.purge_deleted(now=days_from_now(31))
        reloaded = MemoryService(MemoryStore(database))  # only the tombstone row is left

        other = await reloaded.save(SCOPE, REWORDED, user_id="10002")
        same = await reloaded.save(SCOPE, REWORDED, user_id="10001")
    finally:
        await database.close()

    assert (other.status, same.status) == ("saved", "tombstoned")


async def test_a_purged_id_is_never_given_to_a_new_memory(
    memory: MemoryService, monkeypatch
) -> None:
    from nonebot_plugin_aimemory.memory import rules, writes

    purged = await saved_and_deleted(memory, DELETED)
    await memory.purge_deleted(now=days_from_now(31))

    def proposing_the_purged_id_first(in_use, **options) -> str:
        return purged if purged not in in_use else rules.new_id(in_use, **options)

    monkeypatch.setattr(writes, "new_id", proposing_the_purged_id_first)
    saved = await memory.save(SCOPE, "阿强对花生过敏")

    assert saved.status == "saved"
    assert saved.memory.id != purged


async def test_a_save_forget_loop_leaves_storage_bounded_after_the_purge(
    memory: MemoryService,
) -> None:
    for _ in range(200):
        saved = await memory.save(SCOPE, "小明今天心情不好")
        assert saved.status == "saved"
        await memory.forget(SCOPE, saved.memory.id, by_person=False)
    for i in range(200):
        await saved_and_deleted(memory, f"第{i}条临时记忆")
    assert await rows(memory) == 400

    purged = await memory.purge_deleted(now=days_from_now(31))

    assert purged == 400
    assert await rows(memory) == 0
    assert await rows(memory, "memory_tombstones") == 200  # one per distinct deleted fact
    assert (await memory.save(SCOPE, "小明今天心情不好")).status == "saved"


# ---------------------------------------------------------------- through the plugin


async def test_restoring_a_purged_memory_says_it_is_gone_for_good(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    memory = plugin.runtime.memory.service
    bot = RecordingBot()
    memory_id = (await memory.save("g:1402", DELETED)).memory.id
    admin = {"group_id": 1402, "role": "admin"}
    await command(bot, group_message(f"~记忆 删除 {memory_id}", **admin))
    await memory.purge_deleted(now=days_from_now(31))

    reply = await command(bot, group_message(f"~记忆 恢复 {memory_id}", **admin))

    assert reply == texts.memory_purged(memory_id, 30)
    assert (await memory.save("g:1402", DELETED)).status == "tombstoned"


async def test_restoring_a_never_seen_id_still_gets_the_usage(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    reply = await command(bot, group_message("~记忆 恢复 zzzz", group_id=1402, role="admin"))

    assert reply == texts.memory_nothing_to_restore_with_usage("zzzz")


async def test_old_deletions_are_purged_at_start_up(plugin) -> None:
    memory = plugin.runtime.memory.service
    memory_id = await saved_and_deleted(memory, DELETED)
    await age_deletion(memory, memory_id, days=31)

    await plugin.restart()

    memory = plugin.runtime.memory.service
    assert await wait_for(lambda: _is_gone(memory, memory_id))


async def test_old_deletions_are_purged_again_on_the_interval(plugin, monkeypatch) -> None:
    from nonebot_plugin_aimemory.memory import feature

    monkeypatch.setattr(feature, "PURGE_INTERVAL_SECONDS", 0.05)
    await plugin.restart()
    memory = plugin.runtime.memory.service
    first = await saved_and_deleted(memory, DELETED)
    await age_deletion(memory, first, days=31)
    assert await wait_for(lambda: _is_gone(memory, first))

    later = await saved_and_deleted(memory, "小明怕狗")  # after the start-up run, surely
    await age_deletion(memory, later, days=31)

    assert await wait_for(lambda: _is_gone(memory, later))


async def _is_gone(memory: MemoryService, memory_id: str) -> bool:
    return memory_id not in await stored_ids(memory)
