"""Schema migrations applied to a database written by an older version, and the one-step
schema of a new database, which must equal what the migrations build."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.sqlite.database import Database

# The first version that has each table or column the sample rows below fill in.
SESSIONS_AND_MESSAGES = 1
COMPRESSION_STATS = 2
MEMORIES = 3
CHAT_LOG = 4
IMAGE_DESCRIPTIONS = 5
FTS_WITH_SESSION_TOKEN = 6
CHAT_LOG_IDS = 8
REFUSED_CHAT_ROWS = 9
TOMBSTONE_SUBJECTS = 10
TERMS_INDEX = 11
PERSONA_CHOICES = 12
CHAT_LOG_VECTORS = 13
PRIVATE_MEMORIES = 14
TOKEN_USAGE = 15
SENT_MESSAGES = 16
ACCOUNTS = 17
VECTOR_MAKERS = 18
MESSAGE_CLAIMS = 19
MEMORY_PROVENANCE = 20
MEMORY_CONTENT_BY_MD5 = 21  # PostgreSQL only; no new rows to sample
# The schema version these tests were written for: the parametrised cases below are fixed
# at collection, before the plugin can be imported; a guard test keeps it equal to
# SCHEMA_VERSION, so a new migration is not left without its cases.
LATEST_VERSION = 21

AT = "2026-11-30T00:00:00.000000Z"
IMAGE_HASH = "ab" * 32
VECTOR_MODEL = "multilingual-e5-small"
VECTOR_CONVENTION = 'prefixes ["query: ", "passage: "]'
# A packed vector as version 13 stores it (store/packed_vectors.py): the sum of its
# squared int8 components, then each component + 128.
PACKED_VECTOR = (127 * 127).to_bytes(4, "little") + bytes([128 + 127, 128, 128, 128])
SKETCH = bytes([0b0000_0001])  # its one positive component, no negative one
LAST_REVIEWED_ROW = 5  # beyond the last chat-log id, so the id counter must start after it
USAGE_DAY = "2026-11-30"
BOT_ACCOUNT = "42"
SENT_MESSAGE_ID = "-2147480000"  # NapCat's ids are signed 32-bit numbers

Schema = tuple[list[tuple[str, str, str, str | None]], dict[str, list[tuple[object, ...]]]]


def write_old_database(path, version: int) -> None:
    from nonebot_plugin_aimemory.store.sqlite.migrations import MIGRATIONS

    connection = sqlite3.connect(path)
    for target, script in enumerate(MIGRATIONS[:version], start=1):
        connection.executescript(f"{script}\nPRAGMA user_version = {target};")
    connection.commit()
    connection.close()


def normalised_sql(sql: str | None) -> str | None:
    """`sql` with whitespace folded and the created table's name unquoted."""
    if sql is None:
        return None
    folded = re.sub(r" ?([(),]) ?", r"\1", " ".join(sql.split()))
    # ALTER TABLE ... RENAME writes the new name quoted and FTS5 quotes its shadow tables'
    # names; the quotes do not change the schema.
    return re.sub(r"^(CREATE (?:VIRTUAL )?TABLE )([\"'])(\w+)\2", r"\1\3", folded)


def schema_of(path: Path) -> Schema:
    """Every schema object of the file, and the columns (hidden ones too) of every table."""
    connection = sqlite3.connect(path)
    try:
        objects = [
            (kind, name, table, normalised_sql(sql))
            for kind, name, table, sql in connection.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
            )
        ]
        columns = {
            name: connection.execute(f'PRAGMA table_xinfo("{name}")').fetchall()
            for kind, name, _, _ in objects
            if kind == "table"
        }
    finally:
        connection.close()
    return objects, columns


def raw_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


async def open_and_close(path: Path) -> None:
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(path)
    await database.close()


def schema_lines(log: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in log.records if "schema version" in r.getMessage()]


@pytest.fixture
async def fresh_schema(tmp_path) -> Schema:
    path = tmp_path / "fresh.db"
    await open_and_close(path)
    return schema_of(path)


