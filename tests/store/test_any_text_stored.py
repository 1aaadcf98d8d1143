"""Any text a member can send is stored on both backends, the same way (issue #37): random
Unicode (NUL, lone surrogates, U+FFFD, emoji, 100 000-character pastes) written through every
store with a text column, on the SQLite file and on a real PostgreSQL server, reads back
equal on both, and equal to what was written once the one rule (store/storable.py) is
applied."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Any code point, lone surrogates and control characters included.
ANY_CHARACTER = st.characters(exclude_categories=())
AWKWARD = ("\x00", "\ud83d", "\ude00", "\ufffd", "😀", "\x00\x00", "a\x00b", "'; --")


def texts() -> st.SearchStrategy[str]:
    """Short random text, awkward pieces joined, or a paste of up to 100 000 characters."""
    paste = st.builds(
        lambda piece, n: (piece * n)[:100_000],
        st.one_of(ANY_CHARACTER, st.sampled_from(AWKWARD)),
        st.integers(1, 100_000),
    )
    return st.one_of(
        st.text(ANY_CHARACTER, min_size=1, max_size=300),
        st.lists(st.sampled_from(AWKWARD), min_size=1, max_size=12).map("".join),
        paste,
    )


PROPERTY = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_example = itertools.count(1)
MEMORY_CHARS = 2000  # what a save keeps (memory/rules.py MAX_CONTENT_CHARS)


@pytest.fixture
async def both_backends(tmp_path: Path, postgres_url: str) -> AsyncIterator[dict[str, Any]]:
    """The SQLite file and the PostgreSQL database of this test, open."""
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    opened = {
        "sqlite": await Database.open(tmp_path / "any-text.db"),
        "postgresql": await PostgresDatabase.open(postgres_url),
    }
    yield opened
    for database in opened.values():
        await database.close()


async def round_trip(database: Any, text: str, example: int) -> dict[str, Any]:
    """`text` written through every store with a text column, and what each reads back."""
    from nonebot_plugin_aimemory.engine.messages import assistant, system, user
    from nonebot_plugin_aimemory.engine.usage import TokenCounts, UsageRow
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.image_store import ImageDescriptionStore
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore
    from nonebot_plugin_aimemory.store.persona_store import PersonaStore
    from nonebot_plugin_aimemory.store.plugin_state import PluginStateStore
    from nonebot_plugin_aimemory.store.usage_store import UsageStore

    scope = f"g:{example}"
    memories = MemoryStore(database)
    # A save keeps 2 000 characters: up to 8 000 bytes, beyond a PostgreSQL btree row's
    # 2 704, so the content is indexed there by its md5 (store/postgres/schema.py).
    kept = text[:MEMORY_CHARS]
    record = MemoryRecord(
        id=f"m{example}", content=kept, normalized=kept, tags=[text[:50]], user_id="10001"
    )
    assert await memories.insert(scope, record) == "inserted"
    history = DatabaseHistoryStore(database)
    await history.append(scope, [system(text), user(text), assistant(text)])
    chat_log = ChatLogStore(database)
    row = ChatRow(scope, "2026-12-01T00:00:00.000000Z", "user", text, "10001", text[:60])
    [row_id] = await chat_log.insert_many([row])
    await ImageDescriptionStore(database).put(f"hash{example}", text)
    await PluginStateStore(database).put(f"state{example}", text)
    await PersonaStore(database).choose(scope, text[:40])
    await UsageStore(database).add([UsageRow("2026-12-01", scope, text[:40], TokenCounts(1))])

    [stored] = await memories.load_scope(scope)
    [logged] = await chat_log.rows_by_id([row_id])
    return {
        "memory": (stored.content, stored.normalized, stored.tags),
        "window": [message.text for message in await history.load(scope)],
        "chat log": (logged.text, logged.speaker_name),
        "image": await ImageDescriptionStore(database).get(f"hash{example}"),
        "state": await PluginStateStore(database).get(f"state{example}"),
        "persona": (await PersonaStore(database).load_all())[scope],
        "usage": set(await UsageStore(database).by_role(scope, "2026-12-01", "2026-12-01")),
    }


@PROPERTY
@given(text=texts())
async def test_any_text_reads_back_the_same_on_both_backends(both_backends, text: str) -> None:
    from nonebot_plugin_aimemory.store.storable import storable_text

    example = next(_example)
    read = {name: await round_trip(db, text, example) for name, db in both_backends.items()}
    assert read["sqlite"] == read["postgresql"]
    stored = storable_text(text)
    # Tags are JSON text: what JSON escapes (NUL) comes back as it was, on both alike.
    memory = storable_text(text[:MEMORY_CHARS])
    assert read["sqlite"]["memory"][:2] == (memory, memory)
    assert read["sqlite"]["chat log"] == (stored, storable_text(text[:60]))
    assert read["sqlite"]["image"] == stored
    assert read["sqlite"]["state"] == stored
    assert read["sqlite"]["persona"] == storable_text(text[:40])
    assert read["sqlite"]["usage"] == {storable_text(text[:40])}


def test_the_rule_keeps_ordinary_text_and_replaces_only_what_a_backend_refuses() -> None:
    from nonebot_plugin_aimemory.store.storable import storable_text

    assert storable_text("你好 😀 ~记忆") == "你好 😀 ~记忆"
    assert storable_text("a\x00b") == "a\ufffdb"
    assert storable_text("半个\ud83d表情") == "半个\ufffd表情"
    # A pair a decoder split into two code points is joined, not replaced.
    assert storable_text("\ud83d\ude00") == "😀"


async def test_a_memory_holding_nul_is_saved_by_the_tool_on_postgresql(postgres_url) -> None:
    """The probe of the issue: `memory_save` with a NUL answered `DataError` on
    PostgreSQL; now it saves as on SQLite."""
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase

    database = await PostgresDatabase.open(postgres_url)
    try:
        store = MemoryStore(database)
        record = MemoryRecord(id="m1", content="小明喜欢\x00猫", normalized="小明喜欢\x00猫")
        assert await store.insert("g:1", record) == "inserted"
        [stored] = await store.load_scope("g:1")
        assert stored.content == "小明喜欢\ufffd猫"
    finally:
        await database.close()


async def test_a_long_memory_of_rare_characters_saves_on_postgresql(postgres_url) -> None:
    """2 000 characters that do not compress (4 bytes each) are 8 000 bytes: more than a
    PostgreSQL btree row holds; the memory saves, and a second save is a duplicate."""
    import random

    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase

    draw = random.Random(7)
    text = "".join(chr(draw.randrange(0x20000, 0x2A6D6)) for _ in range(2000))
    database = await PostgresDatabase.open(postgres_url)
    try:
        store = MemoryStore(database)
        assert await store.insert("g:1", MemoryRecord("m1", text, text)) == "inserted"
        assert await store.insert("g:1", MemoryRecord("m2", text, text)) == "duplicate"
    finally:
        await database.close()
