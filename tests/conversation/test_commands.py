"""`~对话` commands and who may use them."""

from __future__ import annotations

import asyncio

from nonebot.adapters.onebot.v11 import Bot, Message, MessageSegment
from nonebug import App

from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import delay, text


async def test_status_shows_context_budget_and_message_count(app: App, plugin) -> None:
    plugin.llm.script(
        text("好", usage={"prompt_tokens": 640, "completion_tokens": 1, "total_tokens": 641})
    )
    bot = RecordingBot()
    await bot.receive(private_message("你好", user_id=21))
    event = private_message("~对话 状态", user_id=21)
    async with app.test_matcher() as ctx:
        nb_bot = ctx.create_bot(base=Bot, self_id="42")
        ctx.receive_event(nb_bot, event)
        ctx.should_call_send(
            event,
            Message(
                MessageSegment.text(
                    "上下文：640 / 128000 tokens（0.5%）\n消息数：2\n摘要：无\n压缩次数：0"
                )
            ),
            result={"message_id": 1},
        )


async def test_status_works_with_slash_and_fullwidth_tilde(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(private_message("/对话 状态", user_id=22))
    await bot.receive(private_message("～对话 状态", user_id=22))
    assert all(t.startswith("上下文：") for t in bot.sent_texts)
    assert len(bot.sent_texts) == 2
    assert plugin.llm.chat_requests == []


async def test_status_after_restart_estimates_the_loaded_window(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(private_message("你好", user_id=23))
    await plugin.restart()
    await bot.receive(private_message("~对话 状态", user_id=23))
    status = bot.sent_texts[-1]
    assert "消息数：2" in status
    assert not status.startswith("上下文：0 /")


async def test_superuser_status_shows_resident_sessions(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(group_message("~对话 状态", user_id=int(SUPERUSER_ID)))
    assert "常驻会话：" in bot.sent_texts[-1]
    await bot.receive(group_message("~对话 状态", user_id=2))
    assert "常驻会话" not in bot.sent_texts[-1]


async def test_member_cannot_clear_a_group_conversation(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=30))
    await bot.receive(group_message("~对话 清空", group_id=30, role="member"))
    assert bot.sent_texts[-1] == texts.PERMISSION_DENIED
    assert len(plugin.runtime.sessions.get("g:30").bot.window) == 2


async def test_group_admin_clears_the_group_conversation(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await bot.receive(group_message("记一下", to_me=True, group_id=31))
    await bot.receive(group_message("~对话 清空", group_id=31, role="admin"))
    assert bot.sent_texts[-1] == texts.CLEARED
    await plugin.restart()
    await bot.receive(group_message("还记得吗", to_me=True, group_id=31))
    contents = " ".join(str(m["content"]) for m in plugin.llm.last_messages())
    assert "记一下" not in contents


async def test_superuser_clears_a_group_conversation(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await bot.receive(group_message("~对话 清空", group_id=32, user_id=int(SUPERUSER_ID)))
    assert bot.sent_texts[-1] == texts.CLEARED


async def test_private_user_clears_their_own_conversation(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await bot.receive(private_message("记一下", user_id=24))
    await bot.receive(private_message("~对话 清空", user_id=24))
    assert bot.sent_texts[-1] == texts.CLEARED
    assert len(plugin.runtime.sessions.get("f:24").bot.window) == 0


async def test_stop_cancels_the_answer_in_progress(plugin) -> None:
    plugin.llm.script(delay(1.5, text("很慢的回答")))
    bot = RecordingBot()
    asking = asyncio.create_task(bot.receive(private_message("慢慢说", user_id=25)))
    for _ in range(50):
        await asyncio.sleep(0.02)
        if plugin.llm.requests:
            break
    await bot.receive(private_message("~对话 停止", user_id=25))
    await asyncio.wait_for(asking, 2)
    assert bot.sent_texts == ["已停止你的消息：正在回答的 1 条。"]
    rows = await plugin.runtime.database.read(
        "SELECT role FROM messages WHERE session_key = 'f:25' ORDER BY seq"
    )
    assert [r[0] for r in rows] == ["user"]
    plugin.llm.script(text("继续"))
    await bot.receive(private_message("还在吗", user_id=25))
    assert bot.sent_texts[-1] == "继续"


async def test_stop_with_nothing_running_says_so(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await bot.receive(private_message("~对话 停止", user_id=26))
    assert bot.sent_texts == [texts.NOTHING_TO_STOP]


async def test_wrong_argument_gets_the_usage_line(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await bot.receive(private_message("~对话 飞起来", user_id=27))
    await bot.receive(private_message("~对话", user_id=27))
    assert bot.sent_texts == [texts.DIALOG_USAGE, texts.DIALOG_USAGE]
    assert plugin.llm.chat_requests == []
