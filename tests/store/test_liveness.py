"""A running bot's marks in its database (store/liveness.py), on both backends: a fresh
mark says a bot runs, a stale one does not; a clean stop removes them; a second process
serving the same account is logged."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone


async def test_a_running_bot_is_seen_until_it_stops(any_database) -> None:
    from nonebot_plugin_aimemory.store.liveness import RunningMark, running_bot, this_process
    from nonebot_plugin_aimemory.store.plugin_state import PluginStateStore

    state = PluginStateStore(any_database)
    assert await running_bot(state) is None
    mark = RunningMark(state)
    await mark.renew()
    running = await running_bot(state)
    assert running is not None
    assert running.startswith(this_process())
    await mark.close()
    assert await running_bot(state) is None


async def test_a_mark_three_minutes_old_is_a_bot_that_died(any_database) -> None:
    from nonebot_plugin_aimemory.store.liveness import mark_running, running_bot
    from nonebot_plugin_aimemory.store.plugin_state import PluginStateStore

    state = PluginStateStore(any_database)
    await mark_running(state)
    later = datetime.now(timezone.utc) + timedelta(minutes=4)
    assert await running_bot(state, now=later) is None
    assert await running_bot(state) is not None


async def test_a_second_process_serving_an_account_is_logged_once(any_database, plugin_log) -> None:
    from nonebot_plugin_aimemory.store.liveness import RunningMark
    from nonebot_plugin_aimemory.store.plugin_state import PluginStateStore
    from nonebot_plugin_aimemory.store.times import utc_now_text

    state = PluginStateStore(any_database)
    await state.put("account:42", f"999@other-host {utc_now_text()}")  # another process
    mark = RunningMark(state)
    mark.serve("42")
    await mark.renew()
    await mark.renew()
    warnings = [r.getMessage() for r in plugin_log.records if "also served" in r.getMessage()]
    assert len(warnings) == 1
    assert "999@other-host" in warnings[0]
    await mark.close()
    assert await state.get("account:42") is None


async def test_the_plugin_marks_its_database_while_it_runs(plugin) -> None:
    import asyncio

    from nonebot_plugin_aimemory.store.liveness import running_bot
    from nonebot_plugin_aimemory.store.plugin_state import PluginStateStore

    for _ in range(50):  # the first mark is written in the background at start
        if await running_bot(PluginStateStore(plugin.runtime.database)) is not None:
            break
        await asyncio.sleep(0.05)
    database_path = plugin.db_path
    assert await running_bot(PluginStateStore(plugin.runtime.database)) is not None
    await plugin.stop()

    from nonebot_plugin_aimemory.store.sqlite.database import Database

    reopened = await Database.open(database_path)
    try:
        assert await running_bot(PluginStateStore(reopened)) is None  # a clean stop
    finally:
        await reopened.close()
