"""Provenance is stored with a memory and read back after a restart, on each backend, and
an update changes what a memory says, never where it came from."""

from __future__ import annotations


async def test_provenance_is_read_back_after_a_restart(memory, open_backend) -> None:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore
    from nonebot_plugin_aimemory.store.provenance import Person, Provenance

    told = Provenance(
        "quoted", said_by=Person("2002", "小红"), told_by=Person("2001", "小明"), chat="g:1"
    )
    saved = (await memory.save("g:1", "小红对花生过敏", provenance=told)).memory
    unknown = (await memory.save("g:1", "群主是老王")).memory
    assert saved is not None
    assert unknown is not None

    database = await open_backend()
    try:
        records = {r.id: r for r in await MemoryService(MemoryStore(database)).list("g:1")}
    finally:
        await database.close()

    assert records[saved.id].provenance == told
    assert records[unknown.id].provenance == Provenance()


async def test_an_update_keeps_where_the_memory_came_from(memory) -> None:
    from nonebot_plugin_aimemory.store.provenance import Person, Provenance

    said = Provenance("said", said_by=Person("2001", "小明"), chat="g:1")
    saved = (await memory.save("g:1", "小明喜欢爬山", provenance=said)).memory
    assert saved is not None

    updated = await memory.update("g:1", saved.id, content="小明喜欢爬山和游泳")

    assert updated.memory is not None
    assert updated.memory.provenance == said
    (stored,) = await memory.store.load_scope("g:1")
    assert stored.provenance == said