def write_sample_rows(path: Path, version: int) -> None:
    """Rows of every kind the tables at `version` hold, written as that version wrote them."""
    from nonebot_plugin_aimemory.store.chat_log_ranking import row_terms
    from nonebot_plugin_aimemory.store.sqlite.chat_log_fts5 import index_rows, session_token

    connection = sqlite3.connect(path)
    if version >= SESSIONS_AND_MESSAGES:
        connection.execute(
            "INSERT INTO sessions (key, next_seq, updated_at) VALUES ('g:1', 2, ?)", (AT,)
        )
        if version >= COMPRESSION_STATS:
            connection.execute(
                "UPDATE sessions SET compressions = 3, last_compressed_at = ? WHERE key = 'g:1'",
                (AT,),
            )
        for seq, role, text in ((0, "user", "周五去爬山吗"), (1, "assistant", "好呀")):
            connection.execute(
                "INSERT INTO messages (session_key, seq, role, body, created_at) "
                "VALUES ('g:1', ?, ?, ?, ?)",
                (seq, role, json.dumps({"role": role, "content": text}), AT),
            )
        counters = (
            "INSERT INTO group_counters (group_id, unaddressed, updated_at) VALUES ('1', 4, ?)"
            if version < ACCOUNTS
            else "INSERT INTO chat_counters (chat_key, unaddressed, updated_at) VALUES ('g:1', 4, ?)"
        )
        connection.execute(counters, (AT,))
    if version >= MEMORIES:
        for memory_id, content, deleted_at in (
            ("m1", "小明喜欢爬山", None),
            ("m2", "小明怕狗", AT),
        ):
            connection.execute(
                "INSERT INTO memories (scope, id, content, normalized, tags, user_id, evidence, "
                "source, created_at, updated_at, deleted_at) "
                "VALUES ('g:1', ?, ?, ?, '[\"爱好\"]', '10001', '[1]', 'review', ?, ?, ?)",
                (memory_id, content, content, AT, AT, deleted_at),
            )
        connection.execute(
            "INSERT INTO memory_tombstones (scope, normalized, memory_id, deleted_at) "
            "VALUES ('g:1', '小明怕狗', 'm2', ?)",
            (AT,),
        )
        if version >= TOMBSTONE_SUBJECTS:
            connection.execute("UPDATE memory_tombstones SET user_id = '10001'")
        if version >= MEMORY_PROVENANCE:
            connection.execute(
                "UPDATE memories SET origin = 'review', said_by_id = '10001', "
                "said_by_name = '小明', said_in = 'g:1' WHERE id = 'm1'"
            )
    if version >= CHAT_LOG:
        for row_id, key, text, tokens in (
            (1, "g:1", "周五去爬山", "周五 爬山"),
            (2, "g:2", "周五去看电影", "周五 电影"),
        ):
            connection.execute(
                "INSERT INTO chat_log (id, session_key, created_at, speaker_id, speaker_name, "
                "role, text) VALUES (?, ?, ?, '10001', '小明', 'user', ?)",
                (row_id, key, AT, text),
            )
            if version >= TERMS_INDEX:
                index_rows(connection, [(row_id, *row_terms("user", "小明", text))])
            elif version >= FTS_WITH_SESSION_TOKEN:
                connection.execute(
                    "INSERT INTO chat_log_fts (rowid, session, tokens) VALUES (?, ?, ?)",
                    (row_id, session_token(key), tokens),
                )
            else:
                connection.execute(
                    "INSERT INTO chat_log_fts (rowid, session_key, tokens) VALUES (?, ?, ?)",
                    (row_id, key, tokens),
                )
        if version >= REFUSED_CHAT_ROWS:
            connection.execute(
                "INSERT INTO chat_log (id, session_key, created_at, speaker_id, speaker_name, "
                "role, text, refused) VALUES (3, 'g:1', ?, '10001', '小明', 'user', '被拦下的话', 1)",
                (AT,),
            )
        connection.execute(
            "INSERT INTO review_state (session_key, enabled, interval_seconds, last_review_at, "
            "last_reviewed_row, pending) VALUES ('g:1', 1, 3600, ?, ?, 1)",
            (AT, LAST_REVIEWED_ROW),
        )
        if version >= CHAT_LOG_IDS:
            # As that version left it: ids up to the reviewed row used, rows 4 and 5 since
            # removed by retention.
            connection.execute(
                "UPDATE chat_log_ids SET last_id = ? WHERE only_row = 1", (LAST_REVIEWED_ROW,)
            )
    if version >= IMAGE_DESCRIPTIONS:
        connection.execute(
            "INSERT INTO image_descriptions (hash, description, created_at) VALUES (?, '一只猫', ?)",
            (IMAGE_HASH, AT),
        )
    if version >= PERSONA_CHOICES:
        connection.execute("INSERT INTO persona_choices (chat_key, persona) VALUES ('g:1', '猫娘')")
    if version >= PRIVATE_MEMORIES:
        # A personal memory told in its owner's private chat.
        connection.execute(
            "INSERT INTO memories (scope, id, content, normalized, user_id, created_at, "
            "updated_at, private) VALUES ('u:10001', 'u2345', '我生日是五月二日', "
            "'我生日是五月二日', '10001', ?, ?, 1)",
            (AT, AT),
        )
    if version >= CHAT_LOG_VECTORS:
        for row_id, key in ((1, "g:1"), (2, "g:2")):
            connection.execute(
                "INSERT INTO chat_log_vectors (row_id, session_key, model, vector) "
                "VALUES (?, ?, ?, ?)",
                (row_id, key, VECTOR_MODEL, PACKED_VECTOR),
            )
        if version >= VECTOR_MAKERS:
            connection.execute(
                "UPDATE chat_log_vectors SET convention = ?, sketch = ?",
                (VECTOR_CONVENTION, SKETCH),
            )
    if version >= TOKEN_USAGE:
        connection.execute(
            "INSERT INTO token_usage (chat_key, day, role, prompt_tokens, completion_tokens, "
            "cached_tokens, calls) VALUES ('g:1', ?, 'main', 1200, 80, 1000, 3)",
            (USAGE_DAY,),
        )
    if version >= SENT_MESSAGES:
        connection.execute(
            "INSERT INTO sent_messages (account, message_id, chat_key, sent_at) "
            "VALUES (?, ?, 'g:1', ?)",
            (BOT_ACCOUNT, SENT_MESSAGE_ID, AT),
        )
    if version >= MESSAGE_CLAIMS:
        # A claim and a presence long past, of a process long gone.
        connection.execute(
            "INSERT INTO message_claims (id, chat, sender, said, sent_at, claimed_at) "
            "VALUES (7, 'g:1', '10001', 'ab', 1.0, 1.0)"
        )
        connection.execute(
            "INSERT INTO message_copies (message, account, message_id, process) "
            "VALUES (7, ?, '9', 'gone')",
            (BOT_ACCOUNT,),
        )
        connection.execute(
            "INSERT INTO chat_presence (chat, account, process, seen_at) "
            "VALUES ('g:1', ?, 'gone', 1.0)",
            (BOT_ACCOUNT,),
        )
    connection.commit()
    connection.close()


