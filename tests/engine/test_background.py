"""`Background` owns a component's tasks and periodic loops: failures are logged, never
lost or fatal, and closing stops the loops and waits for (or cancels) the tasks."""

from __future__ import annotations

import asyncio
import logging

import pytest


async def test_a_failing_task_is_logged_and_does_not_break_close(plugin_log) -> None:
    from nonebot_plugin_aimemory.engine.background import Background

    background = Background("test work")

    async def boom() -> None:
        raise RuntimeError("boom")

    background.spawn(boom())
    await background.close()

    failures = [r for r in plugin_log.records if r.levelno == logging.ERROR]
    assert len(failures) == 1
    assert "test work" in failures[0].getMessage()
    assert isinstance(failures[0].exc_info[1], RuntimeError)
    assert len(background) == 0


async def test_every_keeps_running_after_a_failing_run(plugin_log) -> None:
    from nonebot_plugin_aimemory.engine.background import Background

    background = Background("test loop")
    runs = 0
    third_run = asyncio.Event()

    async def fails_first() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise RuntimeError("first run fails")
        if runs == 3:
            third_run.set()

    background.every(0.01, fails_first, first_delay_seconds=0, name="sweep")
    await asyncio.wait_for(third_run.wait(), timeout=2)
    await background.close()

    assert [r.getMessage() for r in plugin_log.records] == ["test loop: sweep failed"]


async def test_an_awaited_tasks_failure_is_left_to_its_awaiter(plugin_log) -> None:
    from nonebot_plugin_aimemory.engine.background import Background

    background = Background("test work")

    async def boom() -> None:
        raise RuntimeError("boom")

    task = background.spawn(boom(), awaited=True)
    with pytest.raises(RuntimeError):
        await task
    await background.close()

    assert plugin_log.records == []


async def test_close_stops_loops_and_waits_for_tasks() -> None:
    from nonebot_plugin_aimemory.engine.background import Background

    background = Background("test")
    ticks = 0
    finished = False

    async def tick() -> None:
        nonlocal ticks
        ticks += 1

    async def slow_work() -> None:
        nonlocal finished
        await asyncio.sleep(0.05)
        finished = True

    loop = background.every(0.01, tick)
    background.spawn(slow_work())
    await background.close()
    ticks_at_close = ticks
    await asyncio.sleep(0.05)

    assert finished
    assert loop.cancelled()
    assert ticks == ticks_at_close


async def test_wait_includes_tasks_spawned_by_tasks() -> None:
    from nonebot_plugin_aimemory.engine.background import Background

    background = Background("test")
    done: list[str] = []

    async def child() -> None:
        await asyncio.sleep(0.01)
        done.append("child")

    async def parent() -> None:
        background.spawn(child())
        done.append("parent")

    background.spawn(parent())
    await background.wait()

    assert done == ["parent", "child"]


async def test_close_with_cancel_cancels_running_tasks() -> None:
    from nonebot_plugin_aimemory.engine.background import Background

    background = Background("test")
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    task = background.spawn(forever())
    await started.wait()
    await asyncio.wait_for(background.close(cancel=True), timeout=1)

    assert task.cancelled()
    assert len(background) == 0


async def test_cancelling_a_waiter_leaves_the_tasks_running() -> None:
    from nonebot_plugin_aimemory.engine.background import Background

    background = Background("test")
    release = asyncio.Event()

    async def until_released() -> None:
        await release.wait()

    task = background.spawn(until_released())
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(background.wait(), timeout=0.01)

    assert not task.done()
    release.set()
    await background.close()
    assert task.done()
    assert not task.cancelled()


async def test_settle_lets_quick_tasks_finish_and_cancels_hanging_ones() -> None:
    from nonebot_plugin_aimemory.engine.background import Background

    background = Background("test work")
    finished: list[str] = []

    async def quick() -> None:
        await asyncio.sleep(0.01)
        finished.append("quick")

    async def hanging() -> None:
        await asyncio.sleep(3600)
        finished.append("hanging")

    quick_task = background.spawn(quick())
    hanging_task = background.spawn(hanging())
    await asyncio.wait_for(background.settle(0.2), 2)

    assert finished == ["quick"]
    assert quick_task.done()
    assert not quick_task.cancelled()
    assert hanging_task.cancelled()
    assert len(background) == 0
