"""The token usage table, and its in-memory twin for a bot without a database: batches add
up per (chat, day, role), and reads by chat, by day and over all chats."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest


def row(day: str, chat: str, role: str, prompt: int, completion: int, cached: int = 0):
    from nonebot_plugin_aimemory.engine.usage import TokenCounts, UsageRow

    return UsageRow(day, chat, role, TokenCounts(prompt, completion, cached, 1))


@pytest.fixture(params=["sqlite", "postgresql", "memory"])
async def ledger(request, tmp_path) -> AsyncIterator[Any]:
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase
    from nonebot_plugin_aimemory.store.sqlite.database import Database
    from nonebot_plugin_aimemory.store.usage_store import MemoryOnlyUsageStore, UsageStore

    if request.param == "memory":
        yield MemoryOnlyUsageStore()
        return
    database = (
        await PostgresDatabase.open(request.getfixturevalue("postgres_url"))
        if request.param == "postgresql"
        else await Database.open(tmp_path / "usage.db")
    )
    try:
        yield UsageStore(database)
    finally:
        await database.close()


async def test_batches_add_up_per_chat_day_and_role(ledger) -> None:
    from nonebot_plugin_aimemory.engine.usage import TokenCounts

    await ledger.add([row("2026-12-01", "g:1", "main", 100, 10, 60)])
    await ledger.add(
        [row("2026-12-01", "g:1", "main", 200, 20, 150), row("2026-12-01", "g:1", "vision", 5, 1)]
    )

    assert await ledger.by_role("g:1", "2026-12-01", "2026-12-01") == {
        "main": TokenCounts(300, 30, 210, 2),
        "vision": TokenCounts(5, 1, 0, 1),
    }


async def test_a_chats_usage_is_read_over_a_range_of_days(ledger) -> None:
    from nonebot_plugin_aimemory.engine.usage import TokenCounts

    await ledger.add(
        [
            row("2026-11-24", "g:1", "main", 1000, 100),  # the day before the range
            row("2026-11-25", "g:1", "main", 100, 10),
            row("2026-12-01", "g:1", "main", 200, 20),
            row("2026-12-01", "g:1", "embeddings", 30, 0),
            row("2026-12-01", "g:2", "main", 999, 99),  # another chat
        ]
    )

    assert await ledger.by_role("g:1", "2026-11-25", "2026-12-01") == {
        "main": TokenCounts(300, 30, 0, 2),
        "embeddings": TokenCounts(30, 0, 0, 1),
    }
    assert await ledger.per_day("g:1", "2026-11-25", "2026-12-01") == {
        "2026-11-25": {"main": TokenCounts(100, 10, 0, 1)},
        "2026-12-01": {
            "main": TokenCounts(200, 20, 0, 1),
            "embeddings": TokenCounts(30, 0, 0, 1),
        },
    }


async def test_totals_add_up_every_chat_and_the_calls_of_none(ledger) -> None:
    from nonebot_plugin_aimemory.engine.usage import NO_CHAT, TokenCounts

    await ledger.add(
        [
            row("2026-12-01", "g:1", "main", 100, 10),
            row("2026-12-01", "f:9", "main", 50, 5),
            row("2026-12-01", NO_CHAT, "embeddings", 7, 0),
        ]
    )

    assert await ledger.totals("2026-12-01", "2026-12-01") == {
        "main": TokenCounts(150, 15, 0, 2),
        "embeddings": TokenCounts(7, 0, 0, 1),
    }
    assert await ledger.day_totals("2026-12-01") == {"g:1": 110, "f:9": 55, NO_CHAT: 7}
    assert await ledger.day_totals("2026-11-30") == {}


async def test_top_chats_rank_by_tokens_and_leave_out_the_calls_of_none(ledger) -> None:
    from nonebot_plugin_aimemory.engine.usage import NO_CHAT

    await ledger.add(
        [
            row("2026-12-01", "g:1", "main", 100, 10),
            row("2026-12-01", "g:2", "main", 300, 30),
            row("2026-12-01", "g:2", "reviewer", 50, 5),
            row("2026-12-01", "f:3", "main", 200, 20),
            row("2026-12-01", NO_CHAT, "embeddings", 10_000, 0),
        ]
    )

    top = await ledger.top_chats("2026-12-01", "2026-12-01", 2)

    assert [(chat, counts.total_tokens) for chat, counts in top] == [("g:2", 385), ("f:3", 220)]


async def test_an_empty_batch_writes_nothing(ledger) -> None:
    await ledger.add([])

    assert await ledger.totals("2000-01-01", "2999-12-31") == {}
