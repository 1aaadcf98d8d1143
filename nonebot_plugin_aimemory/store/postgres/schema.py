"""The plugin's tables on PostgreSQL, in a schema of their own (`aimemory`): the same tables,
columns and version numbers as the SQLite file (sqlite/schema.py), written in PostgreSQL's
types.
A database is created at the latest version in one transaction; one of a newer version than
this release is refused. The chat log's search has no FTS5 here: a row's segmented terms
are kept in an array column with a GIN index, with their counts per row and per term,
filled by the plugin (chat_log_terms_index.py), so a stock server needs no extension.
pgvector is used when it is there or can be created (pgvector.py), for the chat-log rows'
vectors only, and nothing else depends on it."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from typing import Protocol

from ..connection import Connection
from ..schema import MEMORY_PROVENANCE, MESSAGE_CLAIMS, SCHEMA_VERSION  # written for both

logger = logging.getLogger("nonebot_plugin_aimemory")

SCHEMA_NAME = "aimemory"
# Two processes starting on a new database create the schema one after the other.
SCHEMA_LOCK = 0x61696D656D6F7279  # "aimemory"

# Migrations after the first PostgreSQL schema (17) go here, keyed by the version they
# reach, each the PostgreSQL form of the SQLite migration of that number
# (sqlite/migrations.py); no
# PostgreSQL database is older than 17.
MIGRATIONS: dict[int, str] = {
    18: """
    ALTER TABLE chat_log_vectors ADD COLUMN IF NOT EXISTS convention TEXT NOT NULL DEFAULT '';
    ALTER TABLE chat_log_vectors ADD COLUMN IF NOT EXISTS sketch BYTEA;
    ALTER TABLE memories ADD COLUMN IF NOT EXISTS embedding_model TEXT;
    ALTER TABLE memories ADD COLUMN IF NOT EXISTS embedding_convention TEXT;
    """,
    19: MESSAGE_CLAIMS,
    20: MEMORY_PROVENANCE,
    # A btree row holds at most 2 704 bytes: a memory's content is looked up by its md5,
    # the equality of the content itself checked beside it (the scope's rows are few).
    21: """
    DROP INDEX IF EXISTS memories_by_normalized;
    CREATE INDEX IF NOT EXISTS memories_by_normalized ON memories (scope, md5(normalized));
    """,
}


class NewerSchema(RuntimeError):
    """The database was written by a newer release of the plugin."""


class ScriptConnection(Connection, Protocol):
    """A connection that also runs a script of several statements and opens a transaction
    (database.py's `PgConnection`)."""

    def script(self, sql: str) -> None:
        """Run several statements without parameters."""
        ...

    def transaction(self) -> AbstractContextManager[object]:
        """A transaction: committed when the block ends, rolled back when it raises."""
        ...


LATEST_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    key TEXT PRIMARY KEY,
    next_seq BIGINT NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    compressions BIGINT NOT NULL DEFAULT 0,
    last_compressed_at TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    session_key TEXT NOT NULL,
    seq BIGINT NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_key, seq)
);
CREATE OR REPLACE FUNCTION sessions_delete_messages() RETURNS trigger AS $$
BEGIN
    DELETE FROM messages WHERE session_key = OLD.key;
    RETURN OLD;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS sessions_delete_messages ON sessions;
