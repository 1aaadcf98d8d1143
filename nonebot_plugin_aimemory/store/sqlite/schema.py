"""The SQLite file's latest schema, built in one step for a new file, at the version
(store/schema.py) the migrations (migrations.py) bring an older file to, applied in order
by `PRAGMA user_version`."""

from __future__ import annotations

import re

from ..schema import MESSAGE_CLAIMS

# A new file gets the schema that every migration builds, in one step. Keep it equal
# to that result (tests/store/test_migrations.py compares the two): when a migration is
# appended, change this script to match. Every statement tolerates running on a file that
# already holds it, so two processes creating the same file at once cannot fail.
LATEST_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    key TEXT PRIMARY KEY,
    next_seq INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    compressions INTEGER NOT NULL DEFAULT 0,
    last_compressed_at TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    session_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_key, seq)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS sessions_delete_messages AFTER DELETE ON sessions
BEGIN
    DELETE FROM messages WHERE session_key = OLD.key;
END;
CREATE TABLE IF NOT EXISTS chat_counters (
    chat_key TEXT PRIMARY KEY,
    unaddressed INTEGER NOT NULL,
    updated_at TEXT NOT NULL
) WITHOUT ROWID;
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
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memories_by_normalized ON memories (scope, normalized);
CREATE TABLE IF NOT EXISTS memory_tombstones (
    scope TEXT NOT NULL,
    normalized TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    deleted_at TEXT NOT NULL,
    user_id TEXT,
    PRIMARY KEY (scope, normalized)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chat_log (
    id INTEGER PRIMARY KEY,
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
    id INTEGER PRIMARY KEY,
    speaker TEXT NOT NULL,
    tokens TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS chat_log_fts USING fts5 (
    speaker, tokens, content = '', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS chat_log_fts_vocab USING fts5vocab (chat_log_fts, 'row');
CREATE TABLE IF NOT EXISTS chat_log_reindex (
    only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
    below_id INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_log_ids (
    only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
    last_id INTEGER NOT NULL
);
INSERT OR IGNORE INTO chat_log_ids (only_row, last_id) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS review_state (
    session_key TEXT PRIMARY KEY,
    enabled INTEGER,
    interval_seconds INTEGER,
    last_review_at TEXT,
    last_reviewed_row INTEGER NOT NULL DEFAULT 0,
    pending INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS image_descriptions (
    hash TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS persona_choices (
    chat_key TEXT PRIMARY KEY,
    persona TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chat_log_vectors (
    row_id INTEGER PRIMARY KEY,
    session_key TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    convention TEXT NOT NULL DEFAULT '',
    sketch BLOB
);
CREATE INDEX IF NOT EXISTS chat_log_vectors_by_session ON chat_log_vectors (session_key);
CREATE TABLE IF NOT EXISTS token_usage (
    chat_key TEXT NOT NULL,
    day TEXT NOT NULL,
    role TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (chat_key, day, role)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS token_usage_by_day ON token_usage (day);
CREATE TABLE IF NOT EXISTS sent_messages (
    account TEXT NOT NULL,
    message_id TEXT NOT NULL,
    chat_key TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    PRIMARY KEY (account, message_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sent_messages_by_time ON sent_messages (sent_at);
CREATE TABLE IF NOT EXISTS plugin_state (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""
LATEST_SCHEMA += MESSAGE_CLAIMS  # the same on both databases (store/schema.py)

# The tables LATEST_SCHEMA creates (FTS5 adds its shadow tables on its own): a file holding
# none of them is new, whatever else it may hold.
TABLES: tuple[str, ...] = tuple(
    re.findall(r"CREATE (?:VIRTUAL )?TABLE IF NOT EXISTS (\w+)", LATEST_SCHEMA)
)
