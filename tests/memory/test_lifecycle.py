"""Memories outlive the conversation window: restarts, session eviction, `~对话 清空` and
the group auto-clear leave them alone."""

from __future__ import annotations

import asyncio

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.memory.helpers import (
    command,
    model_calls_one,
    saved_id,
    stored_bodies,
    told_today,
    wait_for,
)
from tests.quoted_blocks import memory_hits

VEGETARIAN = "小明(2001)吃素，不吃任何肉类"


async def test_memories_survive_a_restart(plugin) -> None:
    bot = RecordingBot()
    event = group_message("记住", group_id=1001, to_me=True)
    memory_id = saved_id(
        await model_calls_one(plugin, bot, event, "memory_save", {"content": VEGETARIAN})
    )

    await plugin.restart()
    listing = await command(bot, group_message("~记忆 列表", group_id=1001))

    assert listing.splitlines()[1:] == [
        f"#{memory_id} {VEGETARIAN}{told_today(plugin, '小明', 2001)}"
    ]


async def test_memories_survive_session_eviction(plugin) -> None:
    bot = RecordingBot()
    memory_id = saved_id(
        await model_calls_one(
            plugin,
            bot,
            private_message("记住", user_id=1002),
            "memory_save",
            {"content": VEGETARIAN},
        )
    )
    runtime = plugin.runtime
    runtime.sessions.max_idle_seconds = 0.001
    await asyncio.sleep(0.01)
    assert await runtime.sessions.evict_idle_sessions() >= 1
    assert "f:1002" not in runtime.sessions

    result = await model_calls_one(
        plugin, bot, private_message("我吃什么", user_id=1002), "memory_search", {"query": "吃素"}
    )

    assert memory_hits(result) == [
        f"#{memory_id} 「{VEGETARIAN}」{told_today(plugin, '小红', 1002)}"
    ]


async def test_clearing_the_conversation_keeps_the_memories(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    event = group_message("记住", group_id=1003, to_me=True)
    memory_id = saved_id(
        await model_calls_one(plugin, bot, event, "memory_save", {"content": VEGETARIAN})
    )

    cleared = await command(bot, group_message("~对话 清空", group_id=1003, role="admin"))
    listing = await command(bot, group_message("~记忆 列表", group_id=1003))

    assert cleared == texts.CLEARED
    assert await stored_bodies(plugin, "g:1003") == []
    assert listing.splitlines()[1:] == [
        f"#{memory_id} {VEGETARIAN}{told_today(plugin, '小明', 2001)}"
    ]


async def test_group_auto_clear_keeps_the_memories(plugin) -> None:
    await plugin.restart(aimemory_group_autoclear_after=2)
    bot = RecordingBot()
    event = group_message("记住", group_id=1004, to_me=True)
    memory_id = saved_id(
        await model_calls_one(plugin, bot, event, "memory_save", {"content": VEGETARIAN})
    )
    assert await stored_bodies(plugin, "g:1004") != []

    await bot.receive(group_message("闲聊一", group_id=1004))
    await bot.receive(group_message("闲聊二", group_id=1004))

    async def window_cleared() -> bool:
        return await stored_bodies(plugin, "g:1004") == []

    assert await wait_for(window_cleared)
    listing = await command(bot, group_message("~记忆 列表", group_id=1004))
    assert listing.splitlines()[1:] == [
        f"#{memory_id} {VEGETARIAN}{told_today(plugin, '小明', 2001)}"
    ]
