"""Forwarded chat records are read within bounds: a few `get_forward_msg` calls per
message and a few seconds in all, nested records included. A record not read becomes a
short marker, and the answer comes in time however many records hang."""

from __future__ import annotations

import math
import time
from typing import Any

from nonebot.adapters.onebot.v11 import MessageSegment

from tests.fakes.events import group_message
from tests.fakes.qq import QQBot, content, user_line

GROUP = 111
# Well under what twenty fetches one by one would take (20 x a 5 s timeout).
ANSWER_BOUND_SECONDS = 10.0
UNREAD = "[合并转发：未能读取]"


def addressed(*segments: MessageSegment | str):
    return group_message(content("看看 ", *segments), group_id=GROUP, to_me=True)


def node(nickname: str, said: str) -> dict[str, Any]:
    """A forwarded message as NapCat reports it: a whole message event."""
    return {
        "message_id": 1,
        "message_type": "group",
        "sender": {"user_id": 1, "nickname": nickname, "card": ""},
        "message": [{"type": "text", "data": {"text": said}}],
    }


def forwarding(nickname: str, record_id: str) -> dict[str, Any]:
    """A forwarded message that is itself a forwarded record."""
    said = [{"type": "forward", "data": {"id": record_id}}]
    return {**node(nickname, ""), "message": said}


async def receive_timed(qq: QQBot, *segments: MessageSegment | str) -> float:
    """Seconds from the message's arrival to the end of its handling (the answer sent)."""
    started = time.monotonic()
    await qq.receive(addressed(*segments))
    return time.monotonic() - started


async def test_record_of_twenty_unreachable_records_is_answered_within_seconds(
    plugin, qq: QQBot
) -> None:
    from nonebot_plugin_aimemory.onebot.forwards import MAX_FORWARD_FETCHES_PER_MESSAGE

    qq.forwards["outer"] = [forwarding(f"人{i}", f"inner{i}") for i in range(20)]
    qq.forward_delays.update({f"inner{i}": math.inf for i in range(20)})

    elapsed = await receive_timed(qq, MessageSegment.forward("outer"))

    assert elapsed < ANSWER_BOUND_SECONDS
    assert qq.sent_texts == ["好的"]
    assert len(qq.lookups("get_forward_msg")) <= MAX_FORWARD_FETCHES_PER_MESSAGE
    line = user_line(plugin.llm)
    # The twentieth line fills the record's line cap: with no room for its lines, its
    # record shows as the plain marker, as it always has.
    assert all(f"人{i}：{UNREAD}" in line for i in range(19)), line
    assert "人19：[合并转发的聊天记录]" in line
    assert line.count(UNREAD) == 19


async def test_message_of_twenty_unreachable_records_is_answered_within_seconds(
    plugin, qq: QQBot
) -> None:
    from nonebot_plugin_aimemory.onebot.forwards import MAX_FORWARD_FETCHES_PER_MESSAGE

    qq.forward_delays.update({f"fw{i}": math.inf for i in range(20)})
    records = [MessageSegment.forward(f"fw{i}") for i in range(20)]

    elapsed = await receive_timed(qq, *records, "这些是什么")

    assert elapsed < ANSWER_BOUND_SECONDS
    assert qq.sent_texts == ["好的"]
    assert len(qq.lookups("get_forward_msg")) <= MAX_FORWARD_FETCHES_PER_MESSAGE
    line = user_line(plugin.llm)
    assert line.count(UNREAD) == 20
    assert line.endswith("这些是什么")


async def test_records_that_answer_are_shown_beside_records_that_hang(plugin, qq: QQBot) -> None:
    qq.forwards["outer"] = [
        forwarding("甲", "hangs"),
        forwarding("乙", "slow"),
        forwarding("丙", "quick"),
        forwarding("丁", "hangs-too"),
    ]
    qq.forwards["slow"] = [node("慢", "周六爬山吗")]
    qq.forwards["quick"] = [node("快", "好啊")]
    qq.forward_delays.update({"hangs": math.inf, "hangs-too": math.inf, "slow": 1.0})

    elapsed = await receive_timed(qq, MessageSegment.forward("outer"))

    assert elapsed < ANSWER_BOUND_SECONDS
    line = user_line(plugin.llm)
    assert f"甲：{UNREAD}" in line
    assert "乙：[合并转发的聊天记录]\n  慢：周六爬山吗" in line
    assert "丙：[合并转发的聊天记录]\n  快：好啊" in line
    assert f"丁：{UNREAD}" in line
    assert qq.sent_texts == ["好的"]


async def test_nested_record_the_implementation_refuses_is_marked_in_its_line(
    plugin, qq: QQBot
) -> None:
    qq.forwards["outer"] = [forwarding("甲", "gone"), node("乙", "还在")]

    elapsed = await receive_timed(qq, MessageSegment.forward("outer"))

    assert elapsed < 1.0
    line = user_line(plugin.llm)
    assert "甲：[合并转发的聊天记录（无法获取）]\n乙：还在" in line


async def test_record_named_twice_in_one_message_is_fetched_once(plugin, qq: QQBot) -> None:
    qq.forwards["fw1"] = [node("甲", "周六爬山吗")]

    await qq.receive(addressed(MessageSegment.forward("fw1"), MessageSegment.forward("fw1")))

    assert qq.lookups("get_forward_msg") == [{"id": "fw1"}]
    assert user_line(plugin.llm).count("甲：周六爬山吗") == 2