async def assert_sample_rows_readable(database: Database, version: int) -> None:
    """The rows `write_sample_rows` wrote at `version`, read back through the stores."""
    from nonebot_plugin_aimemory.engine.embeddings import VectorMaker
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.counters import GroupCounterStore
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.image_store import ImageDescriptionStore
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore
    from nonebot_plugin_aimemory.store.message_claims import MessageClaimStore
    from nonebot_plugin_aimemory.store.packed_vectors import unpack_vector
    from nonebot_plugin_aimemory.store.persona_store import PersonaStore
    from nonebot_plugin_aimemory.store.review_store import ReviewStore
    from nonebot_plugin_aimemory.store.sent_messages import SentMessageStore
    from nonebot_plugin_aimemory.store.usage_store import UsageStore

    history = DatabaseHistoryStore(database)
    if version >= SESSIONS_AND_MESSAGES:
        assert [m.text for m in await history.load("g:1")] == ["周五去爬山吗", "好呀"]
        # The auto-clear counter is the home account's (its chat key is the bare one).
        assert await GroupCounterStore(database).load_all() == {"g:1": 4}
    assert (await history.load_stats("g:1")).count == (3 if version >= COMPRESSION_STATS else 0)

    memories = MemoryStore(database)
    records = {r.id: r for r in await memories.load_scope("g:1")}
    if version >= MEMORIES:
        assert sorted(records) == ["m1", "m2"]
        assert records["m1"].tags == ["爱好"]
        assert records["m1"].evidence == [1]
        assert not records["m1"].deleted
        assert records["m2"].deleted
        assert await memories.load_tombstones("g:1") == {"小明怕狗": "m2"}
        # Migrated tombstones take the QQ number of the memory they were made from.
        (tombstone,) = await memories.load_tombstone_records("g:1")
        assert tombstone.user_id == "10001"
        # Memories written before visibility existed are chat memories: public.
        assert not records["m1"].private
        # The reviewer's memories were its before provenance was kept; who said them is
        # known only since.
        provenance = records["m1"].provenance
        assert provenance.origin == "review"
        said_by = provenance.said_by
        said = None if said_by is None else (said_by.user_id, said_by.name)
        known = version >= MEMORY_PROVENANCE
        assert said == (("10001", "小明") if known else None)
        assert provenance.chat == ("g:1" if known else None)
    else:
        assert records == {}
    personal = [
        (r.id, r.private, r.provenance.origin) for r in await memories.load_scope("u:10001")
    ]
    # A tool's save of before: how it came is unknown.
    assert personal == ([("u2345", True, None)] if version >= PRIVATE_MEMORIES else [])

    chat_log = ChatLogStore(database)
    review = await ReviewStore(database).get("g:1")
    if version >= CHAT_LOG:
        assert [r.text for r in await chat_log.search("g:1", "周五", 10)] == ["周五去爬山"]
        assert [r.speaker_name for r in await chat_log.recent("g:2", 10)] == ["小明"]
        logged = [(r.text, r.refused) for r in await chat_log.recent("g:1", 10)]
        refused_rows = [("被拦下的话", True)] if version >= REFUSED_CHAT_ROWS else []
        assert logged == [("周五去爬山", False), *refused_rows]
        assert review.last_reviewed_row == LAST_REVIEWED_ROW
        assert review.pending
        assert review.interval_seconds == 3600
    else:
        assert await chat_log.recent("g:1", 10) == []
        assert review.last_reviewed_row == 0

    image = await ImageDescriptionStore(database).get(IMAGE_HASH)
    assert image == ("一只猫" if version >= IMAGE_DESCRIPTIONS else None)

    choices = await PersonaStore(database).load_all()
    assert choices == ({"g:1": "猫娘"} if version >= PERSONA_CHOICES else {})

    # Vectors written before their makers were recorded are kept as of an unknown
    # convention: never compared with a query of a known one, and embedded again.
    current = VectorMaker(VECTOR_MODEL, VECTOR_CONVENTION)
    unknown = VectorMaker(VECTOR_MODEL, "")
    vectors = await chat_log.vectors.newest("g:1", current, 10)
    legacy = await chat_log.vectors.newest("g:1", unknown, 10)
    if version >= VECTOR_MAKERS:
        assert [(row_id, unpack_vector(packed)) for row_id, packed in vectors] == [
            (1, [1.0, 0.0, 0.0, 0.0])
        ]
        assert legacy == []
    elif version >= CHAT_LOG_VECTORS:
        assert vectors == []
        assert [row_id for row_id, _ in legacy] == [1]
        assert [row.id for row in await chat_log.vectors.unembedded(current, 10)] == [2, 1]
    else:
        assert vectors == legacy == []

    usage = await UsageStore(database).by_role("g:1", USAGE_DAY, USAGE_DAY)
    if version >= TOKEN_USAGE:
        (main,) = usage.values()
        assert (main.prompt_tokens, main.completion_tokens, main.cached_tokens, main.calls) == (
            1200,
            80,
            1000,
            3,
        )
        assert list(usage) == ["main"]
    else:
        assert usage == {}

    # Messages sent before records were kept have none: quotes of them stay hidden.
    sent_to = await SentMessageStore(database).chat_of(BOT_ACCOUNT, SENT_MESSAGE_ID)
    assert sent_to == ("g:1" if version >= SENT_MESSAGES else None)

    # Old claims are pruned; none are left of any version.
    await MessageClaimStore(database).prune()
    for table in ("message_claims", "message_copies", "chat_presence"):
        assert await database.read(f"SELECT COUNT(*) FROM {table}") == [(0,)]


