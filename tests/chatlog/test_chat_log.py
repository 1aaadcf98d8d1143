"""The objective chat log: what is written, when, and what never rewrites it."""

from __future__ import annotations

import re

from nonebot.adapters.onebot.v11 import MessageSegment

from tests.chatlog.helpers import GROUP, eventually, logged, said, said_privately, talk
from tests.fakes.bots import RecordingBot
from tests.fakes.responders import FactKeepingLLM


async def test_an_answered_group_message_is_logged_with_its_speaker_and_without_the_time_prefix(
    plugin, reviewer
) -> None:
    bot = RecordingBot()

    await bot.receive(said("周五晚上聚餐吗", to_me=True, user_id=2001, card="小明"))
    await plugin.runtime.chat_log.flush()

    user_row = (await logged(plugin))[0]
    assert (user_row.role, user_row.speaker_id, user_row.speaker_name) == ("user", "2001", "小明")
    assert user_row.text == "周五晚上聚餐吗"


async def test_the_bot_reply_is_logged_after_the_message_it_answers(plugin, reviewer) -> None:
    bot = RecordingBot()

    await talk(plugin, bot, "周五晚上聚餐吗")

    rows = await logged(plugin)
    assert [(r.role, r.text) for r in rows] == [("user", "周五晚上聚餐吗"), ("assistant", "好的")]


async def test_an_image_is_logged_as_its_marker(plugin, reviewer) -> None:
    bot = RecordingBot()
    image = MessageSegment.image("https://multimedia.nt.qq.com.cn/download?x=1")

    await bot.receive(said(MessageSegment.text("看看这个") + image, to_me=True))
    await plugin.runtime.chat_log.flush()

    user_row = (await logged(plugin))[0]
    assert re.fullmatch(r"看看这个\[图片 [0-9a-f]{8}\]", user_row.text), user_row.text


async def test_a_private_conversation_is_logged_in_its_own_session(plugin, reviewer) -> None:
    bot = RecordingBot()

    await bot.receive(said_privately("我下周搬家", user_id=3001, nickname="小红"))
    await plugin.runtime.chat_log.flush()

    rows = await logged(plugin, "f:3001")
    assert [(r.speaker_name, r.text) for r in rows] == [("小红", "我下周搬家"), (None, "好的")]
    assert await logged(plugin, GROUP) == []


async def test_unaddressed_group_messages_are_not_logged_by_default(plugin, reviewer) -> None:
    bot = RecordingBot()

    await bot.receive(said("大家晚上好"))
    await plugin.runtime.chat_log.flush()

    assert await logged(plugin) == []


async def test_with_ambient_logging_unaddressed_messages_are_buffered_until_a_flush(
    plugin, reviewer
) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True, aimemory_chat_log_flush_seconds=60)
    bot = RecordingBot()

    await bot.receive(said("大家晚上好", user_id=2002, card="阿强"))
    await bot.receive(said("明天谁去打球"))
    before_flush = await logged(plugin)
    await plugin.runtime.chat_log.flush()

    assert before_flush == []
    rows = await logged(plugin)
    assert [(r.speaker_name, r.text, r.addressed) for r in rows] == [
        ("阿强", "大家晚上好", False),
        ("小明", "明天谁去打球", False),
    ]
    assert bot.sent == []


async def test_with_ambient_logging_the_flush_interval_writes_the_buffer(plugin, reviewer) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True, aimemory_chat_log_flush_seconds=0.1)
    bot = RecordingBot()

    await bot.receive(said("大家晚上好"))

    async def written() -> bool:
        return [r.text for r in await logged(plugin)] == ["大家晚上好"]

    await eventually(written)


async def test_clearing_the_conversation_leaves_the_chat_log_alone(plugin, reviewer) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await talk(plugin, bot, "我的生日是三月五号")

    await bot.receive(said("~对话 清空", role="admin"))
    await plugin.runtime.chat_log.flush()

    assert bot.sent_texts[-1] == texts.CLEARED
    assert [r.text for r in await logged(plugin)] == ["我的生日是三月五号", "好的"]


async def test_compression_leaves_the_chat_log_alone(plugin) -> None:
    model = FactKeepingLLM()
    plugin.llm.responder = model
    await plugin.restart(aimemory_max_context_tokens=2000, aimemory_memory_extract_on_compact=False)
    bot = RecordingBot()
    line = "周末去爬山还是去看电影？大家投票决定一下吧，我觉得爬山更好一些。"
    sent: list[str] = []

    while not model.compression_calls:
        assert len(sent) < 60, "never compressed"
        sent.append(f"第{len(sent)}条：{line}")
        await bot.receive(said(sent[-1], to_me=True))
    await plugin.runtime.chat_log.flush()

    rows = await plugin.runtime.chat_log.writer.store.recent(GROUP, 200)
    assert [r.text for r in rows if r.role == "user"] == sent
    assert plugin.runtime.sessions.get(GROUP).bot.stats.count == 1


async def test_logged_rows_survive_a_restart_because_shutdown_flushes(plugin, reviewer) -> None:
    await plugin.restart(aimemory_chat_log_flush_seconds=60)
    bot = RecordingBot()
    await bot.receive(said("周五晚上聚餐吗", to_me=True))
    assert await logged(plugin) == []

    await plugin.restart()

    assert [r.text for r in await logged(plugin)] == ["周五晚上聚餐吗", "好的"]
