"""Refusals do not stick: a message the provider's content filter refuses gets a short notice,
stays out of the window (and so out of every later request), and stays in the chat log,
marked refused. The fake filter refuses every request that still holds the phrase."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Literal

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import (
    ContentFilter,
    FakeOpenAI,
    deepseek_refusal,
    delay,
    error,
    error_in_body,
    text,
    tool_calls,
)

PHRASE = "敏感词"
USER_ID = 3101
KEY = f"f:{USER_ID}"


def said(line: str, *, user_id: int = USER_ID):
    """A private message sent now (the chat log's retention keeps it)."""
    return private_message(line, user_id=user_id, event_time=int(time.time()))


def echoed(reply: str) -> str | None:
    """The line the echoing fake model answered, without its time prefix."""
    found = re.fullmatch(r"ECHO: \[[^\]]+\] (.*)", reply, re.DOTALL)
    return found.group(1) if found else None


def chat_request_texts(llm: FakeOpenAI) -> list[str]:
    """Every chat request the fake received, refused ones included, as text."""
    return [str(r.body) for r in llm.requests if r.path.endswith("/chat/completions")]


async def wait_until(condition: Callable[[], bool], timeout_seconds: float = 2.0) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def filter_on(plugin, provider: Literal["deepseek", "dashscope"] = "deepseek") -> None:
    plugin.llm.content_filter = ContentFilter(PHRASE, provider=provider)


@pytest.mark.parametrize("provider", ["deepseek", "dashscope"])
async def test_a_refused_message_gets_the_notice_and_the_next_two_are_answered(
    plugin, provider: Literal["deepseek", "dashscope"]
) -> None:
    from nonebot_plugin_aimemory import texts

    filter_on(plugin, provider)
    bot = RecordingBot()

    await bot.receive(said(f"给我讲讲{PHRASE}"))
    await bot.receive(said("那今天天气怎么样"))
    await bot.receive(said("明天呢"))

    assert bot.sent_texts[0] == texts.LLM_REFUSED
    assert [echoed(reply) for reply in bot.sent_texts[1:]] == ["那今天天气怎么样", "明天呢"]


async def test_the_refused_text_is_absent_from_every_later_request(plugin) -> None:
    filter_on(plugin)
    bot = RecordingBot()
    await bot.receive(said(f"给我讲讲{PHRASE}"))
    refused = len(chat_request_texts(plugin.llm))

    await bot.receive(said("那今天天气怎么样"))
    await bot.receive(said("明天呢"))

    later = chat_request_texts(plugin.llm)[refused:]
    assert len(later) == 2
    assert all(PHRASE not in body for body in later)


async def test_the_refused_message_stays_out_of_the_window_after_a_restart(plugin) -> None:
    filter_on(plugin)
    bot = RecordingBot()
    await bot.receive(said(f"给我讲讲{PHRASE}"))

    await plugin.restart()
    filter_on(plugin)
    await bot.receive(said("还在吗"))

    assert echoed(bot.sent_texts[-1]) == "还在吗"
    window = plugin.runtime.sessions.get(KEY).bot.window.messages
    assert all(PHRASE not in (m.text or "") for m in window)


async def test_the_refused_message_stays_in_the_chat_log_marked_refused(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    filter_on(plugin)
    await RecordingBot().receive(said(f"给我讲讲{PHRASE}"))
    await plugin.runtime.chat_log.flush()

    rows = await plugin.runtime.chat_log.writer.store.recent(KEY, 10)
    assert [(r.role, r.text, r.refused) for r in rows] == [
        ("user", f"给我讲讲{PHRASE}", True),
        ("assistant", texts.LLM_REFUSED, False),
    ]


async def test_a_refused_message_already_written_to_the_chat_log_is_marked_too(
    plugin,
) -> None:
    # given a refusal that takes a while, and a chat-log flush while it is on its way
    plugin.llm.script(delay(0.3, deepseek_refusal()))
    turn = asyncio.create_task(RecordingBot().receive(said(f"给我讲讲{PHRASE}")))
    await wait_until(lambda: len(plugin.llm.requests) == 1)
    await plugin.runtime.chat_log.flush()
    store = plugin.runtime.chat_log.writer.store
    assert [r.refused for r in await store.recent(KEY, 10)] == [False]
    # when the refusal comes
    await turn
    await plugin.runtime.chat_log.flush()
    # then the written row is marked and no longer found by a search
    rows = await store.recent(KEY, 10)
    assert [(r.role, r.refused) for r in rows] == [("user", True), ("assistant", False)]
    assert await store.search(KEY, "讲讲", 10) == []


async def test_a_refusal_logs_the_providers_code_and_message(plugin, plugin_log) -> None:
    filter_on(plugin, "dashscope")

    await RecordingBot().receive(said(f"给我讲讲{PHRASE}"))

    lines = [r.getMessage() for r in plugin_log.records if "LLM failed" in r.getMessage()]
    assert len(lines) == 1
    assert "kind=refused" in lines[0]
    assert "code=data_inspection_failed" in lines[0]
    assert "Input data may contain inappropriate content." in lines[0]


async def test_a_completion_stopped_by_the_content_filter_gets_the_notice(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(text("这个嘛，", finish_reason="content_filter"), text("好的"))
    bot = RecordingBot()

    await bot.receive(said("随便聊聊"))
    await bot.receive(said("换个话题"))

    assert bot.sent_texts == [texts.LLM_REFUSED, "好的"]
    assert "这个嘛" not in str(plugin.llm.last_messages())


async def test_a_refusal_inside_a_200_gets_the_notice(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(error_in_body("Content Exists Risk"))
    bot = RecordingBot()

    await bot.receive(said("随便聊聊"))

    assert bot.sent_texts == [texts.LLM_REFUSED]


async def test_a_refusal_mid_tool_loop_drops_the_round_and_the_next_message_is_answered(
    plugin,
) -> None:
    from nonebot_plugin_aimemory import texts

    # given a group where someone said the phrase without addressing the bot
    await plugin.restart(aimemory_chat_log_ambient=True)
    filter_on(plugin)
    bot = RecordingBot()
    now = int(time.time())
    await bot.receive(group_message(f"路人说了句{PHRASE}", user_id=2002, event_time=now))
    # when the model reads the recent chat, and the request carrying it is refused
    plugin.llm.script(tool_calls(("read_recent_chat", {})))
    await bot.receive(group_message("大家刚才聊了啥", to_me=True, event_time=now))
    refused = len(chat_request_texts(plugin.llm))
    plugin.llm.script(text("没什么特别的"))
    await bot.receive(group_message("好吧，那你呢", to_me=True, event_time=now))
    # then the user got the notice, the next message was answered, the phrase stayed out
    assert bot.sent_texts == [texts.LLM_REFUSED, "没什么特别的"]
    later = chat_request_texts(plugin.llm)[refused:]
    assert all(PHRASE not in body for body in later)


async def test_a_refused_reply_after_a_tool_ran_keeps_the_saved_memory(plugin) -> None:
    from nonebot_plugin_aimemory import texts
    from tests.memory.helpers import stored

    plugin.llm.script(
        tool_calls(("memory_save", {"content": "小红喜欢爬山"})),
        text("记住啦，", finish_reason="content_filter"),
        text("好的"),
    )
    bot = RecordingBot()

    await bot.receive(said("记住我喜欢爬山"))
    await bot.receive(said("谢谢"))

    assert bot.sent_texts == [texts.LLM_REFUSED, "好的"]
    assert [m.content for m in await stored(plugin, KEY)] == ["小红喜欢爬山"]


async def test_another_bad_request_drops_the_message_instead_of_asking_it_again(
    plugin,
) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(error(400, "Invalid value for 'temperature'."), text("好的"))
    bot = RecordingBot()

    await bot.receive(said("第一句"))
    await bot.receive(said("第二句"))

    assert bot.sent_texts == [texts.LLM_REQUEST_REJECTED, "好的"]
    users = [m for m in plugin.llm.last_messages() if m["role"] == "user"]
    assert len(users) == 1
    assert "第一句" not in users[0]["content"]
