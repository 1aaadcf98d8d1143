"""A thinking model (DeepSeek, Kimi, Qwen3, GLM) behind the plugin: the reasoning of a tool
exchange goes back to it in every later request, across restarts and evictions, and never
reaches QQ or the chat log. The fake server answers DeepSeek's 400 when it is missing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import private_message
from tests.fakes.openai_server import text, tool_calls

USER_ID = 321
KEY = f"f:{USER_ID}"
THOUGHT = "【思考 "  # how the thinking-model fake starts the reasoning it invents


@pytest.fixture
def thinking(plugin):
    """The plugin talking to a thinking model."""
    plugin.llm.thinking_model = True
    return plugin


async def tool_turn(plugin, bot: RecordingBot) -> None:
    """The model searches the memories before answering."""
    plugin.llm.script(tool_calls(("memory_search", {"query": "猫"})), text("没查到你养猫的记录"))
    await bot.receive(private_message("我养猫了吗？", user_id=USER_ID))


def tool_exchange_reasoning(messages: list[dict[str, Any]]) -> list[str | None]:
    """The reasoning sent with the first exchange's assistant messages (call, answer)."""
    replies = [m for m in messages if m["role"] == "assistant"][:2]
    return [m.get("reasoning_content") for m in replies]


async def stored_bodies(plugin) -> list[dict[str, Any]]:
    rows = await plugin.runtime.database.read(
        "SELECT body FROM messages WHERE session_key = ? ORDER BY seq", (KEY,)
    )
    return [json.loads(body) for (body,) in rows]


async def test_a_tool_exchange_keeps_its_reasoning_through_a_restart(thinking) -> None:
    bot = RecordingBot()
    await tool_turn(thinking, bot)
    await bot.receive(private_message("好吧", user_id=USER_ID))

    await thinking.restart()
    await bot.receive(private_message("那我养狗了吗？", user_id=USER_ID))

    assert bot.sent_texts[0] == "没查到你养猫的记录"
    assert [s.startswith("ECHO: ") for s in bot.sent_texts[1:]] == [True, True]
    reasoning = tool_exchange_reasoning(thinking.llm.last_messages())
    assert all(r and r.startswith(THOUGHT) for r in reasoning)


async def test_a_tool_exchange_keeps_its_reasoning_after_eviction(thinking) -> None:
    bot = RecordingBot()
    await tool_turn(thinking, bot)
    sessions = thinking.runtime.sessions
    sessions.max_idle_seconds = 0.001
    await asyncio.sleep(0.01)
    assert await sessions.evict_idle_sessions() >= 1

    await bot.receive(private_message("好吧", user_id=USER_ID))

    assert bot.sent_texts[-1].startswith("ECHO: ")
    reasoning = tool_exchange_reasoning(thinking.llm.last_messages())
    assert all(r and r.startswith(THOUGHT) for r in reasoning)


async def test_an_exchange_without_tool_calls_is_stored_without_reasoning(thinking) -> None:
    bot = RecordingBot()

    await bot.receive(private_message("你好", user_id=USER_ID))

    assert [b["role"] for b in await stored_bodies(thinking)] == ["user", "assistant"]
    assert all("reasoning_content" not in b for b in await stored_bodies(thinking))


async def test_reasoning_is_never_sent_to_qq(thinking) -> None:
    bot = RecordingBot()

    await tool_turn(thinking, bot)
    await bot.receive(private_message("好吧", user_id=USER_ID))

    assert len(bot.sent_texts) == 2
    assert all(THOUGHT not in sent for sent in bot.sent_texts)


async def test_reasoning_is_never_written_to_the_chat_log(thinking) -> None:
    bot = RecordingBot()
    await tool_turn(thinking, bot)
    await bot.receive(private_message("好吧", user_id=USER_ID))

    await thinking.runtime.chat_log.flush()

    rows = await thinking.runtime.chat_log.writer.store.recent(KEY, 100)
    assert [r.role for r in rows] == ["user", "assistant", "user", "assistant"]
    assert all(THOUGHT not in r.text for r in rows)


async def test_a_tool_exchange_stored_without_reasoning_is_filled_in_and_answered(plugin) -> None:
    # Given a history written before reasoning was kept: a tool exchange without it.
    bot = RecordingBot()
    await tool_turn(plugin, bot)
    before = await stored_bodies(plugin)
    assert not any("reasoning_content" in body for body in before)

    # When the provider turns out to be a thinking model (DeepSeek V4 by default).
    plugin.llm.thinking_model = True
    await plugin.restart()
    await bot.receive(private_message("那我养狗了吗？", user_id=USER_ID))

    # Then the old exchange goes back with a placeholder, the message is answered, and the
    # stored window keeps the placeholder, so the next request needs no second try.
    assert bot.sent_texts[-1].startswith("ECHO: ")
    assert tool_exchange_reasoning(plugin.llm.last_messages()) == [" ", " "]
    stored = await stored_bodies(plugin)
    assert tool_exchange_reasoning(stored) == [" ", " "]
    refused = sum(r.status == 400 for r in plugin.llm.requests)
    assert refused == 1
    await bot.receive(private_message("好的", user_id=USER_ID))
    assert bot.sent_texts[-1].startswith("ECHO: ")
    assert sum(r.status == 400 for r in plugin.llm.requests) == refused
