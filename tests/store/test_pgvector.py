"""pgvector for the chat-log rows' vectors, on a real PostgreSQL 16 with the extension
(tests/fakes/postgres.py's pgserver server) and on Debian's stock server without it: the
extension found in any schema or created in the plugin's own, the column added outside
the numbered migrations, the database's ranking bound to a session, a model and a
dimension, and rows stored before the column existed given theirs from their packed bytes;
where pgvector cannot be used, one log line and nothing changed."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import psycopg
import pytest

from tests.store.test_chat_log_vectors import MODEL, OTHER_MODEL, OTHER_PREFIXES, random_unit, row

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.postgres.chat_log_pgvector import PgvectorColumn
    from tests.fakes.postgres import PostgresServer

DIMENSIONS = 384


async def open_store(url: str) -> ChatLogStore:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase

    return ChatLogStore(await PostgresDatabase.open(url))


@pytest.fixture
async def pgvector_store(pgvector_server: PostgresServer, pgvector_url: str) -> AsyncIterator:
    """A chat-log store on a database whose administrator created pgvector (in `public`)."""
    with psycopg.connect(pgvector_server.admin_url(pgvector_url), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")
    store = await open_store(pgvector_url)
    assert await store.vectors.use_vector_column()
    yield store
    await store.database.close()


def column(store: ChatLogStore) -> PgvectorColumn:
    """The store's pgvector column (after `use_vector_column` found it)."""
    assert store.vectors.vector_column is not None
    return store.vectors.vector_column


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


def pgvector_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "pgvector" in r.getMessage()]


def columns(url: str) -> list[str]:
    with psycopg.connect(url) as connection:
        # The catalogue, not information_schema: it lists only what the role may use.
        found = connection.execute(
            "SELECT attname FROM pg_attribute "
            "WHERE attrelid = 'aimemory.chat_log_vectors'::regclass AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum"
        ).fetchall()
    return [name for (name,) in found]


def extension_schema(url: str) -> str | None:
    with psycopg.connect(url) as connection:
        found = connection.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        ).fetchone()
    return found[0] if found else None


# ---------------------------------------------------------------- where pgvector is


async def test_the_plugin_creates_pgvector_in_its_own_schema_when_its_role_may(
    pgvector_server: PostgresServer, pgvector_url: str, plugin_log
) -> None:
    # Connected as a superuser: pgvector is not a trusted extension.
    store = await open_store(pgvector_server.admin_url(pgvector_url))
    try:
        used = await store.vectors.use_vector_column()
    finally:
        await store.database.close()

    assert used
    assert extension_schema(pgvector_url) == "aimemory"
    assert "embedding" in columns(pgvector_server.admin_url(pgvector_url))
    assert pgvector_lines(plugin_log) == [
        "chat-log vectors: ranked by PostgreSQL with pgvector 0.6.2 (schema aimemory)"
    ]


async def test_pgvector_in_another_schema_is_used_where_it_is_whatever_the_search_path(
    pgvector_server: PostgresServer, pgvector_url: str
) -> None:
    with psycopg.connect(pgvector_server.admin_url(pgvector_url), autocommit=True) as admin:
        admin.execute("CREATE SCHEMA extensions")
        admin.execute("CREATE EXTENSION vector SCHEMA extensions")
        admin.execute("GRANT USAGE ON SCHEMA extensions TO aimemory")
    store = await open_store(pgvector_url)
    try:
        (row_id,) = await store.insert_many([row("g:1", "一")])
        assert await store.vectors.use_vector_column()
        await store.vectors.put(MODEL, [(row_id, [0.6, 0.8])])

        ranked = await column(store).nearest("g:1", MODEL, [0.6, 0.8], 10)
    finally:
        await store.database.close()

    assert [r for r, _ in ranked] == [row_id]
    assert ranked[0][1] == pytest.approx(1.0, abs=1e-6)
    assert extension_schema(pgvector_url) == "extensions"
    with psycopg.connect(pgvector_url) as connection:
        (column_type,) = connection.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'aimemory.chat_log_vectors'::regclass AND attname = 'embedding'"
        ).fetchone()
    assert column_type == "extensions.vector"  # no fixed dimension: models vary


async def test_pgvector_in_a_schema_the_role_may_not_use_is_not_used(
    pgvector_server: PostgresServer, pgvector_url: str, plugin_log
) -> None:
    with psycopg.connect(pgvector_server.admin_url(pgvector_url), autocommit=True) as admin:
        admin.execute("CREATE SCHEMA extensions")
        admin.execute("CREATE EXTENSION vector SCHEMA extensions")
    store = await open_store(pgvector_url)
    try:
        used = await store.vectors.use_vector_column()
    finally:
        await store.database.close()

    assert not used
    assert "embedding" not in columns(pgvector_url)
    (line,) = pgvector_lines(plugin_log)
    assert "'extensions', which this role may not use" in line