async def test_a_new_database_has_the_schema_every_migration_builds(tmp_path) -> None:
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION

    fresh = tmp_path / "fresh.db"
    await open_and_close(fresh)
    migrated = tmp_path / "migrated.db"
    write_old_database(migrated, SCHEMA_VERSION)

    assert schema_of(fresh) == schema_of(migrated)
    assert raw_rows(fresh, "SELECT * FROM chat_log_ids") == [(1, 0)]
    assert raw_rows(migrated, "SELECT * FROM chat_log_ids") == [(1, 0)]
    assert raw_rows(fresh, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    visible = raw_rows(
        fresh, "SELECT name FROM pragma_table_xinfo('chat_log_fts') WHERE hidden = 0"
    )
    assert visible == [("speaker",), ("tokens",)]
    (fts_sql,) = raw_rows(fresh, "SELECT sql FROM sqlite_master WHERE name = 'chat_log_fts'")[0]
    assert "tokenize = 'unicode61 remove_diacritics 2'" in fts_sql


async def test_tables_names_every_table_of_a_new_database(tmp_path) -> None:
    from nonebot_plugin_aimemory.store.sqlite.schema import TABLES

    # A version-0 file holding any of TABLES is migrated rather than created.
    path = tmp_path / "fresh.db"
    await open_and_close(path)
    tables = raw_rows(
        path,
        "SELECT name FROM pragma_table_list WHERE schema = 'main' "
        "AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite_%'",
    )
    assert sorted(TABLES) == sorted(name for (name,) in tables)


async def test_a_new_database_logs_one_schema_line(tmp_path, plugin_log) -> None:
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION

    await open_and_close(tmp_path / "fresh.db")

    assert schema_lines(plugin_log) == [f"database created at schema version {SCHEMA_VERSION}"]


def test_the_cases_cover_every_schema_version() -> None:
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION

    assert LATEST_VERSION == SCHEMA_VERSION, "add sample rows and bump LATEST_VERSION"


@pytest.mark.parametrize("version", range(LATEST_VERSION))
async def test_every_older_version_migrates_with_its_rows(
    tmp_path, fresh_schema: Schema, plugin_log, version: int
) -> None:
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    path = tmp_path / "old.db"
    write_old_database(path, version)
    write_sample_rows(path, version)

    database = await Database.open(path)
    try:
        (reached,) = (await database.read("PRAGMA user_version"))[0]
        await assert_sample_rows_readable(database, version)
    finally:
        await database.close()

    assert reached == SCHEMA_VERSION
    assert schema_of(path) == fresh_schema
    # The id counter starts after every id a chat-log row or a review already used.
    last_id = LAST_REVIEWED_ROW if version >= CHAT_LOG else 0
    assert raw_rows(path, "SELECT * FROM chat_log_ids") == [(1, last_id)]
    expected = (
        f"database migrated from schema version {version} to {SCHEMA_VERSION}"
        if version
        else f"database created at schema version {SCHEMA_VERSION}"
    )
    assert schema_lines(plugin_log) == [expected]


@pytest.mark.parametrize("version", range(1, LATEST_VERSION))
async def test_migrated_rows_stay_writable(tmp_path, version: int) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.sent_messages import SentMessage, SentMessageStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    path = tmp_path / "old.db"
    write_old_database(path, version)
    write_sample_rows(path, version)

    database = await Database.open(path)
    try:
        chat_log = ChatLogStore(database)
        await chat_log.insert_many([ChatRow("g:1", AT, "user", "周六去爬山")])
        found = [(r.id, r.text) for r in await chat_log.search("g:1", "爬山", 10)]
        # Clearing a session removes its messages through the trigger of version 7.
        await DatabaseHistoryStore(database).clear("g:1")
        messages = await database.read("SELECT COUNT(*) FROM messages")
        sent = SentMessageStore(database)
        await sent.record([SentMessage(BOT_ACCOUNT, "7", "f:10001", AT)])
        sent_to = await sent.chat_of(BOT_ACCOUNT, "7")
    finally:
        await database.close()

    next_id = LAST_REVIEWED_ROW + 1 if version >= CHAT_LOG else 1
    assert (next_id, "周六去爬山") in found
    assert messages == [(0,)]
    assert sent_to == "f:10001"


async def test_a_version_zero_file_with_our_tables_is_migrated_in_place(
    tmp_path, fresh_schema: Schema, plugin_log
) -> None:
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION
    from nonebot_plugin_aimemory.store.sqlite.database import Database
    from nonebot_plugin_aimemory.store.sqlite.migrations import MIGRATIONS

    # The first migration's tables without a user_version: migrate, keeping the rows.
    path = tmp_path / "unversioned.db"
    connection = sqlite3.connect(path)
    connection.executescript(MIGRATIONS[0])
    connection.close()
    write_sample_rows(path, SESSIONS_AND_MESSAGES)

    database = await Database.open(path)
    try:
        await assert_sample_rows_readable(database, SESSIONS_AND_MESSAGES)
    finally:
        await database.close()

    assert schema_of(path) == fresh_schema
    assert schema_lines(plugin_log) == [
        f"database migrated from schema version 0 to {SCHEMA_VERSION}"
    ]


async def test_a_newer_version_is_left_alone_with_a_warning(tmp_path, plugin_log) -> None:
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION

    path = tmp_path / "newer.db"
    await open_and_close(path)
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.execute("CREATE TABLE from_the_future (x)")
    connection.commit()
    connection.close()
    plugin_log.clear()

    await open_and_close(path)

    assert raw_rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION + 1,)]
    assert raw_rows(path, "SELECT COUNT(*) FROM from_the_future") == [(0,)]
    warnings = [r for r in plugin_log.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        f"database is at schema version {SCHEMA_VERSION + 1}, newer than this release's "
        f"{SCHEMA_VERSION}"
    ]


