"""Writes to one scope are serialised: concurrent saves lose nothing and never store the
same content twice."""

from __future__ import annotations

import asyncio

SCOPE = "g:1101"


async def test_twenty_concurrent_different_saves_are_all_stored(memory) -> None:
    contents = [f"第{i}号群友的生日在{i % 12 + 1}月{i + 1}日" for i in range(20)]

    outcomes = await asyncio.gather(*(memory.save(SCOPE, c) for c in contents))

    assert [o.status for o in outcomes] == ["saved"] * 20
    ids = {o.memory.id for o in outcomes}
    assert len(ids) == 20
    rows = await memory.store.load_scope(SCOPE)
    assert sorted(r.content for r in rows) == sorted(contents)
    assert {r.id for r in rows} == ids


async def test_twenty_concurrent_identical_saves_store_exactly_one(memory) -> None:
    outcomes = await asyncio.gather(
        *(memory.save(SCOPE, "小明(2001)吃素，不吃任何肉类") for _ in range(20))
    )

    statuses = sorted(o.status for o in outcomes)
    assert statuses == ["duplicate"] * 19 + ["saved"]
    assert len({o.memory.id for o in outcomes}) == 1
    assert len(await memory.store.load_scope(SCOPE)) == 1


async def test_concurrent_saves_respect_the_cap(memory) -> None:
    memory.max_entries = 5

    outcomes = await asyncio.gather(
        *(memory.save(SCOPE, f"第{i}条互不相同的记忆：编号{i * 13}") for i in range(12))
    )

    assert sorted(o.status for o in outcomes) == ["full"] * 7 + ["saved"] * 5
    assert len(await memory.store.load_scope(SCOPE)) == 5


async def test_concurrent_saves_to_different_scopes_do_not_mix(memory) -> None:
    scopes = [f"g:{1110 + i}" for i in range(5)] + [f"f:{1120 + i}" for i in range(5)]

    await asyncio.gather(*(memory.save(scope, f"{scope} 的专属记忆") for scope in scopes))

    for scope in scopes:
        rows = await memory.store.load_scope(scope)
        assert [r.content for r in rows] == [f"{scope} 的专属记忆"]
