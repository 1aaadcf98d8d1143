"""A tool result that shows a person's memories in a group is part of that person's turn
only: the group's window keeps a note in its place, so the next member's requests, the
stored window and the compressor never see the personal text. A private chat keeps it."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import text, tool_calls
from tests.memory.helpers import model_calls_one
from tests.memory.personal_helpers import (
    BOB,
    CAKE,
    GROUP_A,
    GROUP_B,
    answer_briefly,
    bob_alone,
    bob_in,
    carol_in,
    requests_since,
    save_for_speaker,
    sent_text,
)

CHAT_MEMORY = "群里每周五晚上约饭"


def hits_note(count: int) -> str:
    from nonebot_plugin_aimemory.memory.tools import PERSONAL_HITS_KEPT

    return PERSONAL_HITS_KEPT.format(count=count)


def save_note() -> str:
    from nonebot_plugin_aimemory.memory.tools import PERSONAL_RESULT_KEPT

    return PERSONAL_RESULT_KEPT


def tool_messages(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_bobs_search_result_in_a_group_is_not_in_carols_request(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)

    shown_to_bob = await model_calls_one(
        plugin, bot, bob_in(GROUP_B, "我爱吃什么？"), "memory_search", {"query": "草莓蛋糕"}
    )
    start = len(plugin.llm.chat_requests)
    await bot.receive(carol_in(GROUP_B, "今天天气怎么样"))

    (carols,) = requests_since(plugin, start)
    assert CAKE in shown_to_bob
    assert CAKE not in sent_text([carols])
    assert f"(关于 {BOB})" not in sent_text([carols])
    # The call keeps its result message: the history stays valid for the API.
    assert hits_note(1) in tool_messages(carols)


async def test_a_result_mixing_chat_and_personal_memories_keeps_the_chats_lines(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    await model_calls_one(
        plugin, bot, bob_in(GROUP_B, "记一下约饭"), "memory_save", {"content": CHAT_MEMORY}
    )

    listed = await model_calls_one(
        plugin, bot, bob_in(GROUP_B, "都记了什么？"), "memory_search", {}
    )
    start = len(plugin.llm.chat_requests)
    await bot.receive(carol_in(GROUP_B, "在吗"))

    (carols,) = requests_since(plugin, start)
    kept = tool_messages(carols)[-1]
    assert CAKE in listed
    assert CHAT_MEMORY in listed
    assert CHAT_MEMORY in kept
    assert hits_note(1) in kept
    assert CAKE not in sent_text([carols])


async def test_a_later_round_of_the_same_turn_still_reads_the_result(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    plugin.llm.script(
        tool_calls(("memory_search", {"query": "草莓蛋糕"})),
        tool_calls(("memory_search", {"query": "约饭"})),
        text("你爱草莓蛋糕"),
    )
    start = len(plugin.llm.chat_requests)

    await bot.receive(bob_in(GROUP_B, "我爱吃什么？"))

    _, second, third = requests_since(plugin, start)
    assert CAKE in tool_messages(second)[-1]
    assert CAKE in tool_messages(third)[0]


async def test_the_stored_window_and_the_compressor_never_see_it(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    await model_calls_one(
        plugin, bot, bob_in(GROUP_B, "我爱吃什么？"), "memory_search", {"query": "草莓蛋糕"}
    )
    key = f"g:{GROUP_B}"

    stored = await plugin.runtime.history.load(key)
    session = plugin.runtime.sessions.get_or_create(key)
    async with session.lock:
        await session.ensure_loaded()
        start = len(plugin.llm.chat_requests)
        await session.bot.compact(reason="test")

    assert CAKE not in sent_text([m.to_api() for m in stored])
    assert any(hits_note(1) == m.text for m in stored)
    assert CAKE not in sent_text(requests_since(plugin, start))


async def test_a_personal_save_in_a_group_is_kept_as_a_note(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    saved_id = await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    start = len(plugin.llm.chat_requests)

    await bot.receive(carol_in(GROUP_A, "在吗"))

    # The call's arguments stay (they are what was said here); what the store answered,
    # which may list Bob's similar memories from elsewhere, does not.
    (carols,) = requests_since(plugin, start)
    assert save_note() in tool_messages(carols)
    assert f"#{saved_id}" not in sent_text([carols])


async def test_a_private_chat_keeps_the_result(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    await model_calls_one(
        plugin, bot, bob_alone("我爱吃什么？"), "memory_search", {"query": "草莓蛋糕"}
    )
    start = len(plugin.llm.chat_requests)

    await bot.receive(bob_alone("谢谢"))

    (next_request,) = requests_since(plugin, start)
    assert any(CAKE in content for content in tool_messages(next_request))
