"""A guest in someone else's bot: another plugin's command (`/status`, any text starting
with a COMMAND_START prefix other than ~对话 / ~记忆 / ~人设) is that plugin's. The bot
does not answer it, makes no model call for it and keeps it out of the conversation; its
own commands keep every prefix they accept. The test bot runs a `/status` plugin beside
ours (tests/plugins/status_fixture), which does not block, as nonebot-plugin-status."""

from __future__ import annotations

import nonebot
import pytest
from nonebot.adapters.onebot.v11 import Message, MessageSegment
from nonebug import App

from tests.conftest import ACCESS_TOKEN
from tests.fakes.bots import RecordingBot
from tests.fakes.events import SELF_ID, group_message, private_message
from tests.fakes.harness import PluginHarness
from tests.fakes.onebot_client import connect_onebot
from tests.fakes.openai_server import text


@pytest.fixture
def status_reply() -> str:
    """What the other plugin answers to `/status` (imported once NoneBot exists)."""
    from tests.plugins.status_fixture import STATUS_REPLY

    return STATUS_REPLY


def sent_to_the_model(plugin: PluginHarness) -> str:
    """Every message of every chat request, as one text."""
    return "\n".join(
        str(message.get("content"))
        for request in plugin.llm.chat_requests
        for message in request["messages"]
    )


async def test_a_private_status_command_gets_only_the_other_plugins_reply(
    plugin: PluginHarness, status_reply: str
) -> None:
    bot = RecordingBot()

    await bot.receive(private_message("/status"))

    assert bot.sent_texts == [status_reply]
    assert plugin.llm.chat_requests == []


async def test_another_plugins_command_is_not_added_to_the_private_conversation(
    plugin: PluginHarness, status_reply: str
) -> None:
    plugin.llm.script(text("你好呀"))
    bot = RecordingBot()

    await bot.receive(private_message("/status"))
    await bot.receive(private_message("你好"))

    assert bot.sent_texts == [status_reply, "你好呀"]
    assert len(plugin.llm.chat_requests) == 1
    assert "/status" not in sent_to_the_model(plugin)


async def test_at_bot_status_in_a_group_gets_only_the_other_plugins_reply(
    app: App, plugin: PluginHarness, status_reply: str
) -> None:
    plugin.llm.script(text("在的"))
    at_status = group_message(
        Message([MessageSegment.at(SELF_ID), MessageSegment.text(" /status")])
    )
    at_hello = group_message(Message([MessageSegment.at(SELF_ID), MessageSegment.text(" 在吗")]))

    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(at_status)
        theirs = await onebot.next_send()
        await onebot.assert_nothing_sent()
        await onebot.send_event(at_hello)
        ours = await onebot.next_send()

    assert theirs.params["message"] == [{"type": "text", "data": {"text": status_reply}}]
    assert ours.params["message"][-1] == {"type": "text", "data": {"text": "在的"}}
    assert len(plugin.llm.chat_requests) == 1
    assert "/status" not in sent_to_the_model(plugin)


@pytest.mark.parametrize("typed", ["/echo 你好", "~帮助", " /help"])
async def test_a_command_no_plugin_knows_is_still_not_answered(
    plugin: PluginHarness, typed: str
) -> None:
    bot = RecordingBot()

    await bot.receive(private_message(typed))
    await bot.receive(group_message(typed, to_me=True))

    assert bot.sent == []
    assert plugin.llm.chat_requests == []


@pytest.mark.parametrize("typed", ["~记忆 列表", "/记忆 列表", "～对话 状态", "~人设 当前"])
async def test_the_plugins_own_commands_work_with_every_prefix(
    plugin: PluginHarness, status_reply: str, typed: str
) -> None:
    bot = RecordingBot()

    await bot.receive(private_message(typed))
    await bot.receive(group_message(typed))

    assert len(bot.sent_texts) == 2
    assert status_reply not in bot.sent_texts
    assert plugin.llm.chat_requests == []


async def test_a_prefix_alone_or_mid_text_is_an_ordinary_message(plugin: PluginHarness) -> None:
    plugin.llm.script(text("一"), text("二"))
    bot = RecordingBot()

    await bot.receive(private_message("/ 斜杠开头的一句话"))
    await bot.receive(private_message("今天 /status 怎么样"))

    assert bot.sent_texts == ["一", "二"]


async def test_with_ignoring_switched_off_the_bot_answers_commands_too(
    plugin: PluginHarness, status_reply: str
) -> None:
    await plugin.restart(aimemory_ignore_other_commands=False)
    plugin.llm.script(text("我也在"))
    bot = RecordingBot()

    await bot.receive(private_message("/status"))

    assert bot.sent_texts == [status_reply, "我也在"]
    assert "/status" in sent_to_the_model(plugin)


async def test_with_an_empty_command_start_nothing_is_another_plugins_command(
    plugin: PluginHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nonebot.get_driver().config, "command_start", {""})
    plugin.llm.script(text("回声"))
    bot = RecordingBot()

    await bot.receive(private_message("/echo 你好"))

    assert bot.sent_texts == ["回声"]
