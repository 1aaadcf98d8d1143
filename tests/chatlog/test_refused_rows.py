"""A message the provider's content filter refused stays in the chat log, marked refused, and
is never sent to a model again: the reviewer skips it, the chat-log tools leave it out. The
fake filter refuses every request that still holds the phrase."""

from __future__ import annotations

import pytest

from tests.chatlog.helpers import GROUP, command, logged, model_calls, ops, talk
from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import ContentFilter

PHRASE = "敏感词"


@pytest.fixture
def content_filter(plugin) -> ContentFilter:
    plugin.llm.content_filter = ContentFilter(PHRASE, provider="dashscope")
    return plugin.llm.content_filter


async def test_the_reviewer_skips_a_refused_message(plugin, reviewer, content_filter) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await talk(plugin, bot, "我周末要去爬山", f"顺便聊聊{PHRASE}")
    reviewer.answer(ops({"op": "create", "content": "小明(2001)周末要去爬山"}))

    reply = await command(bot, "~记忆 立即生成")

    assert reply != texts.REVIEW_FAILED
    assert "我周末要去爬山" in reviewer.shown
    assert PHRASE not in reviewer.shown


async def test_a_review_after_a_refusal_moves_past_the_refused_message(
    plugin, reviewer, content_filter
) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await talk(plugin, bot, f"聊聊{PHRASE}")
    last_row = max(row.id for row in await logged(plugin))

    reply = await command(bot, "~记忆 立即生成")

    assert reply != texts.REVIEW_FAILED
    review = await plugin.runtime.chat_log.reviews.store.get(GROUP)
    assert review.last_reviewed_row >= last_row


async def test_read_recent_chat_leaves_a_refused_message_out(
    plugin, reviewer, content_filter
) -> None:
    bot = RecordingBot()
    await talk(plugin, bot, "我周末要去爬山", f"顺便聊聊{PHRASE}")

    result = await model_calls(plugin, bot, "read_recent_chat", {})

    assert "我周末要去爬山" in result
    assert PHRASE not in result


async def test_search_current_chat_does_not_find_a_refused_message(
    plugin, reviewer, content_filter
) -> None:
    bot = RecordingBot()
    await talk(plugin, bot, f"顺便聊聊{PHRASE}")

    result = await model_calls(plugin, bot, "search_current_chat", {"keyword": "顺便聊聊"})

    assert PHRASE not in result
    assert result.startswith("没有找到")
