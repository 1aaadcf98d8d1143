"""The daily quota holds when a turn runs, not only when its message arrives: a turn queued
behind a slow one checks again when its turn comes, and a turn whose tool rounds reach the
quota stops before its next model call. At most one call's tokens go past the quota."""

from __future__ import annotations

import time

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import reported_usage, text, tool_calls

GROUP = 931
USED_UP = "今天的额度用完了，明天再聊吧。"


async def usage_line(bot: RecordingBot) -> str:
    await bot.receive(group_message("~对话 用量", group_id=GROUP))
    return bot.sent_texts[-1].splitlines()[-1]


def slow_answer(body) -> object:
    time.sleep(0.3)  # the first turn is still running when the others arrive
    return text("好的", usage=reported_usage(1200, 300))


async def test_members_queued_behind_a_slow_turn_get_no_model_call(plugin) -> None:
    await plugin.restart(aimemory_daily_tokens_per_chat=1)
    plugin.llm.responder = slow_answer
    bot = RecordingBot()

    await bot.receive_all(
        *(group_message(f"问题{n}", group_id=GROUP, user_id=7100 + n, to_me=True) for n in range(4))
    )

    assert len(plugin.llm.chat_requests) == 1
    assert bot.sent_texts.count("好的") == 1
    assert bot.sent_texts.count(USED_UP) == 1  # one notice, as before
    assert await usage_line(bot) == "每日额度：已用 1500 / 1 tokens"


async def test_a_quota_reached_in_the_tool_loop_stops_before_the_next_call(plugin) -> None:
    await plugin.restart(aimemory_daily_tokens_per_chat=1000)
    plugin.llm.script(
        tool_calls(("memory_search", {"query": "生日"}), usage=reported_usage(900, 200)),
        tool_calls(("memory_search", {"query": "蛋糕"}), usage=reported_usage(900, 200)),
        text("不该到这里", usage=reported_usage(900, 200)),
    )
    bot = RecordingBot()

    await bot.receive(group_message("帮我查查", group_id=GROUP, to_me=True))

    assert len(plugin.llm.chat_requests) == 1
    assert bot.sent_texts == [USED_UP]
    assert await usage_line(bot) == "每日额度：已用 1100 / 1000 tokens"


async def test_the_stopped_turn_keeps_its_message_and_finished_round(plugin) -> None:
    await plugin.restart(aimemory_daily_tokens_per_chat=1000)
    plugin.llm.script(
        tool_calls(("memory_search", {"query": "生日"}), usage=reported_usage(900, 200))
    )
    bot = RecordingBot()
    await bot.receive(group_message("我生日是哪天", group_id=GROUP, to_me=True))

    await plugin.restart(aimemory_daily_tokens_per_chat=0)  # the operator lifts the quota
    plugin.llm.responder = lambda body: text("好的")
    await bot.receive(group_message("在吗", group_id=GROUP, to_me=True))

    sent = plugin.llm.last_messages()
    roles = [m["role"] for m in sent]
    assert any("我生日是哪天" in (m["content"] or "") for m in sent if m["role"] == "user")
    assert roles[-4:] == ["user", "assistant", "tool", "user"]
