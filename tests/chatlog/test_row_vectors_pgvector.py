"""A search's vector ranking of chat-log rows on PostgreSQL with pgvector: asked of the
database over the whole session (no window of newest rows), the rows of the named periods
first, bound to the session, the model and the query's length; rows stored before pgvector
found in-process until their pgvector vectors are filled in, then by the database; and on
a server without pgvector, one log line and the in-process ranking."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import psycopg
import pytest

from tests.chatlog.test_row_vectors import (
    BASKETBALL,
    OTHERS,
    PARAPHRASE,
    search,
    with_row_vectors,
    write,
)
from tests.chatlog.test_row_vectors import row_vectors as plugin_row_vectors
from tests.store.test_chat_log_vectors import MODEL, OTHER_MODEL, OTHER_PREFIXES, random_unit, row

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from tests.fakes.postgres import PostgresServer

SESSION = "g:1"
DIMENSIONS = 384


async def open_store(url: str) -> ChatLogStore:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase

    return ChatLogStore(await PostgresDatabase.open(url))


def create_pgvector(server: PostgresServer, url: str) -> None:
    """What a database administrator does: the app role may not (not a trusted extension)."""
    with psycopg.connect(server.admin_url(url), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")


@pytest.fixture
async def store(pgvector_server: PostgresServer, pgvector_url: str) -> AsyncIterator:
    """A chat-log store on a database with pgvector."""
    create_pgvector(pgvector_server, pgvector_url)
    opened = await open_store(pgvector_url)
    yield opened
    await opened.database.close()


async def started(store: ChatLogStore) -> ChatLogVectors:
    """The row vectors of MODEL over `store`, started and settled (pgvector checked, vectors
    stored before it filled in). No embedding model: the tests store vectors themselves."""
    from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors
    from nonebot_plugin_aimemory.engine.embeddings import NoEmbeddings, VectorMaker

    vectors = ChatLogVectors(
        store.vectors, NoEmbeddings(), VectorMaker(MODEL.model, MODEL.convention)
    )
    vectors.start()
    await vectors.settle()
    return vectors


def asked_of_the_database(monkeypatch) -> list[str]:
    """The sessions of the rankings the database is asked for from now on."""
    from nonebot_plugin_aimemory.store.postgres.chat_log_pgvector import PgvectorColumn

    asked: list[str] = []
    real_nearest = PgvectorColumn.nearest

    async def nearest(column, session_key, *args, **kwargs):
        asked.append(session_key)
        return await real_nearest(column, session_key, *args, **kwargs)

    monkeypatch.setattr(PgvectorColumn, "nearest", nearest)
    return asked


def as_stored(vector: list[float]) -> list[float]:
    from nonebot_plugin_aimemory.store.packed_vectors import pack_vector, unpack_vector

    return unpack_vector(pack_vector(vector))


def true_cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def near(rng: random.Random, vector: list[float], spread: float) -> list[float]:
    """A vector close to `vector` (a unit one), the closer the smaller `spread`."""
    noise = random_unit(rng, len(vector))
    return [v + spread * n for v, n in zip(vector, noise, strict=True)]


# ---------------------------------------------------------------- the whole session


async def test_every_row_is_ranked_by_the_database_by_its_true_cosine(store, monkeypatch) -> None:
    from nonebot_plugin_aimemory.chatlog import vectors as vectors_module

    rng = random.Random(11)
    query = random_unit(rng, DIMENSIONS)
    ids = await store.insert_many([row(SESSION, f"第{i}句") for i in range(2100)])
    oldest = ids[0]
    vectors = {row_id: random_unit(rng, DIMENSIONS) for row_id in ids}
    vectors[oldest] = near(rng, query, 0.3)
    await store.vectors.put(MODEL, list(vectors.items()))
    row_vectors = await started(store)
    asked = asked_of_the_database(monkeypatch)
    monkeypatch.setattr(vectors_module, "RANKED_ROWS", 2000)

    ranked = await row_vectors.ranking(SESSION, query, [])

    assert asked == [SESSION]
    assert ranked[0][0] == oldest
    assert len(ranked) == 2000
    # Filled in from the packed int8 vectors: their cosines, computed in plain Python.
    truth = {row_id: true_cosine(query, as_stored(vector)) for row_id, vector in vectors.items()}
    for row_id, similarity in ranked:
        assert similarity == pytest.approx(truth[row_id], abs=1e-5)
    by_truth = sorted(ids, key=lambda row_id: -truth[row_id])
    assert [row_id for row_id, _ in ranked[:10]] == by_truth[:10]
    store.vectors.vector_column = None  # the same search in memory: the same rows first
    in_memory = await row_vectors.ranking(SESSION, query, [])
    assert [row_id for row_id, _ in in_memory[:5]] == by_truth[:5]


async def test_rows_of_the_named_periods_come_first_then_the_closest_of_the_rest(
    store,
) -> None:
    from nonebot_plugin_aimemory.store.chat_log_ranking import PeriodBoost

    ids = await store.insert_many([row(SESSION, str(i)) for i in range(6)])
    # Row n's angle to the query grows with n: row 0 is the closest.
    await store.vectors.put(MODEL, [(row_id, [1.0, n / 4]) for n, row_id in enumerate(ids)])
    row_vectors = await started(store)
    periods = [PeriodBoost(ids[3], ids[4], 1.0), PeriodBoost(ids[1], ids[1], 1.0)]

    ranked = await row_vectors.ranking(SESSION, [1.0, 0.0], periods)

    assert [row_id for row_id, _ in ranked] == [ids[1], ids[3], ids[4], ids[0], ids[2], ids[5]]
    scores = [score for _, score in ranked]
    assert scores[:3] == sorted(scores[:3], reverse=True)
    assert scores[3:] == sorted(scores[3:], reverse=True)


async def test_another_sessions_rows_are_never_returned_by_the_database(store, monkeypatch) -> None:
    ours = await store.insert_many([row(SESSION, "我们的"), row(SESSION, "也是我们的")])
    theirs = await store.insert_many([row("g:2", "别处的")])
    await store.vectors.put(MODEL, [(ours[0], [0.0, 1.0]), (ours[1], [0.5, 0.5])])
    await store.vectors.put(MODEL, [(theirs[0], [1.0, 0.0])])
    row_vectors = await started(store)
    asked = asked_of_the_database(monkeypatch)

    ranked = await row_vectors.ranking(SESSION, [1.0, 0.0], [])

    assert asked == [SESSION]
    assert [row_id for row_id, _ in ranked] == [ours[1], ours[0]]


async def test_vectors_of_another_model_convention_or_length_are_never_compared(
    store, monkeypatch
) -> None:
    ids = await store.insert_many([row(SESSION, str(i)) for i in range(4)])
    await store.vectors.put(MODEL, [(ids[0], [0.0, 1.0])])
    await store.vectors.put(OTHER_MODEL, [(ids[1], [1.0, 0.0])])
    await store.vectors.put(OTHER_PREFIXES, [(ids[2], [1.0, 0.0])])
    await store.vectors.put(MODEL, [(ids[3], [1.0, 0.0, 0.0])])
    row_vectors = await started(store)
    asked = asked_of_the_database(monkeypatch)

    ranked = await row_vectors.ranking(SESSION, [1.0, 0.0], [])

    assert asked == [SESSION]
    assert [row_id for row_id, _ in ranked] == [ids[0]]


# ---------------------------------------------------------------- rows from before pgvector


async def test_rows_stored_before_pgvector_are_found_in_process_until_filled_then_by_the_database(
    pgvector_server: PostgresServer, pgvector_url: str, monkeypatch
) -> None:
    rng = random.Random(3)
    query = random_unit(rng, DIMENSIONS)
    before = await open_store(pgvector_url)  # the app role cannot create pgvector
    try:
        ids = await before.insert_many([row(SESSION, str(i)) for i in range(20)])
        vectors = {row_id: random_unit(rng, DIMENSIONS) for row_id in ids}
        vectors[ids[5]] = near(rng, query, 0.3)
        await before.vectors.put(MODEL, list(vectors.items()))
    finally:
        await before.database.close()
    create_pgvector(pgvector_server, pgvector_url)
    store = await open_store(pgvector_url)
    try:
        asked = asked_of_the_database(monkeypatch)
        from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors
        from nonebot_plugin_aimemory.engine.embeddings import NoEmbeddings, VectorMaker

        row_vectors = ChatLogVectors(
            store.vectors, NoEmbeddings(), VectorMaker(MODEL.model, MODEL.convention)
        )
        assert await store.vectors.use_vector_column()  # not filled in yet: no start so far

        meanwhile = await row_vectors.ranking(SESSION, query, [])
        asked_meanwhile = list(asked)
        await row_vectors.settle()  # that search woke the filling in
        filled = await row_vectors.ranking(SESSION, query, [])
    finally:
        await store.database.close()

    assert asked_meanwhile == []  # ranked in-process
    assert meanwhile[0][0] == ids[5]
    assert asked == [SESSION]
    assert filled[0][0] == ids[5]
    assert sorted(r for r, _ in filled) == sorted(ids)


async def test_a_search_while_pgvector_is_not_checked_yet_is_ranked_in_process(
    pgvector_server: PostgresServer, pgvector_url: str, monkeypatch
) -> None:
    create_pgvector(pgvector_server, pgvector_url)
    store = await open_store(pgvector_url)
    try:
        from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors
        from nonebot_plugin_aimemory.engine.embeddings import NoEmbeddings, VectorMaker

        ids = await store.insert_many([row(SESSION, "一"), row(SESSION, "二")])
        await store.vectors.put(MODEL, [(ids[0], [1.0, 0.0]), (ids[1], [0.0, 1.0])])
        asked = asked_of_the_database(monkeypatch)
        row_vectors = ChatLogVectors(
            store.vectors, NoEmbeddings(), VectorMaker(MODEL.model, MODEL.convention)
        )

        ranked = await row_vectors.ranking(SESSION, [1.0, 0.0], [])
    finally:
        await store.database.close()

    assert asked == []
    assert [row_id for row_id, _ in ranked] == [ids[0], ids[1]]


# ---------------------------------------------------------------- without pgvector


async def test_on_a_server_without_pgvector_one_line_says_so_and_rows_are_ranked_in_process(
    postgres_url: str, plugin_log
) -> None:
    store = await open_store(postgres_url)  # Debian's stock server
    try:
        ids = await store.insert_many([row(SESSION, "一"), row(SESSION, "二")])
        await store.vectors.put(MODEL, [(ids[0], [0.0, 1.0]), (ids[1], [1.0, 0.0])])
        row_vectors = await started(store)
        row_vectors.start()  # a second start checks nothing again
        await row_vectors.settle()

        ranked = await row_vectors.ranking(SESSION, [1.0, 0.0], [])
    finally:
        await store.database.close()

    assert [row_id for row_id, _ in ranked] == [ids[1], ids[0]]
    lines = [r.getMessage() for r in plugin_log.records if "pgvector" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].startswith("chat-log vectors: ranked by the plugin, not by PostgreSQL")
    assert 'extension "vector" is not available' in lines[0]


# ---------------------------------------------------------------- the bot's search


async def test_the_bots_search_finds_a_paraphrase_through_pgvector(
    plugin, pgvector_server: PostgresServer, pgvector_url: str, monkeypatch
) -> None:
    create_pgvector(pgvector_server, pgvector_url)
    await with_row_vectors(plugin, aimemory_database_url=pgvector_url)
    vectors = plugin_row_vectors(plugin)
    await vectors.settle()
    await write(plugin, BASKETBALL, *OTHERS)
    asked = asked_of_the_database(monkeypatch)

    found = await search(plugin, PARAPHRASE)

    assert vectors.store.vector_column is not None
    assert asked  # the database ranked the rows
    assert found[0] == BASKETBALL
