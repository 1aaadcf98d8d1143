"""Token usage as the clients report it and the recorder adds it up: cached prompt tokens
read from either provider's field, calls counted for the chat of the context they run in
and under their client's role, days in the configured zone, and writes in batches."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI, reported_usage, text

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.usage import UsageRecorder, UsageRow

# 2026-12-01 16:30 UTC is already 2026-12-02 in China.
LATE_EVENING_UTC = datetime(2026, 12, 1, 16, 30, tzinfo=timezone.utc)


class CountingLedger:
    """An in-memory ledger that counts its writes."""

    def __init__(self) -> None:
        from nonebot_plugin_aimemory.store.usage_store import MemoryOnlyUsageStore

        self.kept = MemoryOnlyUsageStore()
        self.writes: list[list[UsageRow]] = []
        self.failing = False

    async def add(self, rows: Sequence[UsageRow]) -> None:
        if self.failing:
            raise OSError("disk full")
        self.writes.append(list(rows))
        await self.kept.add(rows)

    def __getattr__(self, name: str):
        return getattr(self.kept, name)


class Clock:
    """A clock a test moves by hand."""

    def __init__(self, now: datetime = LATE_EVENING_UTC) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def recorder(ledger: CountingLedger, clock: Clock | None = None) -> UsageRecorder:
    from nonebot_plugin_aimemory.config import CHINA_STANDARD_TIME
    from nonebot_plugin_aimemory.engine.usage import UsageRecorder

    return UsageRecorder(ledger, zone=CHINA_STANDARD_TIME, clock=clock or Clock())


def metered(llm_client: LLMClient, meter: UsageRecorder, role: str = "main") -> LLMClient:
    from nonebot_plugin_aimemory.engine.llm import LLMClient

    return LLMClient(
        llm_client.http, llm_client.endpoint, backoff_seconds=0.01, role=role, meter=meter
    )


async def say_hello(client: LLMClient) -> None:
    from nonebot_plugin_aimemory.engine.messages import Message

    await client.complete([Message("user", "你好")])


@pytest.mark.parametrize("style", ["openai", "deepseek"])
async def test_cached_prompt_tokens_are_read_from_either_provider_field(
    llm: FakeOpenAI, llm_client: LLMClient, style
) -> None:
    from nonebot_plugin_aimemory.engine.llm import Usage
    from nonebot_plugin_aimemory.engine.messages import Message

    llm.script(text("好", usage=reported_usage(1000, 20, cached=768, style=style)))

    completion = await llm_client.complete([Message("user", "你好")])

    assert completion.usage == Usage(1000, 20, 768)


async def test_a_call_is_counted_for_the_chat_of_its_context_under_its_role(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    from nonebot_plugin_aimemory.engine.usage import NO_CHAT, TokenCounts, attributed_to

    ledger = CountingLedger()
    usage = recorder(ledger)
    client = metered(llm_client, usage)
    llm.script(
        text("好", usage=reported_usage(300, 10, cached=200)),
        text("好", usage=reported_usage(400, 30)),
        text("好", usage=reported_usage(50, 5)),
    )

    with attributed_to("g:1"):
        await say_hello(client)
        await say_hello(client.for_role("extractor"))
    await say_hello(client)
    await usage.flush()

    day = "2026-12-02"
    assert await ledger.kept.by_role("g:1", day, day) == {
        "main": TokenCounts(300, 10, 200, 1),
        "extractor": TokenCounts(400, 30, 0, 1),
    }
    assert await ledger.kept.by_role(NO_CHAT, day, day) == {"main": TokenCounts(50, 5, 0, 1)}


async def test_tasks_started_in_a_chat_context_count_for_that_chat(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    from nonebot_plugin_aimemory.engine.usage import attributed_to

    usage = recorder(CountingLedger())
    client = metered(llm_client, usage)

    with attributed_to("f:7"):
        task = asyncio.create_task(say_hello(client))
    await task

    assert usage.today_total("f:7") > 0


async def test_a_call_without_reported_usage_still_counts_as_a_call(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    from nonebot_plugin_aimemory.engine.usage import TokenCounts, attributed_to

    ledger = CountingLedger()
    usage = recorder(ledger)
    llm.script(text("好", usage=None))

    with attributed_to("g:2"):
        await say_hello(metered(llm_client, usage, role="vision"))
    await usage.flush()

    day = usage.today()
    assert await ledger.kept.by_role("g:2", day, day) == {"vision": TokenCounts(calls=1)}


async def test_embedding_usage_is_counted_under_embeddings(llm: FakeOpenAI, endpoint) -> None:
    from nonebot_plugin_aimemory.engine.embeddings import EmbeddingClient
    from nonebot_plugin_aimemory.engine.usage import attributed_to

    ledger = CountingLedger()
    usage = recorder(ledger)
    async with httpx.AsyncClient(trust_env=False) as http:
        client = EmbeddingClient(http, endpoint, meter=usage)
        with attributed_to("g:3"):
            await client.embed(["小明喜欢爬山", "群里周五开会"])
    await usage.flush()

    day = usage.today()
    (row,) = (await ledger.kept.by_role("g:3", day, day)).items()
    role, counts = row
    # The fake server reports len // 3 + 1 tokens per input.
    assert (role, counts.prompt_tokens, counts.completion_tokens, counts.calls) == (
        "embeddings",
        3 + 3,
        0,
        1,
    )


async def test_many_calls_are_written_in_one_transaction() -> None:
    from nonebot_plugin_aimemory.engine.llm import Usage
    from nonebot_plugin_aimemory.engine.usage import attributed_to

    ledger = CountingLedger()
    usage = recorder(ledger)

    for i in range(50):
        with attributed_to(f"g:{i % 3}"):
            usage.record("main", Usage(100, 10))
    assert ledger.writes == []  # nothing written on the calls' path
    await usage.flush()

    (batch,) = ledger.writes
    assert len(batch) == 3  # one row per (day, chat, role)
    assert sum(row.counts.calls for row in batch) == 50


async def test_the_day_is_the_local_date_of_the_configured_zone() -> None:
    from nonebot_plugin_aimemory.engine.llm import Usage
    from nonebot_plugin_aimemory.engine.usage import attributed_to

    ledger = CountingLedger()
    usage = recorder(ledger, Clock(LATE_EVENING_UTC))

    with attributed_to("g:1"):
        usage.record("main", Usage(100, 10))
    await usage.flush()

    assert [row.day for row in ledger.writes[0]] == ["2026-12-02"]


async def test_todays_total_starts_from_zero_the_next_day() -> None:
    from nonebot_plugin_aimemory.engine.llm import Usage
    from nonebot_plugin_aimemory.engine.usage import attributed_to

    clock = Clock()
    usage = recorder(CountingLedger(), clock)
    with attributed_to("g:1"):
        usage.record("main", Usage(100, 10))
    assert usage.today_total("g:1") == 110

    clock.now += timedelta(days=1)

    assert usage.today_total("g:1") == 0
    assert usage.today_totals() == {}


async def test_todays_totals_are_loaded_at_start() -> None:
    from nonebot_plugin_aimemory.engine.llm import Usage
    from nonebot_plugin_aimemory.engine.usage import attributed_to

    ledger = CountingLedger()
    before = recorder(ledger)
    with attributed_to("g:1"):
        before.record("main", Usage(100, 10))
        before.record("embeddings", Usage(7))
    await before.close()

    after = recorder(ledger)
    await after.load()

    assert after.today_total("g:1") == 117


async def test_a_failed_write_keeps_the_figures_for_the_next_flush(plugin_log) -> None:
    from nonebot_plugin_aimemory.engine.llm import Usage
    from nonebot_plugin_aimemory.engine.usage import TokenCounts, attributed_to

    ledger = CountingLedger()
    usage = recorder(ledger)
    with attributed_to("g:1"):
        usage.record("main", Usage(100, 10))
    ledger.failing = True
    assert not await usage.flush()
    with attributed_to("g:1"):
        usage.record("main", Usage(1, 1))

    ledger.failing = False
    assert await usage.flush()

    day = usage.today()
    assert await ledger.kept.by_role("g:1", day, day) == {"main": TokenCounts(101, 11, 0, 2)}
    assert "could not write 1 token usage rows" in plugin_log.text


async def test_per_day_lists_every_day_up_to_today() -> None:
    from nonebot_plugin_aimemory.engine.llm import Usage
    from nonebot_plugin_aimemory.engine.usage import TokenCounts, attributed_to

    clock = Clock()
    usage = recorder(CountingLedger(), clock)
    with attributed_to("g:1"):
        usage.record("main", Usage(100, 10))
    clock.now += timedelta(days=2)
    with attributed_to("g:1"):
        usage.record("compressor", Usage(50, 5))

    days = await usage.per_day("g:1", 4)

    assert days == [
        ("2026-12-01", {}),
        ("2026-12-02", {"main": TokenCounts(100, 10, 0, 1)}),
        ("2026-12-03", {}),
        ("2026-12-04", {"compressor": TokenCounts(50, 5, 0, 1)}),
    ]
