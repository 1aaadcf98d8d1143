"""Vectors of chat-log rows as stored: packed small with the cosine kept, bound to their
session and model, never kept for a refused or removed row."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

MODEL = "multilingual-e5-small"
OTHER_MODEL = "bge-m3"
AT = "2026-11-30T00:00:00.000000Z"
OLD = "2026-01-01T00:00:00.000000Z"


def row(key: str, text: str, *, at: str = AT, refused: bool = False) -> ChatRow:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

    return ChatRow(key, at, "user", text, "2001", "小明", refused=refused)


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def random_unit(rng: random.Random, dimensions: int = 384) -> list[float]:
    return unit([rng.gauss(0, 1) for _ in range(dimensions)])


def packed(vector: list[float]) -> bytes:
    from nonebot_plugin_aimemory.store.chat_log_vectors import pack_vector

    return pack_vector(vector)


# ---------------------------------------------------------------- packing


def test_a_packed_vector_takes_one_byte_a_component_and_four_more() -> None:
    assert len(packed(random_unit(random.Random(1)))) == 4 + 384


def test_the_cosine_of_packed_vectors_is_the_cosine_of_the_floats() -> None:
    from nonebot_plugin_aimemory.store.chat_log_vectors import QueryVector

    rng = random.Random(7)
    query = random_unit(rng)
    prepared = QueryVector.of(query)
    for _ in range(50):
        stored = random_unit(rng)
        exact = sum(a * b for a, b in zip(query, stored, strict=True))

        assert prepared.similarity(packed(stored)) == pytest.approx(exact, abs=0.005)


def test_the_cosine_does_not_depend_on_the_query_vectors_length() -> None:
    from nonebot_plugin_aimemory.store.chat_log_vectors import QueryVector

    stored = packed([0.6, 0.8, 0.0])

    assert QueryVector.of([3.0, 4.0, 0.0]).similarity(stored) == pytest.approx(1.0, abs=0.01)
    assert QueryVector.of([0.0, 0.0, 2.0]).similarity(stored) == pytest.approx(0.0, abs=0.01)


def test_a_vector_of_another_length_or_a_zero_vector_is_not_similar() -> None:
    from nonebot_plugin_aimemory.store.chat_log_vectors import QueryVector

    query = QueryVector.of([1.0, 0.0, 0.0])

    assert query.similarity(packed([1.0, 0.0, 0.0, 0.0])) == 0.0
    assert query.similarity(packed([0.0, 0.0, 0.0])) == 0.0


def test_unpacking_gives_the_unit_vector_back() -> None:
    from nonebot_plugin_aimemory.store.chat_log_vectors import unpack_vector

    assert unpack_vector(packed([0.0, 2.0, 0.0])) == [0.0, 1.0, 0.0]


# ---------------------------------------------------------------- the table


async def test_vectors_are_read_back_by_session_and_model_newest_first(any_chat_store) -> None:
    ids = await any_chat_store.insert_many(
        [row("g:1", "一"), row("g:2", "二"), row("g:1", "三"), row("g:1", "四")]
    )
    await any_chat_store.vectors.put(MODEL, [(i, packed([1.0, float(i)])) for i in ids[:3]])
    await any_chat_store.vectors.put(OTHER_MODEL, [(ids[3], packed([0.0, 1.0]))])

    found = await any_chat_store.vectors.newest("g:1", MODEL, 10)

    assert [row_id for row_id, _ in found] == [ids[2], ids[0]]
    assert await any_chat_store.vectors.newest("g:3", MODEL, 10) == []
    assert await any_chat_store.vectors.count("g:1", OTHER_MODEL) == 1


async def test_vectors_within_an_id_span_are_only_those(any_chat_store) -> None:
    ids = await any_chat_store.insert_many([row("g:1", str(i)) for i in range(5)])
    await any_chat_store.vectors.put(MODEL, [(i, packed([1.0])) for i in ids])

    found = await any_chat_store.vectors.newest("g:1", MODEL, 10, within=(ids[1], ids[2]))

    assert [row_id for row_id, _ in found] == [ids[2], ids[1]]


async def test_a_vector_replaces_the_rows_older_one(any_chat_store) -> None:
    from nonebot_plugin_aimemory.store.chat_log_vectors import unpack_vector

    (row_id,) = await any_chat_store.insert_many([row("g:1", "一")])
    await any_chat_store.vectors.put(OTHER_MODEL, [(row_id, packed([1.0, 0.0]))])

    await any_chat_store.vectors.put(MODEL, [(row_id, packed([0.0, 1.0]))])

    ((_, vector),) = await any_chat_store.vectors.newest("g:1", MODEL, 10)
    assert unpack_vector(vector) == [0.0, 1.0]
    assert await any_chat_store.vectors.count("g:1", OTHER_MODEL) == 0


async def test_a_refused_or_missing_row_gets_no_vector(any_chat_store) -> None:
    ids = await any_chat_store.insert_many(
        [row("g:1", "被拦下的话", refused=True), row("g:1", "好的")]
    )

    stored = await any_chat_store.vectors.put(
        MODEL, [(ids[0], packed([1.0])), (999, packed([1.0]))]
    )

    assert stored == 0
    assert await any_chat_store.vectors.count("g:1", MODEL) == 0


async def test_rows_without_a_vector_are_listed_newest_first_skipping_refused_and_empty(
    any_chat_store,
) -> None:
    ids = await any_chat_store.insert_many(
        [
            row("g:1", "一"),
            row("g:2", "二"),
            row("g:1", "  "),
            row("g:1", "被拦下的话", refused=True),
            row("g:1", "三"),
            row("g:1", "四"),
        ]
    )
    await any_chat_store.vectors.put(MODEL, [(ids[5], packed([1.0]))])
    await any_chat_store.vectors.put(OTHER_MODEL, [(ids[4], packed([1.0]))])

    missing = await any_chat_store.vectors.unembedded(MODEL, 10)
    below = await any_chat_store.vectors.unembedded(MODEL, 10, below_id=ids[1])

    assert [(r.id, r.session_key, r.text) for r in missing] == [
        (ids[4], "g:1", "三"),
        (ids[1], "g:2", "二"),
        (ids[0], "g:1", "一"),
    ]
    assert [r.id for r in below] == [ids[0]]


async def test_retention_removes_the_vectors_of_the_rows_it_removes(any_chat_store) -> None:
    ids = await any_chat_store.insert_many([row("g:1", "旧话", at=OLD), row("g:1", "新话")])
    await any_chat_store.vectors.put(MODEL, [(i, packed([1.0])) for i in ids])

    await any_chat_store.delete_older_than("2026-06-01T00:00:00.000000Z")

    assert [row_id for row_id, _ in await any_chat_store.vectors.newest("g:1", MODEL, 10)] == [
        ids[1]
    ]


async def test_a_row_marked_refused_loses_its_vector(any_chat_store) -> None:
    written = row("g:1", "后来被拦下的话")
    ids = await any_chat_store.insert_many([written, row("g:1", "好的")])
    await any_chat_store.vectors.put(MODEL, [(i, packed([1.0])) for i in ids])

    await any_chat_store.mark_refused([written])

    assert [row_id for row_id, _ in await any_chat_store.vectors.newest("g:1", MODEL, 10)] == [
        ids[1]
    ]
    assert [r.id for r in await any_chat_store.vectors.unembedded(MODEL, 10)] == []
