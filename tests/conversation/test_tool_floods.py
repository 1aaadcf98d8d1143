"""A model that floods one completion with tool calls, through the plugin: a group message
in, at most 16 memories saved, a valid next request, a reply out, and a window that is
still a valid history after a restart."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import text, tool_calls
from tests.fakes.responders import tool_calls_with_ids

GROUP = 3301
SESSION = f"g:{GROUP}"
FLOOD = 2000


def memory_saves(count: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` memory_save calls, each about a different member."""
    return [
        ("memory_save", {"content": f"群友{n}号（QQ {100000 + n}）的幸运数字是 {n * 7}"})
        for n in range(count)
    ]


async def saved_contents(plugin) -> list[str]:
    records = await plugin.runtime.memory.service.store.load_scope(SESSION)
    return sorted(r.content for r in records if not r.deleted)


async def stored_bodies(plugin) -> list[dict[str, Any]]:
    rows = await plugin.runtime.database.read(
        "SELECT body FROM messages WHERE session_key = ? ORDER BY seq", (SESSION,)
    )
    return [json.loads(body) for (body,) in rows]


def tool_round(messages: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The call ids of the one assistant message with tool calls, and the ids its tool
    messages answer."""
    (assistant,) = [m for m in messages if m.get("tool_calls")]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return [call["id"] for call in assistant["tool_calls"]], answered


async def test_a_flood_of_2000_memory_saves_saves_16_and_is_answered(plugin) -> None:
    # given a model that answers a mention with 2 000 memory_save calls, then a reply
    plugin.llm.script(tool_calls(*memory_saves(FLOOD)), text("记好了"))
    bot = RecordingBot()
    # when a member mentions the bot
    await bot.receive(group_message("把大家的幸运数字都记一下", to_me=True, group_id=GROUP))
    # then only the first 16 calls ran, and the member gets the model's reply
    assert await saved_contents(plugin) == sorted(
        arguments["content"] for _, arguments in memory_saves(16)
    )
    assert bot.sent_texts == ["记好了"]
    # and the request after the flood was accepted, every call in it answered exactly once
    assert len(plugin.llm.chat_requests) == 2
    calls, answered = tool_round(plugin.llm.last_messages())
    assert calls == answered
    assert len(calls) == 32


async def test_a_flooded_round_is_kept_and_the_next_request_after_a_restart_is_valid(
    plugin,
) -> None:
    # given a flood that was answered
    plugin.llm.script(tool_calls(*memory_saves(FLOOD)), text("记好了"))
    bot = RecordingBot()
    await bot.receive(group_message("把大家的幸运数字都记一下", to_me=True, group_id=GROUP))
    # when the bot restarts and is mentioned again
    await plugin.restart()
    plugin.llm.script(text("记了 16 个"))
    await bot.receive(group_message("刚才记了几个？", to_me=True, group_id=GROUP))
    # then the stored window holds the round with one result per call
    calls, answered = tool_round(await stored_bodies(plugin))
    assert calls == answered
    assert len(calls) == len(set(calls)) == 32
    # and the request after the restart carried that round and was accepted
    assert bot.sent_texts == ["记好了", "记了 16 个"]
    assert tool_round(plugin.llm.last_messages()) == (calls, answered)
    assert len(await saved_contents(plugin)) == 16


async def test_repeated_call_ids_save_each_memory_once_and_keep_the_round(plugin) -> None:
    # given a server that sends the same id for two different saves
    (first, first_args), (second, second_args) = memory_saves(2)
    plugin.llm.script(
        tool_calls_with_ids(("call_0", first, first_args), ("call_0", second, second_args)),
        text("两条都记了"),
    )
    bot = RecordingBot()
    # when a member mentions the bot
    await bot.receive(group_message("记一下这两个", to_me=True, group_id=GROUP))
    # then both memories are saved once, the reply arrives, and the round is in the window
    assert await saved_contents(plugin) == sorted([first_args["content"], second_args["content"]])
    assert bot.sent_texts == ["两条都记了"]
    assert tool_round(await stored_bodies(plugin)) == (
        ["call_0", "call_0_2"],
        ["call_0", "call_0_2"],
    )
