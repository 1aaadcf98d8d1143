"""The memories table on both backends: every column round-trips, and the rules a write
checks in its own transaction (no content twice, none a person deleted, the cap) hold."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore
    from tests.store.conftest import Opener

SCOPE = "g:1"
NOW = "2024-05-01T08:00:00.000000Z"


def record(memory_id: str, content: str, **fields: object) -> MemoryRecord:
    """A memory whose normalised form is its content."""
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

    return MemoryRecord(
        id=memory_id,
        content=content,
        normalized=content,
        created_at=NOW,
        updated_at=NOW,
        **fields,  # type: ignore[arg-type]
    )


@pytest.fixture
async def store(any_database) -> MemoryStore:
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    return MemoryStore(any_database)


async def test_every_column_survives_a_reopen(open_backend: Opener) -> None:
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    given = record(
        "u1a",
        "小明爱吃草莓",
        tags=["饮食", "水果"],
        user_id="10001",
        embedding=[0.25, -1.5],
        evidence=[3, 7],
        source="review",
        private=True,
    )
    database = await open_backend()
    try:
        assert await MemoryStore(database).insert("u:10001", given) == "inserted"
    finally:
        await database.close()

    database = await open_backend()
    try:
        (loaded,) = await MemoryStore(database).load_scope("u:10001")
    finally:
        await database.close()

    assert loaded == given


async def test_live_content_is_not_inserted_twice(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "小明吃素"))

    outcome = await store.insert(SCOPE, record("b", "小明吃素"))

    assert outcome == "duplicate"
    assert [r.id for r in await store.load_scope(SCOPE)] == ["a"]


async def test_the_same_content_may_live_in_another_scope(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "小明吃素"))

    assert await store.insert("g:2", record("a", "小明吃素")) == "inserted"


async def test_tombstoned_content_is_not_inserted(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "小明吃素", user_id="10001"))
    await store.mark_deleted(SCOPE, ["a"], tombstone=True)

    outcome = await store.insert(SCOPE, record("b", "小明吃素"))

    assert outcome == "tombstoned"
    (tombstone,) = await store.load_tombstone_records(SCOPE)
    assert (tombstone.normalized, tombstone.memory_id, tombstone.user_id) == (
        "小明吃素",
        "a",
        "10001",
    )


async def test_an_insert_at_the_cap_is_refused_and_a_deleted_memory_does_not_count(
    store: MemoryStore,
) -> None:
    await store.insert(SCOPE, record("a", "一"), cap=2)
    await store.insert(SCOPE, record("b", "二"), cap=2)

    full = await store.insert(SCOPE, record("c", "三"), cap=2)
    await store.mark_deleted(SCOPE, ["a"], tombstone=False)
    after_delete = await store.insert(SCOPE, record("c", "三"), cap=2)

    assert (full, after_delete) == ("full", "inserted")


async def test_an_update_writes_every_mutable_field(store: MemoryStore) -> None:
    from dataclasses import replace

    await store.insert(SCOPE, record("a", "小明吃素"))
    changed = replace(
        record("a", "小明不吃肉"),
        tags=["饮食"],
        user_id="10001",
        embedding=[1.0],
        evidence=[9],
        updated_at="2024-05-02T08:00:00.000000Z",
        private=True,
    )

    outcome = await store.update(SCOPE, changed)

    assert outcome == "updated"
    assert await store.load_scope(SCOPE) == [changed]


async def test_an_update_to_another_memory_s_content_is_a_duplicate(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "小明吃素"))
    await store.insert(SCOPE, record("b", "小红吃素"))

    outcome = await store.update(SCOPE, record("b", "小明吃素"))

    assert outcome == "duplicate"
    assert sorted(r.content for r in await store.load_scope(SCOPE)) == ["小明吃素", "小红吃素"]


async def test_an_update_to_tombstoned_content_is_refused(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "小明吃素"))
    await store.insert(SCOPE, record("b", "小红吃素"))
    await store.mark_deleted(SCOPE, ["a"], tombstone=True)

    assert await store.update(SCOPE, record("b", "小明吃素")) == "tombstoned"


async def test_an_update_never_undeletes_a_memory_deleted_meanwhile(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "小明吃素"))
    await store.mark_deleted(SCOPE, ["a"], tombstone=True)

    outcome = await store.update(SCOPE, record("a", "小明吃素", tags=["饮食"]))

    assert outcome == "missing"
    (stored,) = await store.load_scope(SCOPE)
    assert stored.deleted
    assert await store.update(SCOPE, record("zz", "别的")) == "missing"


async def test_a_restore_undeletes_and_lifts_the_tombstone(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "小明吃素"))
    await store.mark_deleted(SCOPE, ["a"], tombstone=True)

    restored = await store.restore(SCOPE, "a", "小明吃素")

    assert restored
    (stored,) = await store.load_scope(SCOPE)
    assert not stored.deleted
    assert await store.load_tombstones(SCOPE) == {}


async def test_a_restore_whose_content_lives_again_only_lifts_the_tombstone(
    store: MemoryStore,
) -> None:
    await store.insert(SCOPE, record("a", "小明吃素"))
    await store.mark_deleted(SCOPE, ["a"], tombstone=False)
    await store.insert(SCOPE, record("b", "小明吃素"))

    restored = await store.restore(SCOPE, "a", "小明吃素")

    assert not restored
    assert [r.id for r in await store.load_scope(SCOPE) if not r.deleted] == ["b"]


async def test_a_restore_at_the_cap_changes_nothing(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "一"))
    await store.mark_deleted(SCOPE, ["a"], tombstone=True)
    await store.insert(SCOPE, record("b", "二"))

    restored = await store.restore(SCOPE, "a", "一", cap=1)

    assert not restored
    assert await store.load_tombstones(SCOPE) == {"一": "a"}


async def test_a_restore_of_a_purged_memory_is_false(store: MemoryStore) -> None:
    assert not await store.restore(SCOPE, "gone", "不在了")


async def test_the_purge_returns_what_it_deleted_and_keeps_the_tombstones(
    store: MemoryStore,
) -> None:
    await store.insert(SCOPE, record("a", "旧的"))
    await store.insert("u:2", record("ub", "也旧"))
    await store.insert(SCOPE, record("c", "还在"))
    await store.mark_deleted(SCOPE, ["a"], tombstone=True)
    await store.mark_deleted("u:2", ["ub"], tombstone=False)

    purged = await store.purge_deleted(before="9999-01-01T00:00:00.000000Z")

    assert sorted(purged) == [(SCOPE, "a"), ("u:2", "ub")]
    assert [r.id for r in await store.load_scope(SCOPE)] == ["c"]
    assert await store.load_tombstones(SCOPE) == {"旧的": "a"}


async def test_the_purge_spares_recent_deletions(store: MemoryStore) -> None:
    await store.insert(SCOPE, record("a", "刚删的"))
    await store.mark_deleted(SCOPE, ["a"], tombstone=False)

    assert await store.purge_deleted(before="2000-01-01T00:00:00.000000Z") == []


async def test_memories_without_a_vector_are_listed_by_scope_until_given_one(
    store: MemoryStore,
) -> None:
    await store.insert(SCOPE, record("a", "一"))
    await store.insert(SCOPE, record("b", "二", embedding=[0.5]))
    await store.insert("g:2", record("c", "三"))
    await store.insert("g:2", record("d", "四"))
    await store.mark_deleted("g:2", ["d"], tombstone=False)

    missing = await store.missing_embeddings(limit=10)
    await store.set_embeddings(SCOPE, {"a": [0.1, 0.2]})
    await store.set_embeddings("g:2", {"c": [0.3]})

    assert sorted(missing) == [(SCOPE, [("a", "一")]), ("g:2", [("c", "三")])]
    assert await store.missing_embeddings(limit=10) == []
    assert {r.id: r.embedding for r in await store.load_scope(SCOPE)} == {
        "a": [0.1, 0.2],
        "b": [0.5],
    }


async def test_a_memory_is_made_private_and_public_again(store: MemoryStore) -> None:
    await store.insert("u:2", record("ua", "生日是五月"))

    await store.set_private("u:2", "ua", True, updated_at="2024-05-02T00:00:00.000000Z")
    (private,) = await store.load_scope("u:2")
    await store.set_private("u:2", "ua", False, updated_at="2024-05-03T00:00:00.000000Z")
    (public,) = await store.load_scope("u:2")

    assert (private.private, private.updated_at) == (True, "2024-05-02T00:00:00.000000Z")
    assert not public.private


async def test_vectors_of_another_model_or_prefixes_are_not_read_and_are_made_again(
    any_database,
) -> None:
    from nonebot_plugin_aimemory.engine.embeddings import VectorMaker
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    e5 = VectorMaker("multilingual-e5-small", 'prefixes ["query: ", "passage: "]')
    e5_bare = VectorMaker("multilingual-e5-small", "none")
    before = MemoryStore(any_database, e5)
    await before.insert(SCOPE, record("a", "一", embedding=[0.1, 0.2]))
    await before.insert(SCOPE, record("b", "二"))
    await before.set_embeddings(SCOPE, {"b": [0.3, 0.4]})

    after = MemoryStore(any_database, e5_bare)
    stale = await after.missing_embeddings(limit=10)
    loaded = {r.id: r.embedding for r in await after.load_scope(SCOPE)}
    await after.set_embeddings(SCOPE, {"a": [0.5, 0.6]})

    assert [(scope, sorted(found)) for scope, found in stale] == [
        (SCOPE, [("a", "一"), ("b", "二")])
    ]
    assert loaded == {"a": None, "b": None}
    assert await after.missing_embeddings(limit=10) == [(SCOPE, [("b", "二")])]
    assert {r.id: r.embedding for r in await after.load_scope(SCOPE)} == {
        "a": [0.5, 0.6],
        "b": None,
    }
    # The first maker's vector of "b" is still its own.
    assert {r.id: r.embedding for r in await before.load_scope(SCOPE)}["b"] == [0.3, 0.4]
