"""A search's vector ranking of chat-log rows without pgvector, on each backend: every row
of the session ranked by its exact cosine from the session's vectors held in memory, not
only the newest; vectors of another length ignored; rows embedded after the vectors were
read ranked by the next search; and a chat longer than the memory budget ranked by its
newest rows and the rows of the periods a query names."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

import pytest

from tests.store.test_chat_log_vectors import MODEL, random_unit, row

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore

SESSION = "g:1"
DIMENSIONS = 384


def row_vectors(store: ChatLogStore) -> ChatLogVectors:
    """The row vectors of MODEL over `store`, without an embedding model: the tests store
    vectors themselves."""
    from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors
    from nonebot_plugin_aimemory.engine.embeddings import NoEmbeddings, VectorMaker

    return ChatLogVectors(store.vectors, NoEmbeddings(), VectorMaker(MODEL.model, MODEL.convention))


def as_stored(vector: list[float]) -> list[float]:
    from nonebot_plugin_aimemory.store.packed_vectors import pack_vector, unpack_vector

    return unpack_vector(pack_vector(vector))


def true_cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_every_row_is_ranked_by_its_true_cosine_not_only_the_newest(
    any_chat_store,
) -> None:
    rng = random.Random(5)
    ids = await any_chat_store.insert_many([row(SESSION, f"第{i}句") for i in range(2500)])
    vectors = {row_id: random_unit(rng, DIMENSIONS) for row_id in ids}
    query = random_unit(rng, DIMENSIONS)
    # The oldest row is the closest: a scan of the newest rows would not reach it.
    vectors[ids[0]] = [
        q + 0.3 * n for q, n in zip(query, random_unit(rng, DIMENSIONS), strict=True)
    ]
    await any_chat_store.vectors.put(MODEL, list(vectors.items()))

    ranked = await row_vectors(any_chat_store).ranking(SESSION, query, [])

    assert ranked[0][0] == ids[0]
    assert sorted(row_id for row_id, _ in ranked) == sorted(ids)
    # The cosines of the vectors as stored (int8), computed in plain Python: the order;
    # and close to those of the float vectors.
    stored = {row_id: true_cosine(query, as_stored(vector)) for row_id, vector in vectors.items()}
    by_stored = sorted(ids, key=lambda i: -stored[i])
    assert [row_id for row_id, _ in ranked[:50]] == by_stored[:50]  # (float32 ties below)
    for row_id, similarity in ranked:
        assert similarity == pytest.approx(stored[row_id], abs=1e-5)
        assert similarity == pytest.approx(true_cosine(query, vectors[row_id]), abs=0.01)


async def test_vectors_of_another_length_are_ignored(any_chat_store) -> None:
    ids = await any_chat_store.insert_many([row(SESSION, str(i)) for i in range(4)])
    await any_chat_store.vectors.put(MODEL, [(ids[0], [1.0, 0.0]), (ids[1], [0.6, 0.8])])
    # Stored before the model's server changed its vectors' length, under the same name.
    await any_chat_store.vectors.put(MODEL, [(ids[2], [1.0, 0.0, 0.0]), (ids[3], [1.0])])

    ranked = await row_vectors(any_chat_store).ranking(SESSION, [1.0, 0.0], [])

    assert [row_id for row_id, _ in ranked] == [ids[0], ids[1]]
    assert [similarity for _, similarity in ranked] == pytest.approx([1.0, 0.6], abs=0.01)


async def test_rows_embedded_after_a_search_are_ranked_by_the_next(any_chat_store) -> None:
    ids = await any_chat_store.insert_many([row(SESSION, str(i)) for i in range(3)])
    await any_chat_store.vectors.put(MODEL, [(ids[1], [0.0, 1.0])])
    vectors = row_vectors(any_chat_store)
    first = await vectors.ranking(SESSION, [1.0, 0.0], [])
    # Another bot process on the same database embeds a newer row meanwhile.
    await any_chat_store.vectors.put(MODEL, [(ids[2], [1.0, 0.1])])

    second = await vectors.ranking(SESSION, [1.0, 0.0], [])

    assert [row_id for row_id, _ in first] == [ids[1]]
    assert [row_id for row_id, _ in second] == [ids[2], ids[1]]


async def test_a_chat_longer_than_the_memory_budget_keeps_its_newest_rows_and_named_periods(
    any_chat_store,
) -> None:
    from nonebot_plugin_aimemory.chatlog.row_matrices import RowMatrices
    from nonebot_plugin_aimemory.chatlog.row_matrix import ROW_OVERHEAD_BYTES
    from nonebot_plugin_aimemory.store.chat_log_ranking import PeriodBoost

    ids = await any_chat_store.insert_many([row(SESSION, str(i)) for i in range(30)])
    # Row n's angle to the query grows with n: the oldest rows are the closest.
    await any_chat_store.vectors.put(
        MODEL, [(row_id, [1.0, n / 30]) for n, row_id in enumerate(ids)]
    )
    vectors = row_vectors(any_chat_store)
    # Room for 13 rows of 2 dimensions: a session is read up to three quarters of it.
    budget = 13 * (2 + ROW_OVERHEAD_BYTES)
    vectors._matrices = RowMatrices(vectors.store, vectors.maker, budget_bytes=budget)

    newest = await vectors.ranking(SESSION, [1.0, 0.0], [])
    with_period = await vectors.ranking(SESSION, [1.0, 0.0], [PeriodBoost(ids[2], ids[3], 1.0)])

    assert [row_id for row_id, _ in newest] == ids[21:]
    assert [row_id for row_id, _ in with_period] == [ids[2], ids[3], *ids[21:]]


async def test_the_least_recently_searched_chat_is_given_up_when_the_budget_is_full(
    any_chat_store,
) -> None:
    from nonebot_plugin_aimemory.chatlog.row_matrices import RowMatrices
    from nonebot_plugin_aimemory.chatlog.row_matrix import BLOCK_ROWS, ROW_OVERHEAD_BYTES

    one_block = BLOCK_ROWS * (2 + ROW_OVERHEAD_BYTES)
    for session in ("g:1", "g:2"):
        ids = await any_chat_store.insert_many([row(session, str(i)) for i in range(3)])
        await any_chat_store.vectors.put(MODEL, [(row_id, [1.0, 0.5]) for row_id in ids])
    vectors = row_vectors(any_chat_store)
    vectors._matrices = RowMatrices(vectors.store, vectors.maker, budget_bytes=one_block * 3 // 2)

    await vectors.ranking("g:1", [1.0, 0.0], [])
    both = await vectors.ranking("g:2", [1.0, 0.0], [])
    again = await vectors.ranking("g:1", [1.0, 0.0], [])

    assert vectors.held_bytes == one_block  # one chat's block at a time
    assert len(both) == len(again) == 3


async def test_a_chat_not_searched_for_a_while_is_given_up_and_read_again(
    any_chat_store, monkeypatch
) -> None:
    from nonebot_plugin_aimemory.chatlog import row_matrices

    ids = await any_chat_store.insert_many([row(SESSION, str(i)) for i in range(2)])
    await any_chat_store.vectors.put(MODEL, [(ids[0], [1.0, 0.0])])
    vectors = row_vectors(any_chat_store)
    await vectors.ranking(SESSION, [1.0, 0.0], [])
    later = row_matrices.time.monotonic() + row_matrices.IDLE_SECONDS + 1
    monkeypatch.setattr(row_matrices.time, "monotonic", lambda: later)
    reads: list[int | None] = []
    real_newest = any_chat_store.vectors.newest

    async def newest(*args, **kwargs):
        reads.append(kwargs.get("below_id"))
        return await real_newest(*args, **kwargs)

    monkeypatch.setattr(any_chat_store.vectors, "newest", newest)

    ranked = await vectors.ranking(SESSION, [1.0, 0.0], [])

    assert reads == [None]  # read again from the newest row
    assert [row_id for row_id, _ in ranked] == [ids[0]]
