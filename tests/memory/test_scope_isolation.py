"""Scope isolation: a conversation's memory tools and commands see only its own scope,
and another scope's id behaves exactly like an id that does not exist."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from nonebot.adapters.onebot.v11 import MessageEvent

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.memory.helpers import command, model_calls_one, saved_id, stored, told_today
from tests.quoted_blocks import memory_hits

SECRET = "本群的暗号是芝麻开门"
Chat = Callable[[str], MessageEvent]

PAIRS: dict[str, tuple[Chat, Chat]] = {
    "two groups": (
        lambda t: group_message(t, group_id=201, to_me=True),
        lambda t: group_message(t, group_id=202, to_me=True),
    ),
    "two private chats": (
        lambda t: private_message(t, user_id=3201),
        lambda t: private_message(t, user_id=3202),
    ),
    "a group and a member's private chat": (
        lambda t: group_message(t, group_id=203, user_id=3203, to_me=True),
        lambda t: private_message(t, user_id=3203),
    ),
}
pairs = pytest.mark.parametrize(("owner", "other"), PAIRS.values(), ids=PAIRS.keys())


async def remember_secret(plugin, bot: RecordingBot, owner: Chat) -> str:
    result = await model_calls_one(
        plugin, bot, owner("记住暗号"), "memory_save", {"content": SECRET}
    )
    return saved_id(result)


@pairs
async def test_search_never_returns_another_scopes_memories(plugin, owner, other) -> None:
    bot = RecordingBot()
    secret_id = await remember_secret(plugin, bot, owner)

    by_keyword = await model_calls_one(
        plugin, bot, other("暗号是什么"), "memory_search", {"query": "暗号"}
    )
    listing = await model_calls_one(plugin, bot, other("你记得什么"), "memory_search", {})
    own = await model_calls_one(
        plugin, bot, owner("暗号是什么"), "memory_search", {"query": "暗号"}
    )

    assert by_keyword == "没有找到相关记忆。"
    assert listing == "当前会话还没有任何记忆。"
    sender = owner("").sender
    teller = told_today(plugin, sender.card or sender.nickname, sender.user_id)
    assert memory_hits(own) == [f"#{secret_id} 「{SECRET}」{teller}"]


@pairs
async def test_update_with_another_scopes_id_is_not_found(plugin, owner, other) -> None:
    from nonebot_plugin_aimemory import texts
    from nonebot_plugin_aimemory.onebot.inbound import session_key_for

    bot = RecordingBot()
    secret_id = await remember_secret(plugin, bot, owner)

    result = await model_calls_one(
        plugin,
        bot,
        other("改一下"),
        "memory_update",
        {"id": secret_id, "content": "暗号改成了开门芝麻", "tags": ["暗号"]},
    )

    assert result == texts.memory_not_found(secret_id)
    (kept,) = await stored(plugin, session_key_for(owner("")))
    assert (kept.content, kept.tags) == (SECRET, [])


@pairs
async def test_forget_with_another_scopes_id_is_not_found(plugin, owner, other) -> None:
    from nonebot_plugin_aimemory import texts
    from nonebot_plugin_aimemory.onebot.inbound import session_key_for

    bot = RecordingBot()
    secret_id = await remember_secret(plugin, bot, owner)

    result = await model_calls_one(plugin, bot, other("忘掉"), "memory_forget", {"id": secret_id})

    assert result == texts.memory_not_found(secret_id)
    assert [r.id for r in await stored(plugin, session_key_for(owner("")))] == [secret_id]


async def test_a_foreign_id_reads_exactly_like_an_unknown_one(plugin) -> None:
    bot = RecordingBot()
    owner, other = PAIRS["two groups"]
    secret_id = await remember_secret(plugin, bot, owner)
    unknown_id = "zzzz"  # the other group has no memories at all

    foreign = await model_calls_one(
        plugin, bot, other("改"), "memory_update", {"id": secret_id, "content": "新内容"}
    )
    unknown = await model_calls_one(
        plugin, bot, other("改"), "memory_update", {"id": unknown_id, "content": "新内容"}
    )

    assert foreign.replace(secret_id, "<id>") == unknown.replace(unknown_id, "<id>")


async def test_memory_list_command_shows_only_this_groups_entries(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    owner, _ = PAIRS["two groups"]
    await remember_secret(plugin, bot, owner)

    empty = await command(bot, group_message("~记忆 列表", group_id=202))
    own_id = saved_id(
        await model_calls_one(
            plugin,
            bot,
            group_message("记一下", group_id=202, to_me=True),
            "memory_save",
            {"content": "我们群周六一起打球"},
        )
    )
    listing = await command(bot, group_message("~记忆 列表", group_id=202))

    assert empty == texts.MEMORY_EMPTY
    told = told_today(plugin, "小明", 2001)
    assert listing.splitlines()[1:] == [f"#{own_id} 我们群周六一起打球{told}"]
    assert "芝麻开门" not in listing


async def test_memory_tools_offer_no_way_to_name_a_scope(plugin) -> None:
    # `about` picks the chat or the speaker of the message, never a scope or a person.
    bot = RecordingBot()

    await bot.receive(group_message("你好", group_id=204, to_me=True))

    tools = {
        spec["function"]["name"]: spec["function"]["parameters"]
        for spec in plugin.llm.chat_requests[-1]["tools"]
        if spec["function"]["name"].startswith("memory_")
    }
    assert {name: sorted(schema["properties"]) for name, schema in tools.items()} == {
        "memory_save": ["about", "content", "tags", "user_id"],
        "memory_search": ["limit", "offset", "query"],
        "memory_update": ["content", "id", "tags", "user_id"],
        "memory_forget": ["id"],
    }
