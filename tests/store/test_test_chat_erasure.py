"""Clearing one of the try page's test chats on both databases: its chat-log rows leave the
log, the search and its ranking, its memories and tombstones go for good; every other
chat's stay as they were."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow

TEST_CHAT = "f:90000000000000000011"
REAL_CHAT = "g:1"
NOW = "2026-11-30T00:00:00.000000Z"


def row(text: str, key: str) -> ChatRow:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

    return ChatRow(key, NOW, "user", text, "2001", "小明")


async def test_a_chats_rows_leave_its_log_and_search_and_no_other_chats(
    any_chat_store: ChatLogStore,
) -> None:
    await any_chat_store.insert_many([row("周末火锅", REAL_CHAT), row("周末爬山", REAL_CHAT)])
    before = await any_chat_store.index.ranking(REAL_CHAT, "周末 火锅", 10)
    await any_chat_store.insert_many([row("周末火锅", TEST_CHAT), row("测试", TEST_CHAT)])

    removed = await any_chat_store.delete_chat(TEST_CHAT)

    assert removed == 2
    assert await any_chat_store.recent(TEST_CHAT, 10) == []
    assert await any_chat_store.search(TEST_CHAT, "火锅", 10) == []
    assert [r.text for r in await any_chat_store.recent(REAL_CHAT, 10)] == ["周末火锅", "周末爬山"]
    assert await any_chat_store.index.ranking(REAL_CHAT, "周末 火锅", 10) == before


async def test_a_scopes_memories_and_tombstones_go_for_good(any_database) -> None:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore

    store = MemoryStore(any_database)
    for scope in (TEST_CHAT, REAL_CHAT):
        for memory_id, content in (("a1", "喜欢爬山"), ("b2", "喜欢火锅")):
            memory = MemoryRecord(memory_id, content, content, created_at=NOW, updated_at=NOW)
            assert await store.insert(scope, memory) == "inserted"
        await store.mark_deleted(scope, ["b2"], tombstone=True)

    assert await store.erase_scope(TEST_CHAT) == 2

    assert await store.load_scope(TEST_CHAT) == []
    assert await store.load_tombstone_records(TEST_CHAT) == []
    assert len(await store.load_scope(REAL_CHAT)) == 2
    assert len(await store.load_tombstone_records(REAL_CHAT)) == 1
