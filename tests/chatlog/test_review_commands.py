"""`~记忆` review commands as people use them: status, 立即生成, the switch and the
interval, who may use them, and the data boundary when chat may not be sent out."""

from __future__ import annotations

import pytest

from tests.chatlog.helpers import (
    GROUP,
    command,
    is_review_request,
    live_memories,
    logged,
    ops,
    said_privately,
    talk,
    tick_and_wait,
)
from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import error


async def test_generate_now_answers_with_what_it_created_and_updated(plugin, reviewer) -> None:
    existing = (await plugin.runtime.memory.service.save(GROUP, "小明(2001)喜欢吃辣")).memory
    bot = RecordingBot()
    await talk(plugin, bot, "我现在不吃辣了，另外我养了一只猫，叫咪咪")
    reviewer.answer(
        ops(
            {"op": "update", "id": existing.id, "content": "小明(2001)现在不吃辣了"},
            {"op": "create", "content": "小明(2001)养了一只猫"},
            {"op": "create", "content": "小明(2001)的猫叫咪咪"},
        )
    )

    reply = await command(bot, "~记忆 立即生成")

    assert "新增 2 条，更新 1 条" in reply
    assert len(await live_memories(plugin)) == 3


async def test_generate_now_with_nothing_worth_keeping_says_so(plugin, reviewer) -> None:
    bot = RecordingBot()
    await talk(plugin, bot, "早上好")
    reviewer.answer(ops({"op": "noop"}))

    reply = await command(bot, "~记忆 立即生成")

    assert "没有需要记住的内容" in reply
    assert await live_memories(plugin) == []


async def test_generate_now_reviews_chat_that_was_not_flushed_yet(plugin, reviewer) -> None:
    await plugin.restart(aimemory_chat_log_flush_seconds=60)
    bot = RecordingBot()
    await bot.receive(said_privately("我不吃香菜", user_id=3001))
    reviewer.answer(ops({"op": "create", "content": "小红不吃香菜"}))

    before = len(bot.sent)
    await bot.receive(said_privately("~记忆 立即生成", user_id=3001))

    assert "新增 1 条" in bot.sent_texts[before]
    assert "我不吃香菜" in reviewer.shown


async def test_generate_now_says_when_the_reviewer_failed(plugin, reviewer) -> None:
    from nonebot_plugin_aimemory import texts

    await plugin.restart(aimemory_llm_max_retries=0)
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")
    reviewer.answer(error(500))

    assert await command(bot, "~记忆 立即生成") == texts.REVIEW_FAILED
    assert await live_memories(plugin) == []


async def test_status_before_any_review_shows_the_defaults(plugin, reviewer) -> None:
    reply = await command(RecordingBot(), "~记忆 状态")

    assert "自动整理记忆：开启（每 300 秒）" in reply
    assert "上次整理：从未" in reply
    assert "待整理：无" in reply


async def test_status_shows_new_chat_waiting_for_review(plugin, reviewer) -> None:
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")

    assert "待整理：有待整理的新聊天" in await command(bot, "~记忆 状态")


async def test_status_shows_the_last_review_in_local_time(plugin, reviewer, clock) -> None:
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")
    await tick_and_wait(plugin)  # at 12:00 UTC, 20:00 in Asia/Shanghai

    reply = await command(bot, "~记忆 状态")

    assert "上次整理：2026-11-30 20:00" in reply
    assert "待整理：无" in reply


async def test_status_shows_review_switched_off_with_the_interval_it_keeps(
    plugin, reviewer
) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await command(bot, "~记忆 间隔 600")
    assert await command(bot, "~记忆 关闭") == texts.review_switched(False)

    assert "自动整理记忆：关闭（间隔 600 秒）" in await command(bot, "~记忆 状态")


@pytest.mark.parametrize("argument", ["59", "86401", "0", "-120", "abc", "1.5", ""])
async def test_an_interval_out_of_range_gets_the_usage_line(
    plugin, reviewer, argument: str
) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    reply = await command(bot, f"~记忆 间隔 {argument}")

    assert reply == texts.REVIEW_INTERVAL_USAGE
    assert "每 300 秒" in await command(bot, "~记忆 状态")


@pytest.mark.parametrize("seconds", [60, 86400])
async def test_the_interval_bounds_are_accepted(plugin, reviewer, seconds: int) -> None:
    bot = RecordingBot()

    await command(bot, f"~记忆 间隔 {seconds}")

    assert f"每 {seconds} 秒" in await command(bot, "~记忆 状态")


@pytest.mark.parametrize("line", ["~记忆 开启", "~记忆 关闭", "~记忆 间隔 120", "~记忆 立即生成"])
async def test_a_plain_member_may_not_control_the_groups_review(
    plugin, reviewer, line: str
) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")

    reply = await command(bot, line, role="member")

    assert reply == texts.PERMISSION_DENIED
    assert reviewer.requests == []
    assert "自动整理记忆：开启（每 300 秒）" in await command(bot, "~记忆 状态")


async def test_a_plain_member_may_see_the_review_status(plugin, reviewer) -> None:
    reply = await command(RecordingBot(), "~记忆 状态", role="member")

    assert "自动整理记忆：" in reply


async def test_a_superuser_controls_a_groups_review(plugin, reviewer) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    reply = await command(bot, "~记忆 关闭", role="member", user_id=int(SUPERUSER_ID))

    assert reply == texts.review_switched(False)


async def test_in_a_private_chat_the_user_controls_their_own_review(plugin, reviewer) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    await bot.receive(said_privately("~记忆 间隔 600", user_id=3001))
    await bot.receive(said_privately("~记忆 状态", user_id=3001))

    assert bot.sent_texts[0] == texts.review_interval_set(600)
    assert "每 600 秒" in bot.sent_texts[1]


# ---------------------------------------------------------------- data boundary


async def test_without_external_context_no_chat_is_ever_sent_to_a_reviewer(
    plugin, reviewer
) -> None:
    from nonebot_plugin_aimemory import texts

    await plugin.restart(aimemory_review_external_context=False)
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜", "我也不吃葱")

    await tick_and_wait(plugin)
    reply = await command(bot, "~记忆 立即生成")

    assert reply == texts.REVIEW_NO_EXTERNAL_CONTEXT
    assert not any(is_review_request(body) for body in plugin.llm.chat_requests)
    assert reviewer.requests == []


async def test_without_external_context_no_review_work_is_recorded(plugin, reviewer) -> None:
    await plugin.restart(aimemory_review_external_context=False)

    await talk(plugin, RecordingBot(), "我不吃香菜", "我也不吃葱")

    assert await plugin.runtime.database.read("SELECT * FROM review_state") == []


async def test_without_external_context_the_chat_log_is_still_kept(plugin, reviewer) -> None:
    await plugin.restart(aimemory_review_external_context=False)

    await talk(plugin, RecordingBot(), "我不吃香菜")

    assert [r.text for r in await logged(plugin)] == ["我不吃香菜", "好的"]


async def test_without_external_context_the_status_says_review_is_off(plugin, reviewer) -> None:
    from nonebot_plugin_aimemory import texts

    await plugin.restart(aimemory_review_external_context=False)

    reply = await command(RecordingBot(), "~记忆 状态")

    assert texts.REVIEW_NO_EXTERNAL_CONTEXT in reply
