"""Vectors of chat-log rows as stored: packed small with the cosine kept, bound to their
session and model, never kept for a refused or removed row."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

MODEL_NAME = "multilingual-e5-small"
AT = "2026-11-30T00:00:00.000000Z"
OLD = "2026-01-01T00:00:00.000000Z"


@dataclass(frozen=True)
class Maker:
    """The fields of engine/embeddings.py's VectorMaker, which the store reads (the plugin
    is imported only once NoneBot is set up, after collection)."""

    model: str
    convention: str


MODEL = Maker(MODEL_NAME, 'prefixes ["query: ", "passage: "]')
OTHER_MODEL = Maker("bge-m3", "none")
# The same model told a query from a stored text otherwise: other vectors.
OTHER_PREFIXES = Maker(MODEL_NAME, "none")


def row(key: str, text: str, *, at: str = AT, refused: bool = False) -> ChatRow:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

    return ChatRow(key, at, "user", text, "2001", "小明", refused=refused)


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def random_unit(rng: random.Random, dimensions: int = 384) -> list[float]:
    return unit([rng.gauss(0, 1) for _ in range(dimensions)])


def packed(vector: list[float]) -> bytes:
    from nonebot_plugin_aimemory.store.packed_vectors import pack_vector

    return pack_vector(vector)


# ---------------------------------------------------------------- packing


def test_a_packed_vector_takes_one_byte_a_component_and_four_more() -> None:
    assert len(packed(random_unit(random.Random(1)))) == 4 + 384


def test_the_cosine_of_packed_vectors_is_the_cosine_of_the_floats() -> None:
    from nonebot_plugin_aimemory.store.packed_vectors import unpack_vector

    rng = random.Random(7)
    query = random_unit(rng)
    for _ in range(50):
        stored = random_unit(rng)
        exact = sum(a * b for a, b in zip(query, stored, strict=True))

        kept = sum(a * b for a, b in zip(query, unpack_vector(packed(stored)), strict=True))
        assert kept == pytest.approx(exact, abs=0.005)


def test_unpacking_gives_the_unit_vector_back() -> None:
    from nonebot_plugin_aimemory.store.packed_vectors import unpack_vector

    assert unpack_vector(packed([0.0, 2.0, 0.0])) == [0.0, 1.0, 0.0]


# ---------------------------------------------------------------- the table


async def test_vectors_are_read_back_by_session_and_model_newest_first(any_chat_store) -> None:
    ids = await any_chat_store.insert_many(
        [row("g:1", "一"), row("g:2", "二"), row("g:1", "三"), row("g:1", "四")]
    )
    await any_chat_store.vectors.put(MODEL, [(i, [1.0, float(i)]) for i in ids[:3]])
    await any_chat_store.vectors.put(OTHER_MODEL, [(ids[3], [0.0, 1.0])])

    found = await any_chat_store.vectors.newest("g:1", MODEL, 10)

    assert [row_id for row_id, _ in found] == [ids[2], ids[0]]
    assert await any_chat_store.vectors.newest("g:3", MODEL, 10) == []
    assert await any_chat_store.vectors.count("g:1", OTHER_MODEL) == 1


async def test_vectors_within_an_id_span_are_only_those(any_chat_store) -> None:
    ids = await any_chat_store.insert_many([row("g:1", str(i)) for i in range(5)])
    await any_chat_store.vectors.put(MODEL, [(i, [1.0]) for i in ids])

    found = await any_chat_store.vectors.newest("g:1", MODEL, 10, within=(ids[1], ids[2]))

    assert [row_id for row_id, _ in found] == [ids[2], ids[1]]


async def test_a_vector_replaces_the_rows_older_one(any_chat_store) -> None:
    from nonebot_plugin_aimemory.store.packed_vectors import unpack_vector

    (row_id,) = await any_chat_store.insert_many([row("g:1", "一")])
    await any_chat_store.vectors.put(OTHER_MODEL, [(row_id, [1.0, 0.0])])

    await any_chat_store.vectors.put(MODEL, [(row_id, [0.0, 1.0])])

    ((_, vector),) = await any_chat_store.vectors.newest("g:1", MODEL, 10)
    assert unpack_vector(vector) == [0.0, 1.0]
    assert await any_chat_store.vectors.count("g:1", OTHER_MODEL) == 0


async def test_a_refused_or_missing_row_gets_no_vector(any_chat_store) -> None:
    ids = await any_chat_store.insert_many(
        [row("g:1", "被拦下的话", refused=True), row("g:1", "好的")]
    )

    stored = await any_chat_store.vectors.put(MODEL, [(ids[0], [1.0]), (999, [1.0])])

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
    await any_chat_store.vectors.put(MODEL, [(ids[5], [1.0])])
    await any_chat_store.vectors.put(OTHER_MODEL, [(ids[4], [1.0])])

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
    await any_chat_store.vectors.put(MODEL, [(i, [1.0]) for i in ids])

    await any_chat_store.delete_older_than("2026-06-01T00:00:00.000000Z")

    assert [row_id for row_id, _ in await any_chat_store.vectors.newest("g:1", MODEL, 10)] == [
        ids[1]
    ]


async def test_a_row_marked_refused_loses_its_vector(any_chat_store) -> None:
    written = row("g:1", "后来被拦下的话")
    ids = await any_chat_store.insert_many([written, row("g:1", "好的")])
    await any_chat_store.vectors.put(MODEL, [(i, [1.0]) for i in ids])

    await any_chat_store.mark_refused([written])

    assert [row_id for row_id, _ in await any_chat_store.vectors.newest("g:1", MODEL, 10)] == [
        ids[1]
    ]
    assert [r.id for r in await any_chat_store.vectors.unembedded(MODEL, 10)] == []


async def test_a_vector_of_the_same_model_with_other_prefixes_is_another_vector(
    any_chat_store,
) -> None:
    ids = await any_chat_store.insert_many([row("g:1", "一"), row("g:1", "二")])
    await any_chat_store.vectors.put(OTHER_PREFIXES, [(i, [1.0]) for i in ids])
    await any_chat_store.vectors.put(MODEL, [(ids[1], [1.0])])

    assert [r for r, _ in await any_chat_store.vectors.newest("g:1", MODEL, 10)] == [ids[1]]
    assert [r.id for r in await any_chat_store.vectors.unembedded(MODEL, 10)] == [ids[0]]
    assert await any_chat_store.vectors.unembedded_count(MODEL) == 1
    assert await any_chat_store.vectors.count("g:1", OTHER_PREFIXES) == 1


async def test_vectors_are_read_below_or_after_an_id_and_by_their_length(
    any_chat_store,
) -> None:
    ids = await any_chat_store.insert_many([row("g:1", str(i)) for i in range(5)])
    await any_chat_store.insert_many([row("g:2", "别处")])
    await any_chat_store.vectors.put(MODEL, [(i, [1.0, 0.5, 0.0]) for i in ids[:4]])
    await any_chat_store.vectors.put(MODEL, [(ids[4], [1.0, 0.5])])  # another length

    below = await any_chat_store.vectors.newest("g:1", MODEL, 2, below_id=ids[3], dimensions=3)
    after = await any_chat_store.vectors.after("g:1", MODEL, 3, ids[0], 10)
    shorter = await any_chat_store.vectors.after("g:1", MODEL, 2, 0, 10)
    whole = await any_chat_store.vectors.by_ids("g:1", MODEL, [ids[0], ids[2], 999])

    assert [row_id for row_id, _ in below] == [ids[2], ids[1]]
    assert [row_id for row_id, _ in after] == [ids[1], ids[2], ids[3]]
    assert [row_id for row_id, _ in shorter] == [ids[4]]
    assert sorted(row_id for row_id, _ in whole) == [ids[0], ids[2]]
    assert await any_chat_store.vectors.after("g:1", OTHER_MODEL, 3, 0, 10) == []


async def test_no_sketch_is_stored_and_an_earlier_one_is_cleared(any_chat_store) -> None:
    (row_id,) = await any_chat_store.insert_many([row("g:1", "一")])
    await any_chat_store.vectors.put(MODEL, [(row_id, [1.0, 0.0])])
    database = any_chat_store.vectors.database
    # As an earlier release left it: the vector's sign bits beside it.
    await database.write_one("UPDATE chat_log_vectors SET sketch = ?", (b"\x01",))

    await any_chat_store.vectors.put(MODEL, [(row_id, [0.0, 1.0])])

    assert await database.read("SELECT sketch FROM chat_log_vectors") == [(None,)]