async def test_a_role_that_may_not_create_pgvector_logs_one_line_and_changes_nothing(
    pgvector_url: str, plugin_log
) -> None:
    store = await open_store(pgvector_url)  # the app role: not a superuser
    try:
        used = await store.vectors.use_vector_column()
        again = await store.vectors.use_vector_column()
    finally:
        await store.database.close()

    assert not used
    assert not again
    assert extension_schema(pgvector_url) is None
    assert "embedding" not in columns(pgvector_url)
    (line,) = pgvector_lines(plugin_log)
    assert 'permission denied to create extension "vector"' in line
    assert "ranked by the plugin" in line


async def test_a_server_without_pgvector_logs_one_line_and_changes_nothing(
    postgres_url: str, plugin_log
) -> None:
    store = await open_store(postgres_url)  # Debian's stock server: no pgvector installed
    try:
        (row_id,) = await store.insert_many([row("g:1", "一")])
        used = await store.vectors.use_vector_column()
        stored = await store.vectors.put(MODEL, [(row_id, [1.0, 0.0])])
    finally:
        await store.database.close()

    assert not used
    assert stored == 1
    assert "embedding" not in columns(postgres_url)
    (line,) = pgvector_lines(plugin_log)
    assert 'extension "vector" is not available' in line


async def test_the_schema_version_is_the_same_with_the_pgvector_column(pgvector_store) -> None:
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION

    ((version,),) = await pgvector_store.database.read("SELECT version FROM schema_version")

    assert version == SCHEMA_VERSION


async def test_enabling_pgvector_again_on_the_next_start_changes_nothing(
    pgvector_store, pgvector_url: str
) -> None:
    again = await open_store(pgvector_url)
    try:
        assert await again.vectors.use_vector_column()
    finally:
        await again.database.close()

    assert columns(pgvector_url).count("embedding") == 1


# ---------------------------------------------------------------- the database's ranking


async def test_the_database_ranks_a_sessions_rows_by_cosine_best_first(pgvector_store) -> None:
    rng = random.Random(5)
    ids = await pgvector_store.insert_many([row("g:1", str(i)) for i in range(40)])
    vectors = {row_id: random_unit(rng, DIMENSIONS) for row_id in ids}
    await pgvector_store.vectors.put(MODEL, list(vectors.items()))
    query = random_unit(rng, DIMENSIONS)

    ranked = await column(pgvector_store).nearest("g:1", MODEL, query, 10)

    exact = sorted(ids, key=lambda i: cosine(query, vectors[i]), reverse=True)
    assert [row_id for row_id, _ in ranked] == exact[:10]
    for row_id, similarity in ranked:
        assert similarity == pytest.approx(cosine(query, vectors[row_id]), abs=1e-5)


async def test_another_sessions_rows_are_never_ranked_however_close(pgvector_store) -> None:
    ours, theirs = await pgvector_store.insert_many([row("g:1", "我们的"), row("g:2", "别处的")])
    await pgvector_store.vectors.put(MODEL, [(ours, [0.0, 1.0]), (theirs, [1.0, 0.0])])

    ranked = await column(pgvector_store).nearest("g:1", MODEL, [1.0, 0.0], 10)

    assert [row_id for row_id, _ in ranked] == [ours]


async def test_vectors_of_another_model_convention_or_length_are_never_compared(
    pgvector_store,
) -> None:
    ids = await pgvector_store.insert_many([row("g:1", str(i)) for i in range(4)])
    await pgvector_store.vectors.put(MODEL, [(ids[0], [0.0, 1.0])])
    await pgvector_store.vectors.put(OTHER_MODEL, [(ids[1], [1.0, 0.0])])
    await pgvector_store.vectors.put(OTHER_PREFIXES, [(ids[2], [1.0, 0.0])])
    await pgvector_store.vectors.put(MODEL, [(ids[3], [1.0, 0.0, 0.0])])

    ranked = await column(pgvector_store).nearest("g:1", MODEL, [1.0, 0.0], 10)

    assert [row_id for row_id, _ in ranked] == [ids[0]]


async def test_rows_within_id_spans_or_outside_them_are_ranked_apart(pgvector_store) -> None:
    ids = await pgvector_store.insert_many([row("g:1", str(i)) for i in range(6)])
    await pgvector_store.vectors.put(MODEL, [(i, [1.0, n / 10]) for n, i in enumerate(ids)])
    spans = [(ids[1], ids[2]), (ids[4], ids[4])]

    within = await column(pgvector_store).nearest("g:1", MODEL, [1.0, 0.0], 10, within=spans)
    outside = await column(pgvector_store).nearest("g:1", MODEL, [1.0, 0.0], 10, outside=spans)

    assert [row_id for row_id, _ in within] == [ids[1], ids[2], ids[4]]
    assert [row_id for row_id, _ in outside] == [ids[0], ids[3], ids[5]]


async def test_a_zero_vector_is_not_ranked(pgvector_store) -> None:
    ids = await pgvector_store.insert_many([row("g:1", "零"), row("g:1", "一")])
    await pgvector_store.vectors.put(MODEL, [(ids[0], [0.0, 0.0]), (ids[1], [1.0, 0.0])])

    ranked = await column(pgvector_store).nearest("g:1", MODEL, [1.0, 0.0], 10)

    assert [row_id for row_id, _ in ranked] == [ids[1]]


