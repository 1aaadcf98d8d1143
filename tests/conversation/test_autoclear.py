"""Group auto-clear after N consecutive messages that do not address the bot."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message


async def wait_for_background(plugin) -> None:
    await plugin.runtime.autoclear._background.wait()


async def window_of(plugin, key: str):
    session = plugin.runtime.sessions.get_or_create(key, touch=False)
    async with session.lock:
        await session.ensure_loaded()
    return session.bot.window.messages


async def stored_rows(plugin, key: str) -> int:
    rows = await plugin.runtime.database.read(
        "SELECT COUNT(*) FROM messages WHERE session_key = ?", (key,)
    )
    return rows[0][0]


async def test_context_is_cleared_after_n_unaddressed_messages(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=3)
    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=5))
    assert await stored_rows(plugin, "g:5") == 2
    for i in range(2):
        await bot.receive(group_message(f"闲聊{i}", group_id=5))
    await wait_for_background(plugin)
    assert await stored_rows(plugin, "g:5") == 2
    await bot.receive(group_message("闲聊2", group_id=5))
    await wait_for_background(plugin)
    assert await stored_rows(plugin, "g:5") == 0
    assert await window_of(plugin, "g:5") == []


async def test_an_addressed_message_resets_the_count(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=3)
    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=6))
    await bot.receive(group_message("闲聊", group_id=6))
    await bot.receive(group_message("闲聊", group_id=6))
    await bot.receive(group_message("还在吗", to_me=True, group_id=6))
    await bot.receive(group_message("闲聊", group_id=6))
    await bot.receive(group_message("闲聊", group_id=6))
    await wait_for_background(plugin)
    assert await stored_rows(plugin, "g:6") == 4


async def test_count_survives_a_restart(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=3)
    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=7))
    await bot.receive(group_message("闲聊", group_id=7))
    await bot.receive(group_message("闲聊", group_id=7))
    await plugin.restart()
    await bot.receive(group_message("闲聊", group_id=7))
    await wait_for_background(plugin)
    assert await stored_rows(plugin, "g:7") == 0


async def test_other_groups_are_not_cleared(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=2)
    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=8))
    await bot.receive(group_message("记一下", to_me=True, group_id=9))
    await bot.receive(group_message("闲聊", group_id=9))
    await bot.receive(group_message("闲聊", group_id=9))
    await wait_for_background(plugin)
    assert await stored_rows(plugin, "g:8") == 2
    assert await stored_rows(plugin, "g:9") == 0


async def test_counters_are_written_in_batches_not_per_message(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=100)
    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=10))
    for _ in range(9):
        await bot.receive(group_message("闲聊", group_id=10))
    await wait_for_background(plugin)
    rows = await plugin.runtime.database.read(
        "SELECT unaddressed FROM chat_counters WHERE chat_key = 'g:10'"
    )
    assert rows == []
    await bot.receive(group_message("闲聊", group_id=10))
    await wait_for_background(plugin)
    rows = await plugin.runtime.database.read(
        "SELECT unaddressed FROM chat_counters WHERE chat_key = 'g:10'"
    )
    assert [r[0] for r in rows] == [10]


async def test_autoclear_off_never_clears(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=0)
    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=11))
    for _ in range(40):
        await bot.receive(group_message("闲聊", group_id=11))
    await wait_for_background(plugin)
    assert await stored_rows(plugin, "g:11") == 2


async def test_a_group_that_never_addressed_the_bot_costs_no_write(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=5)
    bot = RecordingBot()
    for _ in range(12):
        await bot.receive(group_message("闲聊", group_id=12))
    await wait_for_background(plugin)
    rows = await plugin.runtime.database.read("SELECT COUNT(*) FROM chat_counters")
    assert rows[0][0] == 0
    assert plugin.runtime.sessions.get("g:12") is None


async def test_a_clear_happens_once_per_burst_of_addressing(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=2)
    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=13))
    for _ in range(6):
        await bot.receive(group_message("闲聊", group_id=13))
    await wait_for_background(plugin)
    assert await stored_rows(plugin, "g:13") == 0
    await bot.receive(group_message("又来了", to_me=True, group_id=13))
    assert await stored_rows(plugin, "g:13") == 2
    for _ in range(2):
        await bot.receive(group_message("闲聊", group_id=13))
    await wait_for_background(plugin)
    assert await stored_rows(plugin, "g:13") == 0


async def test_a_message_arriving_during_a_clear_is_kept_and_sees_a_clean_window(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=2)
    bot = RecordingBot()
    await bot.receive(group_message("旧话题：周五聚餐", to_me=True, group_id=14))
    await bot.receive(group_message("闲聊", group_id=14))
    await bot.receive(group_message("闲聊", group_id=14))  # the clear starts, its write is batched
    await bot.receive(group_message("新话题：周六爬山", to_me=True, group_id=14))
    await wait_for_background(plugin)
    rows = await plugin.runtime.database.read(
        "SELECT body FROM messages WHERE session_key = 'g:14' ORDER BY seq"
    )
    assert len(rows) == 2
    assert "新话题" in rows[0][0]
    contents = " ".join(str(m["content"]) for m in plugin.llm.last_messages())
    assert "旧话题" not in contents
