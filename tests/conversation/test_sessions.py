"""The session cache: order of answers, janitor eviction, rebuild from the database."""

from __future__ import annotations

import asyncio

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import delay, text


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cache_with(plugin, clock: FakeClock, *, idle_seconds: float = 60, max_sessions: int = 0):
    from nonebot_plugin_aimemory.conversation.sessions import SessionCache

    runtime = plugin.runtime
    return SessionCache(
        runtime.build_chatbot, max_idle_seconds=idle_seconds, max_sessions=max_sessions, clock=clock
    )


async def test_queued_messages_are_answered_in_arrival_order(plugin) -> None:
    plugin.llm.script(delay(0.3, text("答一")), text("答二"), text("答三"))
    bot = RecordingBot()
    await bot.receive_all(
        group_message("@问一", user_id=1, to_me=True),
        group_message("@问二", user_id=2, to_me=True),
        group_message("@问三", user_id=3, to_me=True),
    )
    assert bot.sent_texts == ["答一", "答二", "答三"]
    users = [m["content"] for m in plugin.llm.last_messages() if m["role"] == "user"]
    assert [u[-2:] for u in users] == ["问一", "问二", "问三"]


async def test_idle_sessions_are_evicted(plugin) -> None:
    clock = FakeClock()
    cache = cache_with(plugin, clock, idle_seconds=60)
    cache.get_or_create("f:1")
    clock.now += 30
    cache.get_or_create("f:2")
    clock.now += 40
    assert await cache.evict_idle_sessions() == 1
    assert "f:1" not in cache
    assert "f:2" in cache


async def test_least_recently_active_sessions_are_evicted_over_capacity(plugin) -> None:
    clock = FakeClock()
    cache = cache_with(plugin, clock, idle_seconds=0, max_sessions=2)
    for key in ("f:1", "f:2", "f:3"):
        cache.get_or_create(key)
        clock.now += 1
    cache.get_or_create("f:1")  # touched again: now the most recent
    assert await cache.evict_idle_sessions() == 1
    assert "f:2" not in cache
    assert "f:1" in cache
    assert "f:3" in cache


async def test_busy_session_is_never_evicted(plugin) -> None:
    clock = FakeClock()
    cache = cache_with(plugin, clock, idle_seconds=10)
    session = cache.get_or_create("f:5")
    release = asyncio.Event()

    async def slow_job(chatbot):
        await release.wait()

    future = session.submit(slow_job)
    await asyncio.sleep(0)
    clock.now += 100
    assert await cache.evict_idle_sessions() == 0
    assert "f:5" in cache
    release.set()
    await future
    assert await cache.evict_idle_sessions() == 1


async def test_session_with_queued_messages_is_not_evicted(plugin) -> None:
    clock = FakeClock()
    cache = cache_with(plugin, clock, idle_seconds=10)
    session = cache.get_or_create("f:6")

    async def job(chatbot):
        return None

    future = session.submit(job)  # queued, the worker has not started yet
    clock.now += 100
    assert await cache.evict_idle_sessions() == 0
    await future


async def test_unaddressed_activity_does_not_refresh_last_active(plugin) -> None:
    clock = FakeClock()
    cache = cache_with(plugin, clock, idle_seconds=60)
    cache.get_or_create("g:1")
    clock.now += 100
    cache.get_or_create("g:1", touch=False)
    assert await cache.evict_idle_sessions() == 1


async def test_history_comes_back_after_eviction(plugin) -> None:
    bot = RecordingBot()
    plugin.llm.script(text("好的"))
    await bot.receive(private_message("我住在杭州", user_id=12))
    runtime = plugin.runtime
    runtime.sessions.max_idle_seconds = 0.001
    await asyncio.sleep(0.01)
    assert await runtime.sessions.evict_idle_sessions() >= 1
    assert "f:12" not in runtime.sessions
    await bot.receive(private_message("我住哪？", user_id=12))
    assert any("我住在杭州" in str(m["content"]) for m in plugin.llm.last_messages())


async def test_janitor_runs_on_its_interval(plugin) -> None:
    runtime = await plugin.restart(
        aimemory_janitor_interval_seconds=0.05, aimemory_session_max_idle_minutes=0.0001
    )
    bot = RecordingBot()
    await bot.receive(private_message("你好", user_id=13))
    assert "f:13" in runtime.sessions
    for _ in range(40):
        await asyncio.sleep(0.05)
        if "f:13" not in runtime.sessions:
            break
    assert "f:13" not in runtime.sessions
