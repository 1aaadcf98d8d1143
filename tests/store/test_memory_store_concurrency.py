"""Two connections to one database writing the same scope at once, as two bot processes
would: each checks a scope's rules and writes in one transaction, and the rules hold
(on PostgreSQL by the scope's advisory lock, on SQLite by BEGIN IMMEDIATE)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore
    from tests.store.conftest import Opener

SCOPE = "g:1"
NOW = "2024-05-01T08:00:00.000000Z"
ROUNDS = 20


def record(memory_id: str, content: str) -> MemoryRecord:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

    return MemoryRecord(memory_id, content, content, created_at=NOW, updated_at=NOW)


@pytest.fixture
async def two_stores(open_backend: Opener) -> AsyncIterator[tuple[MemoryStore, MemoryStore]]:
    """One store per connection, over the same database."""
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    first, second = await open_backend(), await open_backend()
    try:
        yield MemoryStore(first), MemoryStore(second)
    finally:
        await first.close()
        await second.close()


async def live(store: MemoryStore, scope: str = SCOPE) -> list[MemoryRecord]:
    return [r for r in await store.load_scope(scope) if not r.deleted]


async def test_the_same_content_saved_by_two_connections_at_once_is_stored_once(
    two_stores: tuple[MemoryStore, MemoryStore],
) -> None:
    first, second = two_stores

    outcomes = [
        await asyncio.gather(
            first.insert(SCOPE, record(f"a{i}", f"第{i}条")),
            second.insert(SCOPE, record(f"b{i}", f"第{i}条")),
        )
        for i in range(ROUNDS)
    ]

    assert all(sorted(pair) == ["duplicate", "inserted"] for pair in outcomes), outcomes
    assert len(await live(first)) == ROUNDS


async def test_two_connections_filling_a_scope_at_once_stop_at_the_cap(
    two_stores: tuple[MemoryStore, MemoryStore],
) -> None:
    first, second = two_stores
    cap = 5

    for round_ in range(ROUNDS):
        scope = f"g:{100 + round_}"
        outcomes = await asyncio.gather(
            *(first.insert(scope, record(f"a{i}", f"甲{i}"), cap=cap) for i in range(cap)),
            *(second.insert(scope, record(f"b{i}", f"乙{i}"), cap=cap) for i in range(cap)),
        )

        assert sorted(outcomes) == ["full"] * cap + ["inserted"] * cap
        assert len(await live(first, scope)) == cap


async def test_two_connections_rewording_two_memories_alike_at_once_keep_one(
    two_stores: tuple[MemoryStore, MemoryStore],
) -> None:
    first, second = two_stores
    for i in range(ROUNDS):
        await first.insert(SCOPE, record(f"a{i}", f"甲{i}"))
        await first.insert(SCOPE, record(f"b{i}", f"乙{i}"))

    outcomes = [
        await asyncio.gather(
            first.update(SCOPE, record(f"a{i}", f"同一件事{i}")),
            second.update(SCOPE, record(f"b{i}", f"同一件事{i}")),
        )
        for i in range(ROUNDS)
    ]

    assert all(sorted(pair) == ["duplicate", "updated"] for pair in outcomes), outcomes
    contents = [r.normalized for r in await live(first)]
    assert len(contents) == len(set(contents)) == 2 * ROUNDS


async def test_a_restore_racing_a_save_of_its_content_leaves_one_live_copy(
    two_stores: tuple[MemoryStore, MemoryStore],
) -> None:
    first, second = two_stores
    for i in range(ROUNDS):
        await first.insert(SCOPE, record(f"a{i}", f"第{i}条"))
    await first.mark_deleted(SCOPE, [f"a{i}" for i in range(ROUNDS)], tombstone=False)

    for i in range(ROUNDS):
        await asyncio.gather(
            first.restore(SCOPE, f"a{i}", f"第{i}条"),
            second.insert(SCOPE, record(f"b{i}", f"第{i}条")),
        )

    contents = [r.normalized for r in await live(first)]
    assert len(contents) == len(set(contents)) == ROUNDS
