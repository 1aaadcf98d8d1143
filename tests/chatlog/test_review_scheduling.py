"""When the background reviewer runs: the interval and new-rows gates, the per-session
switch and interval, retries after failures, restarts, and never two at once."""

from __future__ import annotations

import asyncio
import itertools

from tests.chatlog.helpers import (
    GROUP,
    command,
    eventually,
    live_memories,
    logged,
    ops,
    said,
    talk,
    tick_and_wait,
)
from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import error


async def test_no_second_review_starts_before_the_interval_has_passed(
    plugin, reviewer, clock
) -> None:
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")
    await tick_and_wait(plugin)
    await talk(plugin, bot, "我也不吃葱")

    clock.advance(299)
    too_early = await tick_and_wait(plugin)
    clock.advance(1)
    on_time = await tick_and_wait(plugin)

    assert (too_early, on_time) == ([], [GROUP])
    assert len(reviewer.requests) == 2


async def test_no_review_starts_before_enough_new_rows_are_logged(plugin, reviewer) -> None:
    await plugin.restart(aimemory_review_min_new_rows=3)
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")  # the message and the reply: 2 rows

    too_few = await tick_and_wait(plugin)
    await talk(plugin, bot, "我也不吃葱")
    enough = await tick_and_wait(plugin)

    assert (too_few, enough) == ([], [GROUP])
    assert len(reviewer.requests) == 1


async def test_a_session_with_review_switched_off_is_not_reviewed(plugin, reviewer) -> None:
    bot = RecordingBot()
    await command(bot, "~记忆 关闭")
    await talk(plugin, bot, "我不吃香菜", "我也不吃葱")

    assert await tick_and_wait(plugin) == []
    assert reviewer.requests == []


async def test_switching_review_back_on_lets_the_next_tick_review(plugin, reviewer) -> None:
    bot = RecordingBot()
    await command(bot, "~记忆 关闭")
    await talk(plugin, bot, "我不吃香菜")
    await tick_and_wait(plugin)

    await command(bot, "~记忆 开启")

    assert await tick_and_wait(plugin) == [GROUP]
    assert len(reviewer.requests) == 1


async def test_a_sessions_own_interval_replaces_the_configured_one(plugin, reviewer, clock) -> None:
    bot = RecordingBot()
    await command(bot, "~记忆 间隔 120")
    await talk(plugin, bot, "我不吃香菜")
    await tick_and_wait(plugin)
    await talk(plugin, bot, "我也不吃葱")

    clock.advance(119)
    too_early = await tick_and_wait(plugin)
    clock.advance(1)
    on_time = await tick_and_wait(plugin)

    assert (too_early, on_time) == ([], [GROUP])


async def test_the_interval_set_by_command_survives_a_restart(plugin, reviewer) -> None:
    bot = RecordingBot()
    assert "120" in await command(bot, "~记忆 间隔 120")

    await plugin.restart()

    assert "自动整理记忆：开启（每 120 秒）" in await command(bot, "~记忆 状态")


async def test_the_switch_set_by_command_survives_a_restart(plugin, reviewer) -> None:
    bot = RecordingBot()
    await command(bot, "~记忆 关闭")
    await talk(plugin, bot, "我不吃香菜")

    await plugin.restart()

    assert await tick_and_wait(plugin) == []
    assert "自动整理记忆：关闭" in await command(bot, "~记忆 状态")


async def test_a_pending_review_survives_a_restart(plugin, reviewer) -> None:
    await talk(plugin, RecordingBot(), "我不吃香菜")
    assert (await plugin.runtime.chat_log.reviews.store.get(GROUP)).pending

    await plugin.restart()

    assert await tick_and_wait(plugin) == [GROUP]
    assert len(reviewer.requests) == 1
    assert not (await plugin.runtime.chat_log.reviews.store.get(GROUP)).pending


async def test_a_failed_review_is_retried_after_a_backoff(plugin, reviewer, clock) -> None:
    from nonebot_plugin_aimemory.chatlog.scheduler import RETRY_BASE_SECONDS
    from nonebot_plugin_aimemory.store.times import parse_utc_text

    await plugin.restart(aimemory_llm_max_retries=0)
    plugin.runtime.chat_log.reviews.clock = clock
    await talk(plugin, RecordingBot(), "我不吃香菜")
    reviewer.answer(error(500), ops({"op": "create", "content": "小明不吃香菜"}))

    failed_at = clock.now
    await tick_and_wait(plugin)
    failed = await plugin.runtime.chat_log.reviews.store.get(GROUP)
    too_early = await tick_and_wait(plugin)
    clock.advance(RETRY_BASE_SECONDS)
    retried = await tick_and_wait(plugin)

    assert failed.failures == 1
    assert parse_utc_text(failed.next_attempt_at) > failed_at
    assert (too_early, retried) == ([], [GROUP])
    assert [m.content for m in await live_memories(plugin)] == ["小明不吃香菜"]
    assert (await plugin.runtime.chat_log.reviews.store.get(GROUP)).failures == 0


async def test_the_backoff_grows_with_each_failure(plugin, reviewer, clock) -> None:
    from nonebot_plugin_aimemory.store.times import parse_utc_text

    await plugin.restart(aimemory_llm_max_retries=0)
    plugin.runtime.chat_log.reviews.clock = clock
    await talk(plugin, RecordingBot(), "我不吃香菜")
    reviewer.answer(error(500), error(500))
    reviews = plugin.runtime.chat_log.reviews

    await tick_and_wait(plugin)
    first = parse_utc_text((await reviews.store.get(GROUP)).next_attempt_at) - clock.now
    clock.advance(first.total_seconds())
    await tick_and_wait(plugin)
    second = parse_utc_text((await reviews.store.get(GROUP)).next_attempt_at) - clock.now

    assert first.total_seconds() > 0
    assert second > first


