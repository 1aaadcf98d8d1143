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


async def test_a_scope_is_not_evicted_between_one_writer_and_the_next(memory, monkeypatch) -> None:
    """The narrowest window: another scope finishes loading (and evicts the oldest cached
    scope) in the very instant the first save hands the scope's lock to the queued second
    save. A third save arriving then must still queue behind the second."""
    from nonebot_plugin_aimemory.memory import index as memory_index

    monkeypatch.setattr(memory_index, "MAX_CACHED_SCOPES", 2)
    memory.max_entries = 2
    await memory.count(SCOPE)
    await memory.count("g:3001")  # the cache is full: [SCOPE, g:3001]
    at_gate, released = asyncio.Event(), asyncio.Event()

    async def index_once_released(func, /, *args, **kwargs):
        # Given: the load of g:3002 indexes its entries only once the first save has written.
        at_gate.set()
        await released.wait()
        return func(*args, **kwargs)

    insert = memory.store.insert
    inserts = 0

    async def insert_in_turn(scope, record, *, cap=None) -> str:
        nonlocal inserts
        inserts += 1
        if inserts == 2:
            await asyncio.sleep(0.05)  # the second save is still writing when the third comes
        stored = await insert(scope, record, cap=cap)
        if inserts == 1:
            await memory.count("g:3001")  # another chat reads: SCOPE is now the oldest cached
            released.set()  # the load resumes just before this save releases the lock
        return stored

    monkeypatch.setattr(asyncio, "to_thread", index_once_released)
    monkeypatch.setattr(memory.store, "insert", insert_in_turn)
    loading = asyncio.ensure_future(memory.count("g:3002"))
    await at_gate.wait()

    # When two saves queue on the scope, the load completes between them, and a third save
    # arrives after it...
    first_two = asyncio.gather(
        memory.save(SCOPE, "小明(2001)吃素"), memory.save(SCOPE, "群里每周五开例会")
    )
    await loading
    third = await memory.save(SCOPE, "小红(2002)住在杭州")
    statuses = [o.status for o in await first_two]

    # ...then the third finds the scope full: the cap of two holds.
    assert (statuses, third.status) == (["saved", "saved"], "full")
    assert len(await memory.store.load_scope(SCOPE)) == 2