async def test_a_vector_replaced_by_another_models_is_ranked_as_the_new_one(
    pgvector_store,
) -> None:
    (row_id,) = await pgvector_store.insert_many([row("g:1", "一")])
    await pgvector_store.vectors.put(OTHER_MODEL, [(row_id, [1.0, 0.0])])

    await pgvector_store.vectors.put(MODEL, [(row_id, [0.0, 1.0])])

    ((found, similarity),) = await column(pgvector_store).nearest("g:1", MODEL, [0.0, 1.0], 10)
    assert found == row_id
    assert similarity == pytest.approx(1.0, abs=1e-6)
    assert await column(pgvector_store).nearest("g:1", OTHER_MODEL, [1.0, 0.0], 10) == []


# ---------------------------------------------------------------- rows from before pgvector


async def test_vectors_stored_before_pgvector_get_theirs_from_their_packed_bytes(
    pgvector_server: PostgresServer, pgvector_url: str
) -> None:
    from nonebot_plugin_aimemory.store.packed_vectors import pack_vector, unpack_vector

    rng = random.Random(9)
    before = await open_store(pgvector_url)  # no pgvector yet: no column either
    try:
        ids = await before.insert_many([row("g:1", str(i)) for i in range(7)])
        vectors = {row_id: random_unit(rng, DIMENSIONS) for row_id in ids}
        await before.vectors.put(MODEL, list(vectors.items()))
        assert not await before.vectors.use_vector_column()
    finally:
        await before.database.close()
    with psycopg.connect(pgvector_server.admin_url(pgvector_url), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")
    store = await open_store(pgvector_url)
    try:
        assert await store.vectors.use_vector_column()
        waiting = await column(store).unfilled("g:1", MODEL)
        counted = await column(store).unfilled_count(MODEL)
        first = await column(store).fill(MODEL, 5)
        second = await column(store).fill(MODEL, 5)
        third = await column(store).fill(MODEL, 5)
        query = random_unit(rng, DIMENSIONS)
        ranked = await column(store).nearest("g:1", MODEL, query, 10)
        still_waiting = await column(store).unfilled("g:1", MODEL)
    finally:
        await store.database.close()

    assert waiting
    assert counted == 7
    assert (first, second, third) == (5, 2, 0)
    assert not still_waiting
    # The cosines of the int8 vectors, which the in-process ranking computes too.
    in_process = {
        i: sum(q * s for q, s in zip(query, unpack_vector(pack_vector(v)), strict=True))
        for i, v in vectors.items()
    }
    assert sorted(r for r, _ in ranked) == sorted(ids)
    for row_id, similarity in ranked:
        assert similarity == pytest.approx(in_process[row_id], abs=1e-5)


async def test_only_the_current_models_vectors_are_filled_in(
    pgvector_server: PostgresServer, pgvector_url: str
) -> None:
    before = await open_store(pgvector_url)
    try:
        ids = await before.insert_many([row("g:1", "一"), row("g:1", "二")])
        await before.vectors.put(MODEL, [(ids[0], [1.0, 0.0])])
        await before.vectors.put(OTHER_MODEL, [(ids[1], [1.0, 0.0])])
    finally:
        await before.database.close()
    with psycopg.connect(pgvector_server.admin_url(pgvector_url), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")
    store = await open_store(pgvector_url)
    try:
        assert await store.vectors.use_vector_column()
        filled = [await column(store).fill(MODEL, 10) for _ in range(2)]
        left = await column(store).unfilled_count(OTHER_MODEL)
    finally:
        await store.database.close()

    assert filled == [1, 0]
    assert left == 1  # to be embedded again by the current model, not copied


async def test_a_vector_rewritten_while_it_was_being_filled_keeps_the_new_one(
    pgvector_store, monkeypatch
) -> None:
    from nonebot_plugin_aimemory.store.packed_vectors import pack_vector

    (row_id,) = await pgvector_store.insert_many([row("g:1", "一")])
    await pgvector_store.vectors.put(MODEL, [(row_id, [0.0, 1.0])])
    # As a vector stored before the column existed: packed bytes only.
    await pgvector_store.database.write_one(
        "UPDATE chat_log_vectors SET embedding = NULL, vector = ? WHERE row_id = ?",
        (pack_vector([1.0, 0.0]), row_id),
    )
    real_read = pgvector_store.database.read

    async def read_then_rewrite(sql, params=()):
        rows = await real_read(sql, params)
        if "embedding IS NULL" in sql and "SELECT row_id, vector" in sql:
            await pgvector_store.vectors.put(MODEL, [(row_id, [0.0, 1.0])])  # a new embedding
        return rows

    monkeypatch.setattr(pgvector_store.database, "read", read_then_rewrite)

    await column(pgvector_store).fill(MODEL, 10)

    ((found, similarity),) = await column(pgvector_store).nearest("g:1", MODEL, [0.0, 1.0], 10)
    assert (found, similarity) == (row_id, pytest.approx(1.0, abs=1e-6))
