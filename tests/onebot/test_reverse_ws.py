"""The bot driven as a real OneBot implementation drives it: events over the reverse
WebSocket, so the adapter's own @ / reply / nickname detection runs before our matcher
(nonebug's `receive_event` skips it)."""

from __future__ import annotations

from typing import Any

import nonebot
import pytest
from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message, MessageSegment
from nonebug import App

from tests.conftest import ACCESS_TOKEN
from tests.fakes.events import SELF_ID, group_message, private_message
from tests.fakes.harness import PluginHarness
from tests.fakes.onebot_client import (
    ApiCall,
    connect_onebot,
    handshake_answer,
    ws_headers,
)
from tests.fakes.openai_server import last_user_text, text

OTHER_USER_ID = 2999


def segments(*parts: MessageSegment) -> Message:
    return Message(list(parts))


def assert_quoted_group_reply(call: ApiCall, event: GroupMessageEvent, reply: str) -> None:
    assert call.action == "send_msg"
    assert call.params["message_type"] == "group"
    assert call.params["group_id"] == event.group_id
    assert call.params["message"] == [
        {"type": "reply", "data": {"id": str(event.message_id)}},
        {"type": "text", "data": {"text": reply}},
    ]


def last_user_line(plugin: PluginHarness) -> str:
    return last_user_text(plugin.llm.last_messages())


async def test_group_at_bot_at_start_is_answered_and_the_at_is_not_shown_to_the_llm(
    app: App, plugin: PluginHarness
) -> None:
    plugin.llm.script(text("在的"))
    event = group_message(segments(MessageSegment.at(SELF_ID), MessageSegment.text(" 在吗")))
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        call = await onebot.next_send()

    assert_quoted_group_reply(call, event, "在的")
    line = last_user_line(plugin)
    assert line.endswith("小明(2001)：在吗")
    assert "@" not in line
    assert "[at]" not in line


async def test_group_at_bot_in_the_middle_is_answered(app: App, plugin: PluginHarness) -> None:
    plugin.llm.script(text("明天晴"))
    event = group_message(
        segments(
            MessageSegment.text("请问 "),
            MessageSegment.at(SELF_ID),
            MessageSegment.text(" 明天天气如何"),
        )
    )
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        call = await onebot.next_send()

    assert_quoted_group_reply(call, event, "明天晴")
    line = last_user_line(plugin)
    assert "请问" in line
    assert line.endswith("明天天气如何")
    assert "@" not in line


async def test_group_at_bot_at_the_end_is_answered(app: App, plugin: PluginHarness) -> None:
    plugin.llm.script(text("在的"))
    event = group_message(segments(MessageSegment.text("在吗 "), MessageSegment.at(SELF_ID)))
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        call = await onebot.next_send()

    assert_quoted_group_reply(call, event, "在的")
    # The adapter removes the trailing @ but keeps the space before it.
    assert last_user_line(plugin).rstrip().endswith("小明(2001)：在吗")


async def test_group_reply_to_a_bot_message_is_answered(app: App, plugin: PluginHarness) -> None:
    plugin.llm.script(text("之前的消息"), text("就是字面意思"))
    bot_message_id = 9000  # the fake implementation's id for the bot's first send
    event = group_message(
        segments(MessageSegment.reply(bot_message_id), MessageSegment.text("这是什么意思"))
    )
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        # The bot said something in this group first: only that can be quoted here.
        await onebot.send_event(group_message("小忆，说点什么"))
        await onebot.next_send()
        await onebot.send_event(event)
        call = await onebot.next_send()

    assert ApiCall("get_msg", {"message_id": bot_message_id}) in onebot.calls
    assert_quoted_group_reply(call, event, "就是字面意思")
    # The quoted message is shown to the model before the user's text.
    assert last_user_line(plugin).endswith("：[引用 机器人：之前的消息]\n这是什么意思")


async def test_group_message_starting_with_the_nickname_is_answered(
    app: App, plugin: PluginHarness
) -> None:
    plugin.llm.script(text("晴天"))
    event = group_message("小忆，今天天气怎么样")
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        call = await onebot.next_send()

    assert_quoted_group_reply(call, event, "晴天")
    assert last_user_line(plugin).endswith("今天天气怎么样")


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(Message(MessageSegment.text("大家好")), id="plain-text"),
        pytest.param(
            segments(MessageSegment.at(OTHER_USER_ID), MessageSegment.text(" 你好")),
            id="at-someone-else",
        ),
        pytest.param(
            segments(MessageSegment.reply(777), MessageSegment.text("同意")),
            id="reply-to-someone-else",
        ),
    ],
)
async def test_unaddressed_group_message_is_ignored(
    app: App, plugin: PluginHarness, content: Message
) -> None:
    event = group_message(content)
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        onebot.quoted_senders[777] = OTHER_USER_ID
        await onebot.send_event(event)
        await onebot.assert_nothing_sent(wait_seconds=0.5)

    assert plugin.llm.chat_requests == []


async def test_private_message_is_answered_privately(app: App, plugin: PluginHarness) -> None:
    plugin.llm.script(text("你好呀"))
    event = private_message("你好")
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        call = await onebot.next_send()

    assert call.action == "send_msg"
    assert call.params["message_type"] == "private"
    assert call.params["user_id"] == event.user_id
    assert call.params["message"] == [{"type": "text", "data": {"text": "你好呀"}}]
    assert last_user_line(plugin).endswith("你好")


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["no-token", "wrong-token"])
async def test_connection_without_the_access_token_is_refused(app: App, token: str | None) -> None:
    answer: dict[str, Any] = await handshake_answer(app, ws_headers(access_token=token))

    assert answer["type"] == "websocket.close"
    assert str(SELF_ID) not in nonebot.get_bots()


async def test_cq_code_typed_by_a_user_reaches_the_llm_as_literal_text(
    app: App, plugin: PluginHarness
) -> None:
    plugin.llm.script(text("好的"))
    event = group_message(
        segments(MessageSegment.at(SELF_ID), MessageSegment.text(" [CQ:at,qq=all] 开会了"))
    )
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        await onebot.next_send()

    line = last_user_line(plugin)
    assert line.endswith("：[CQ:at,qq=all] 开会了")
    assert "@全体成员" not in line


async def test_cq_code_in_the_llm_reply_is_sent_as_a_text_segment(
    app: App, plugin: PluginHarness
) -> None:
    plugin.llm.script(text("[CQ:at,qq=all] 大家来开会"))
    event = group_message(segments(MessageSegment.at(SELF_ID), MessageSegment.text(" 通知一下")))
    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        call = await onebot.next_send()

    assert_quoted_group_reply(call, event, "[CQ:at,qq=all] 大家来开会")
    assert all(segment["type"] != "at" for segment in call.params["message"])