async def test_after_the_last_allowed_failure_the_batch_is_skipped(plugin, reviewer, clock) -> None:
    from nonebot_plugin_aimemory.chatlog.scheduler import MAX_FAILURES

    await plugin.restart(aimemory_llm_max_retries=0)
    plugin.runtime.chat_log.reviews.clock = clock
    reviewer.answer(*(error(500) for _ in range(MAX_FAILURES + 1)))
    await talk(plugin, RecordingBot(), "我不吃香菜")

    for _ in range(MAX_FAILURES + 2):
        await tick_and_wait(plugin)
        clock.advance(24 * 3600)

    assert len(reviewer.requests) == MAX_FAILURES
    state = await plugin.runtime.chat_log.reviews.store.get(GROUP)
    assert (state.pending, state.failures) == (False, 0)
    assert state.last_reviewed_row == (await logged(plugin))[-1].id


async def test_a_manual_review_failure_is_retried_later_by_the_scheduler(
    plugin, reviewer, clock
) -> None:
    from nonebot_plugin_aimemory import texts
    from nonebot_plugin_aimemory.chatlog.scheduler import RETRY_BASE_SECONDS

    await plugin.restart(aimemory_llm_max_retries=0)
    plugin.runtime.chat_log.reviews.clock = clock
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")
    reviewer.answer(error(500), ops({"op": "create", "content": "小明不吃香菜"}))

    assert await command(bot, "~记忆 立即生成") == texts.REVIEW_FAILED
    assert (await plugin.runtime.chat_log.reviews.store.get(GROUP)).next_attempt_at is not None
    clock.advance(RETRY_BASE_SECONDS)

    assert await tick_and_wait(plugin) == [GROUP]
    assert [m.content for m in await live_memories(plugin)] == ["小明不吃香菜"]


# ---------------------------------------------------------------- concurrency


async def test_a_second_tick_while_a_review_runs_starts_no_other_review(plugin, reviewer) -> None:
    reviewer.delay_seconds = 0.5
    await talk(plugin, RecordingBot(), "我不吃香菜")
    reviews = plugin.runtime.chat_log.reviews

    first = await reviews.tick()
    second = await reviews.tick()
    await asyncio.gather(*list(reviews.running.values()))

    assert (first, second) == ([GROUP], [])
    assert len(reviewer.requests) == 1


async def test_a_turn_does_not_wait_for_a_running_review(plugin, reviewer) -> None:
    reviewer.delay_seconds = 1.0
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")
    reviews = plugin.runtime.chat_log.reviews
    await reviews.tick()

    await asyncio.wait_for(bot.receive(said("那你吃什么", to_me=True)), 0.8)

    assert GROUP in reviews.running
    assert bot.sent_texts[-1] == "好的"
    await asyncio.gather(*list(reviews.running.values()))


async def test_two_manual_reviews_of_one_session_at_once_run_one_after_the_other(
    plugin, reviewer
) -> None:
    reviewer.delay_seconds = 0.5
    await talk(plugin, RecordingBot(), "我不吃香菜")
    reviewer.answer(ops({"op": "create", "content": "小明不吃香菜"}))
    reviews = plugin.runtime.chat_log.reviews

    first, second = await asyncio.gather(reviews.run_now(GROUP), reviews.run_now(GROUP))

    assert len(reviewer.requests) == 1, "the second review re-read the same rows at once"
    assert (first.created, second.created) == (1, 0)
    assert [m.content for m in await live_memories(plugin)] == ["小明不吃香菜"]


async def test_a_manual_review_during_a_scheduler_tick_does_not_overlap_it(
    plugin, reviewer
) -> None:
    reviewer.delay_seconds = 0.5
    await talk(plugin, RecordingBot(), "我不吃香菜")
    reviews = plugin.runtime.chat_log.reviews

    await asyncio.gather(reviews.tick(), reviews.run_now(GROUP))
    await asyncio.gather(*list(reviews.running.values()))

    gaps = [b - a for a, b in itertools.pairwise(reviewer.arrivals)]
    assert all(gap >= 0.45 for gap in gaps), f"reviews overlapped: {gaps}"


async def test_one_sessions_failed_review_does_not_stop_another_sessions(plugin, reviewer) -> None:
    await plugin.restart(aimemory_llm_max_retries=0)
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜", group_id=111)
    await talk(plugin, bot, "我不吃葱", group_id=222)
    reviewer.answer(error(500), ops({"op": "create", "content": "小明不吃香菜和葱"}))

    started = await tick_and_wait(plugin)

    assert sorted(started) == ["g:111", "g:222"]
    failures = [(await plugin.runtime.chat_log.reviews.store.get(k)).failures for k in started]
    memories = [len(await live_memories(plugin, k)) for k in started]
    assert sorted(zip(failures, memories, strict=True)) == [(0, 1), (1, 0)]


async def test_the_scheduler_reviews_by_itself_every_tick(plugin, reviewer) -> None:
    await plugin.restart(aimemory_review_tick_seconds=0.05)

    await talk(plugin, RecordingBot(), "我不吃香菜")

    async def reviewed() -> bool:
        return not (await plugin.runtime.chat_log.reviews.store.get(GROUP)).pending

    await eventually(reviewed)
    assert len(reviewer.requests) == 1


async def test_with_review_off_by_default_a_session_can_switch_it_on(plugin, reviewer) -> None:
    await plugin.restart(aimemory_review_enabled=False)
    bot = RecordingBot()
    await talk(plugin, bot, "我不吃香菜")
    assert await tick_and_wait(plugin) == []

    await command(bot, "~记忆 开启")

    assert await tick_and_wait(plugin) == [GROUP]