async def test_chat_log_search_index_is_rebuilt_with_the_session_bound(tmp_path) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    path = tmp_path / "old.db"
    write_old_database(path, FTS_WITH_SESSION_TOKEN - 1)
    connection = sqlite3.connect(path)
    for row_id, key, text, tokens in (
        (1, "g:1", "周五去爬山", "周五 爬山"),
        (2, "g:2", "周五去看电影", "周五 电影"),
    ):
        connection.execute(
            "INSERT INTO chat_log (id, session_key, created_at, role, text) "
            "VALUES (?, ?, '2026-11-30T00:00:00.000000Z', 'user', ?)",
            (row_id, key, text),
        )
        connection.execute(
            "INSERT INTO chat_log_fts (rowid, session_key, tokens) VALUES (?, ?, ?)",
            (row_id, key, tokens),
        )
    connection.commit()
    connection.close()

    database = await Database.open(path)
    try:
        (version,) = (await database.read("PRAGMA user_version"))[0]
        found = await ChatLogStore(database).search("g:1", "周五", 10)
    finally:
        await database.close()

    assert version == SCHEMA_VERSION
    assert [row.text for row in found] == ["周五去爬山"]


async def test_tombstones_take_the_qq_number_of_their_memory_when_migrated(tmp_path) -> None:
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore, Tombstone
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    path = tmp_path / "old.db"
    write_old_database(path, TOMBSTONE_SUBJECTS - 1)
    connection = sqlite3.connect(path)
    for memory_id, content, user_id in (("m1", "住在阳光小区3号楼", "2001"), ("m2", "怕狗", None)):
        connection.execute(
            "INSERT INTO memories (scope, id, content, normalized, user_id, created_at, "
            "updated_at, deleted_at) VALUES ('g:1', ?, ?, ?, ?, ?, ?, ?)",
            (memory_id, content, content, user_id, AT, AT, AT),
        )
    for memory_id, content in (("m1", "住在阳光小区3号楼"), ("m2", "怕狗"), ("m3", "已清除的")):
        connection.execute(
            "INSERT INTO memory_tombstones (scope, normalized, memory_id, deleted_at) "
            "VALUES ('g:1', ?, ?, ?)",
            (content, memory_id, AT),
        )
    connection.commit()
    connection.close()

    database = await Database.open(path)
    try:
        tombstones = await MemoryStore(database).load_tombstone_records("g:1")
    finally:
        await database.close()

    assert sorted(tombstones, key=lambda t: t.memory_id) == [
        Tombstone("住在阳光小区3号楼", "m1", "2001"),
        Tombstone("怕狗", "m2", None),
        Tombstone("已清除的", "m3", None),
    ]
