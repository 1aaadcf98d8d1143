"""Retention: the chat log forgets rows older than `aimemory_chat_log_keep_days`, and
nothing else."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tests.chatlog.helpers import GROUP, eventually, log_rows, logged, said
from tests.fakes.bots import RecordingBot

# Later than anything the startup cleanup (which uses the real time) could delete.
LATER = datetime.now(timezone.utc) + timedelta(days=1000)


def days_before(moment: datetime, days: float) -> str:
    from nonebot_plugin_aimemory.store.times import utc_text

    return utc_text(moment - timedelta(days=days))


async def test_cleanup_removes_only_rows_older_than_the_kept_days(plugin) -> None:
    await plugin.restart(aimemory_chat_log_keep_days=7)
    await log_rows(plugin, GROUP, "八天前说的火锅", created_at=days_before(LATER, 8))
    await log_rows(plugin, GROUP, "六天前说的火锅", created_at=days_before(LATER, 6))

    deleted = await plugin.runtime.chat_log.writer.cleanup(now=LATER)

    assert deleted == 1
    assert [r.text for r in await logged(plugin)] == ["六天前说的火锅"]


async def test_cleaned_rows_leave_the_search_index_too(plugin) -> None:
    await plugin.restart(aimemory_chat_log_keep_days=7)
    await log_rows(plugin, GROUP, "八天前说的麻辣烫", created_at=days_before(LATER, 8))
    await log_rows(plugin, GROUP, "六天前说的火锅", created_at=days_before(LATER, 6))

    await plugin.runtime.chat_log.writer.cleanup(now=LATER)

    store = plugin.runtime.chat_log.writer.store
    assert await store.search(GROUP, "麻辣烫", 10) == []
    indexed = await plugin.runtime.database.read("SELECT COUNT(*) FROM chat_log_fts")
    assert indexed[0][0] == 1


async def test_cleanup_never_touches_memories_or_tombstones(plugin, reviewer) -> None:
    memory = plugin.runtime.memory.service
    kept = (await memory.save(GROUP, "小明喜欢吃辣")).memory
    deleted = (await memory.save(GROUP, "小明住在三楼")).memory
    await memory.forget(GROUP, deleted.id, by_person=True)
    await log_rows(plugin, GROUP, "小明说他喜欢吃辣")

    await plugin.runtime.chat_log.writer.cleanup(now=LATER)

    assert await logged(plugin) == []
    assert [m.id for m in await memory.store.load_scope(GROUP) if not m.deleted] == [kept.id]
    assert (await memory.save(GROUP, "小明住在三楼")).status == "tombstoned"
    tombstones = await memory.store.load_tombstones(GROUP)
    assert list(tombstones.values()) == [deleted.id]


async def test_the_background_cleanup_runs_when_the_bot_starts(plugin, reviewer) -> None:
    await log_rows(
        plugin, GROUP, "很久以前的话", created_at=days_before(datetime.now(timezone.utc), 91)
    )
    bot = RecordingBot()
    await bot.receive(said("今天的话", to_me=True))

    await plugin.restart()

    async def only_recent_left() -> bool:
        return [r.text for r in await logged(plugin)] == ["今天的话", "好的"]

    await eventually(only_recent_left)


async def test_row_ids_are_never_reused_after_the_log_is_emptied(plugin) -> None:
    await log_rows(plugin, GROUP, "第一句", "第二句", created_at=days_before(LATER, 100))
    old_ids = [r.id for r in await logged(plugin)]
    await plugin.runtime.chat_log.writer.cleanup(now=LATER)
    await plugin.restart()

    await log_rows(plugin, GROUP, "清理之后的第一句", "第二句")

    new_ids = [r.id for r in await logged(plugin)]
    assert min(new_ids) > max(old_ids)
    store = plugin.runtime.chat_log.writer.store
    assert await store.count_since(GROUP, max(old_ids)) == 2
