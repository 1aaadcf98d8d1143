"""The service's side of personal memory: a private memory is left out of every read that
does not include private ones, visibility changes persist, several scopes rank as one, and
personal scopes (per persona too) have their own cap."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.memory.service import MemoryService

BOB_SCOPE = "u:2101"
CAKE = "Bob最喜欢吃草莓蛋糕"
BIRTHDAY = "Bob的生日是五月二日"


async def saved(memory: MemoryService, content: str, *, private: bool = False) -> str:
    outcome = await memory.save(BOB_SCOPE, content, private=private)
    assert outcome.status == "saved"
    return outcome.memory.id


async def test_reads_without_private_ones_leave_them_out(memory: MemoryService) -> None:
    cake = await saved(memory, CAKE)
    birthday = await saved(memory, BIRTHDAY, private=True)

    listed = [r.id for r in await memory.list(BOB_SCOPE, include_private=False)]
    counted = await memory.count(BOB_SCOPE, include_private=False)
    found = [
        h.memory.id for h in await memory.search(BOB_SCOPE, "生日 蛋糕", include_private=False)
    ]
    relevant = [
        r.id for r in await memory.relevant(BOB_SCOPE, "Bob的生日", 3, include_private=False)
    ]
    got = await memory.get(BOB_SCOPE, birthday, include_private=False)

    assert (listed, counted, found, relevant, got) == ([cake], 1, [cake], [cake], None)
    assert {r.id for r in await memory.list(BOB_SCOPE)} == {cake, birthday}


async def test_writes_without_private_ones_cannot_reach_them(memory: MemoryService) -> None:
    birthday = await saved(memory, BIRTHDAY, private=True)

    updated = await memory.update(
        BOB_SCOPE, birthday, content="Bob的生日是六月一日", include_private=False
    )
    forgotten = await memory.forget(BOB_SCOPE, birthday, by_person=True, include_private=False)
    cleared = await memory.clear(BOB_SCOPE, include_private=False)

    assert (updated.status, forgotten, cleared) == ("not_found", None, 0)
    assert (await memory.get(BOB_SCOPE, birthday)).content == BIRTHDAY


async def test_a_deleted_private_memory_is_restored_only_with_private_ones(
    memory: MemoryService,
) -> None:
    birthday = await saved(memory, BIRTHDAY, private=True)
    await memory.forget(BOB_SCOPE, birthday, by_person=True)

    hidden = await memory.restore(BOB_SCOPE, birthday, include_private=False)
    restored = await memory.restore(BOB_SCOPE, birthday)

    assert hidden is None
    assert restored is not None
    assert restored.private


async def test_visibility_changes_persist(open_backend) -> None:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    database = await open_backend()
    try:
        memory = MemoryService(MemoryStore(database))
        birthday = await saved(memory, BIRTHDAY, private=True)
        public = await memory.set_private(BOB_SCOPE, birthday, False)
        missing = await memory.set_private(BOB_SCOPE, "uzzzz", True)
        reloaded = await MemoryService(MemoryStore(database)).get(
            BOB_SCOPE, birthday, include_private=False
        )
    finally:
        await database.close()

    assert public is not None
    assert not public.private
    assert missing is None
    assert reloaded is not None
    assert reloaded.content == BIRTHDAY


async def test_several_views_rank_as_one_and_mark_the_personal_hits(memory: MemoryService) -> None:
    from nonebot_plugin_aimemory.memory.personal import MemoryView

    chat = await memory.save("g:1", "群里聚餐订了一个草莓蛋糕")
    cake = await saved(memory, CAKE)
    await saved(memory, "Bob私下说他其实也爱芒果蛋糕", private=True)

    hits = await memory.search_in(
        [MemoryView("g:1"), MemoryView(BOB_SCOPE, include_private=False, personal=True)],
        "草莓蛋糕",
    )

    assert {(h.memory.id, h.personal) for h in hits} == {(chat.memory.id, False), (cake, True)}


async def test_personal_scopes_have_their_own_cap_under_every_persona(open_backend) -> None:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    database = await open_backend()
    try:
        memory = MemoryService(MemoryStore(database), max_entries=5, personal_max_entries=1)
        caps = [memory.max_entries_for(s) for s in ("g:1", "f:2", "u:2", "u:2#猫娘", "g:1#猫娘")]
        first = await memory.save("u:2#猫娘", CAKE)
        second = await memory.save("u:2#猫娘", BIRTHDAY)
    finally:
        await database.close()

    assert caps == [5, 5, 1, 1, 5]
    assert (first.status, second.status) == ("saved", "full")
    assert first.memory.id.startswith("u")