CREATE TRIGGER sessions_delete_messages AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION sessions_delete_messages();
CREATE TABLE IF NOT EXISTS chat_counters (
    chat_key TEXT PRIMARY KEY,
    unaddressed BIGINT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memories (
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    content TEXT NOT NULL,
    normalized TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    user_id TEXT,
    embedding TEXT,
    evidence TEXT NOT NULL DEFAULT '[]',
    source TEXT NOT NULL DEFAULT 'tool',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    deleted_at TEXT,
    private INTEGER NOT NULL DEFAULT 0,
    embedding_model TEXT,
    embedding_convention TEXT,
    origin TEXT,
    said_by_id TEXT,
    said_by_name TEXT,
    told_by_id TEXT,
    told_by_name TEXT,
    said_in TEXT,
    PRIMARY KEY (scope, id)
);
CREATE INDEX IF NOT EXISTS memories_by_normalized ON memories (scope, md5(normalized));
CREATE TABLE IF NOT EXISTS memory_tombstones (
    scope TEXT NOT NULL,
    normalized TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    deleted_at TEXT NOT NULL,
    user_id TEXT,
    PRIMARY KEY (scope, normalized)
);
CREATE TABLE IF NOT EXISTS chat_log (
    id BIGINT PRIMARY KEY,
    session_key TEXT NOT NULL,
    created_at TEXT NOT NULL,
    speaker_id TEXT,
    speaker_name TEXT,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    addressed INTEGER NOT NULL DEFAULT 1,
    refused INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chat_log_by_session ON chat_log (session_key, id);
CREATE INDEX IF NOT EXISTS chat_log_by_time ON chat_log (created_at);
CREATE INDEX IF NOT EXISTS chat_log_by_session_time ON chat_log (session_key, created_at);
CREATE TABLE IF NOT EXISTS chat_log_terms (
    id BIGINT PRIMARY KEY,
    terms TEXT[] NOT NULL,
    speaker_counts INTEGER[] NOT NULL,
    text_counts INTEGER[] NOT NULL,
    token_count INTEGER NOT NULL
);
-- Without a pending list: a search reads a clean index (inserts left in the list are read
-- one by one, and the planner, misjudging them, would scan the table instead).
CREATE INDEX IF NOT EXISTS chat_log_terms_by_term ON chat_log_terms USING GIN (terms)
    WITH (fastupdate = off);
CREATE TABLE IF NOT EXISTS chat_log_term_rows (
    term TEXT PRIMARY KEY,
    holding_rows BIGINT NOT NULL CHECK (holding_rows > 0)
);
CREATE TABLE IF NOT EXISTS chat_log_terms_total (
    only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
    indexed_rows BIGINT NOT NULL,
    indexed_tokens BIGINT NOT NULL
);
INSERT INTO chat_log_terms_total (only_row, indexed_rows, indexed_tokens) VALUES (1, 0, 0)
    ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS chat_log_reindex (
    only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
    below_id BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_log_ids (
    only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
    last_id BIGINT NOT NULL
);
INSERT INTO chat_log_ids (only_row, last_id) VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS review_state (
    session_key TEXT PRIMARY KEY,
    enabled INTEGER,
    interval_seconds BIGINT,
    last_review_at TEXT,
    last_reviewed_row BIGINT NOT NULL DEFAULT 0,
    pending INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT
);
CREATE TABLE IF NOT EXISTS image_descriptions (
    hash TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS persona_choices (
    chat_key TEXT PRIMARY KEY,
    persona TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_log_vectors (
    row_id BIGINT PRIMARY KEY,
    session_key TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BYTEA NOT NULL,
    convention TEXT NOT NULL DEFAULT '',
    sketch BYTEA
);
CREATE INDEX IF NOT EXISTS chat_log_vectors_by_session ON chat_log_vectors (session_key);
CREATE TABLE IF NOT EXISTS token_usage (
    chat_key TEXT NOT NULL,
    day TEXT NOT NULL,
    role TEXT NOT NULL,
    prompt_tokens BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    cached_tokens BIGINT NOT NULL DEFAULT 0,
    calls BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (chat_key, day, role)
);
CREATE INDEX IF NOT EXISTS token_usage_by_day ON token_usage (day);
CREATE TABLE IF NOT EXISTS sent_messages (
    account TEXT NOT NULL,
    message_id TEXT NOT NULL,
    chat_key TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    PRIMARY KEY (account, message_id)
);
CREATE INDEX IF NOT EXISTS sent_messages_by_time ON sent_messages (sent_at);
CREATE TABLE IF NOT EXISTS plugin_state (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
LATEST_SCHEMA += MESSAGE_CLAIMS  # the same on both databases (store/schema.py)


def create_or_check_schema(connection: ScriptConnection) -> None:
    """In one transaction: the plugin's schema created at the latest version, or brought to
    it; NewerSchema for one written by a newer release (left as it is)."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
        connection.script(
            f"CREATE SCHEMA IF NOT EXISTS {SCHEMA_NAME}; SET LOCAL search_path TO {SCHEMA_NAME};"
            "CREATE TABLE IF NOT EXISTS schema_version ("
            "only_row INTEGER PRIMARY KEY CHECK (only_row = 1), version INTEGER NOT NULL)"
        )
        row = connection.execute("SELECT version FROM schema_version").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise NewerSchema(
                f"the database is at schema version {version}, newer than this release's "
                f"{SCHEMA_VERSION}: upgrade the plugin (nothing was changed)"
            )
        if version == SCHEMA_VERSION:
            return
        if version == 0:
            connection.script(LATEST_SCHEMA)
        else:
            for target in range(version + 1, SCHEMA_VERSION + 1):
                connection.script(MIGRATIONS[target])
        connection.execute(
            "INSERT INTO schema_version (only_row, version) VALUES (1, ?) "
            "ON CONFLICT (only_row) DO UPDATE SET version = excluded.version",
            (SCHEMA_VERSION,),
        )
    # Logged once the transaction is committed.
    if version:
        logger.info("database migrated from schema version %d to %d", version, SCHEMA_VERSION)
    else:
        logger.info("database created at schema version %d", SCHEMA_VERSION)
