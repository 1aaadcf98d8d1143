"""Bursts: one speaker's quick messages are answered together, speakers take turns, a
flood is capped with one notice, a manager's `~对话 停止` drops what is queued."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import delay, held, text

FLOOD_NOTICE = "消息太多啦，我先回答前面的。"


def user_contents(plugin) -> list[str]:
    """The newest user message of each accepted chat request, in order."""
    return [
        next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        for body in plugin.llm.chat_requests
    ]


async def wait_until(condition: Callable[[], bool], timeout_seconds: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


# How long the first turn's model call takes while the burst is sent: receiving fifteen
# messages took longer than 0.3 s on a loaded 2-core machine (the first turn then ended
# before the burst was in, and it was answered in three calls instead of two).
BURST_WINDOW_SECONDS = 1.5


async def while_first_turn_runs(
    plugin, bot: RecordingBot, first, *others, gate: threading.Event | None = None
) -> None:
    """Send `first`, wait until its model call is in flight, then send `others` in quick
    succession, in order (`RecordingBot.receive_all`); then open `gate`, if the first call
    is held by one, and wait for the first turn."""
    scripted = plugin.llm.pending
    started = asyncio.create_task(bot.receive(first))
    await wait_until(lambda: plugin.llm.pending < scripted)
    await bot.receive_all(*others)
    if gate is not None:
        gate.set()
    await started


async def logged_texts(plugin, key: str) -> list[str]:
    await plugin.runtime.chat_log.writer.flush()
    rows = await plugin.runtime.chat_log.writer.store.recent(key, 100)
    return [row.text for row in rows if row.role == "user"]


async def test_messages_sent_during_a_turn_are_answered_together(plugin) -> None:
    plugin.llm.script(delay(BURST_WINDOW_SECONDS, text("答一")), text("答二"))
    bot = RecordingBot()
    await while_first_turn_runs(
        plugin,
        bot,
        private_message("问一", user_id=9),
        private_message("我想问", user_id=9),
        private_message("明天下雨吗", user_id=9),
    )
    assert bot.sent_texts == ["答一", "答二"]
    assert len(plugin.llm.chat_requests) == 2
    assert user_contents(plugin)[1].endswith("] 我想问\n明天下雨吗")
    assert await logged_texts(plugin, "f:9") == ["问一", "我想问", "明天下雨吗"]


async def test_the_merged_answer_replies_to_the_newest_message(plugin) -> None:
    plugin.llm.script(delay(BURST_WINDOW_SECONDS, text("答一")), text("答二"))
    bot = RecordingBot()
    first = group_message("在吗", user_id=5, to_me=True)
    second = group_message("帮我查下", user_id=5, to_me=True)
    third = group_message("明天的天气", user_id=5, to_me=True)
    await while_first_turn_runs(plugin, bot, first, second, third)
    assert bot.sent_texts == ["答一", "答二"]
    reply_to = bot.sent[-1].data["message"][0]
    assert reply_to.type == "reply"
    assert str(reply_to.data["id"]) == str(third.message_id)


async def test_a_flood_is_answered_up_to_ten_messages_with_one_notice(plugin) -> None:
    plugin.llm.script(delay(BURST_WINDOW_SECONDS, text("答一")), text("答二"))
    bot = RecordingBot()
    flood = [private_message(f"第{i}条", user_id=9) for i in range(1, 16)]
    await while_first_turn_runs(plugin, bot, private_message("开始", user_id=9), *flood)
    assert len(plugin.llm.chat_requests) == 2
    merged = user_contents(plugin)[1]
    assert "第1条" in merged
    assert "第10条" in merged
    assert "第11条" not in merged
    assert bot.sent_texts.count(FLOOD_NOTICE) == 1
    assert sorted(bot.sent_texts) == sorted(["答一", "答二", FLOOD_NOTICE])
    # What the turn could not take is logged, not lost.
    assert len(await logged_texts(plugin, "f:9")) == 16


async def test_a_burst_takes_at_most_4000_characters(plugin) -> None:
    plugin.llm.script(delay(BURST_WINDOW_SECONDS, text("答一")), text("答二"))
    bot = RecordingBot()
    long_parts = [private_message(letter * 1500, user_id=9) for letter in "abc"]
    await while_first_turn_runs(plugin, bot, private_message("开始", user_id=9), *long_parts)
    merged = user_contents(plugin)[1]
    assert "a" * 1500 in merged
    assert "b" * 1500 in merged
    assert "c" * 1500 not in merged
    assert FLOOD_NOTICE in bot.sent_texts


async def test_speakers_take_turns_while_one_of_them_floods(plugin) -> None:
    plugin.llm.script(
        delay(0.3, text("答一")), delay(0.3, text("答二")), text("答三"), text("答四")
    )
    bot = RecordingBot()
    flooder, other = 5, 6
    scripted = plugin.llm.pending
    await while_first_turn_runs(
        plugin,
        bot,
        group_message("一", user_id=flooder, to_me=True),
        group_message("二", user_id=flooder, to_me=True),
        group_message("我也问一下", user_id=other, to_me=True),
    )
    assert scripted - plugin.llm.pending == 3
    users = user_contents(plugin)
    assert users[1].endswith("：二")
    assert users[2].endswith("：我也问一下")


async def test_another_speaker_waits_behind_at_most_one_turn_of_the_flooder(plugin) -> None:
    plugin.llm.script(
        delay(0.3, text("答一")), delay(0.3, text("答二")), text("答三"), text("答四")
    )
    bot = RecordingBot()
    flooder, other = 5, 6
    first = asyncio.create_task(bot.receive(group_message("一", user_id=flooder, to_me=True)))
    await wait_until(lambda: plugin.llm.pending == 3)
    second_and_third = asyncio.create_task(
        bot.receive_all(
            group_message("二", user_id=flooder, to_me=True),
            group_message("我也问一下", user_id=other, to_me=True),
        )
    )
    await wait_until(lambda: plugin.llm.pending == 2)  # the flooder's second turn runs
    fourth = asyncio.create_task(bot.receive(group_message("三", user_id=flooder, to_me=True)))
    await asyncio.gather(first, second_and_third, fourth)
    users = user_contents(plugin)
    assert [u.rsplit("：", 1)[-1] for u in users] == ["一", "二", "我也问一下", "三"]


async def test_a_managers_stop_drops_the_queued_messages_too(plugin) -> None:
    plugin.llm.script(delay(5, text("慢")), text("不该有"), text("之后的回答"))
    bot = RecordingBot()
    first = asyncio.create_task(bot.receive(group_message("一", user_id=5, to_me=True)))
    await wait_until(lambda: plugin.llm.pending == 2)
    queued = [
        asyncio.create_task(
            bot.receive_all(
                group_message("二", user_id=5, to_me=True),
                group_message("插一句", user_id=6, to_me=True),
            )
        )
    ]
    await wait_until(lambda: len(plugin.runtime.conversation.bursts) == 2)  # both queued
    await bot.receive(group_message("~对话 停止", user_id=7, role="admin"))
    await asyncio.wait_for(asyncio.gather(first, *queued), 2)
    assert bot.sent_texts == ["已停止所有人的消息：正在回答的 1 条，排队中的 2 条。"]
    assert plugin.llm.pending == 2  # neither queued message reached the model
    assert await logged_texts(plugin, "g:111") == ["一", "二", "插一句"]
    plugin.llm.reset()
    plugin.llm.script(text("之后的回答"))
    await bot.receive(group_message("还在吗", user_id=5, to_me=True))
    assert bot.sent_texts[-1] == "之后的回答"


async def test_forty_mentions_in_a_burst_cost_two_model_calls_and_others_still_get_answered(
    plugin,
) -> None:
    # The first call is held until all 41 messages are in: on a busy machine, receiving
    # them can take longer than any fixed delay.
    gate = threading.Event()
    plugin.llm.script(held(gate, text("答一")), text("答二"), text("答别人"))
    bot = RecordingBot()
    burst = [group_message(f"刷屏{i}", user_id=5, to_me=True) for i in range(40)]
    other = group_message("轮到我了吗", user_id=6, to_me=True)
    await while_first_turn_runs(
        plugin, bot, group_message("开始", user_id=5, to_me=True), *burst, other, gate=gate
    )
    assert len(plugin.llm.chat_requests) == 3
    assert user_contents(plugin)[2].endswith("：轮到我了吗")
    assert bot.sent_texts.count(FLOOD_NOTICE) == 1
    assert "答别人" in bot.sent_texts
