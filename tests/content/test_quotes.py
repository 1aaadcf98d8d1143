"""Quoted replies: the quoted message (fetched with `get_msg`, as nonebug skips the
adapter's own lookup) is shown to the model as a short quote before the user's text."""

from __future__ import annotations

from nonebot.adapters.onebot.v11 import MessageSegment

from tests.content.helpers import QQBot, content, user_line
from tests.fakes.events import SELF_ID, group_message, private_message

UNAVAILABLE = "[引用了一条无法获取的消息]"


def assert_quote_before_text(line: str, quote: str, user_text: str) -> None:
    assert quote in line, line
    assert line.index(quote) < line.index(user_text)


async def test_quoted_message_is_fetched_and_shown_before_the_users_text(plugin, qq: QQBot) -> None:
    qq.store_message(77, user_id=123, card="小明", said="原文")

    await qq.receive(
        group_message(content(MessageSegment.reply(77), "这个怎么样"), user_id=2002, to_me=True)
    )

    assert qq.lookups("get_msg") == [{"message_id": 77}]
    line = user_line(plugin.llm)
    assert line.endswith("[引用 小明(123)：原文]\n这个怎么样")
    assert_quote_before_text(line, "[引用 小明(123)：原文]", "这个怎么样")
    assert qq.sent_texts == ["好的"]


async def test_quote_in_a_private_chat_is_shown_too(plugin, qq: QQBot) -> None:
    qq.store_message(78, user_id=3001, card="", said="明天八点集合")

    await qq.receive(private_message(content(MessageSegment.reply(78), "几点来着")))

    assert_quote_before_text(user_line(plugin.llm), "：明天八点集合]", "几点来着")


async def test_unavailable_quoted_message_is_marked_and_the_chat_goes_on(plugin, qq: QQBot) -> None:
    await qq.receive(group_message(content(MessageSegment.reply(404), "你看这个"), to_me=True))

    assert qq.lookups("get_msg") == [{"message_id": 404}]
    assert_quote_before_text(user_line(plugin.llm), UNAVAILABLE, "你看这个")
    assert qq.sent_texts == ["好的"]


async def test_reply_to_the_bots_own_message_is_quoted_as_the_bot(plugin, qq: QQBot) -> None:
    qq.store_message(55, user_id=SELF_ID, card="", said="我之前的回答")

    await qq.receive(group_message(content(MessageSegment.reply(55), "为什么"), to_me=True))

    assert_quote_before_text(user_line(plugin.llm), "[引用 机器人：我之前的回答]", "为什么")


async def test_reply_segment_with_a_malformed_id_is_marked_and_the_chat_goes_on(
    plugin, qq: QQBot
) -> None:
    malformed = MessageSegment("reply", {"id": "not-a-number"})

    await qq.receive(group_message(content(malformed, "这个呢"), to_me=True))

    assert qq.sent_texts == ["好的"]
    assert_quote_before_text(user_line(plugin.llm), UNAVAILABLE, "这个呢")
