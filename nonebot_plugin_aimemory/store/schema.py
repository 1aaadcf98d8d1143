"""What the two databases' schemas share: the version both are at (a SQLite file counts it
in `PRAGMA user_version`, a PostgreSQL schema in its `schema_version` table), and the
migrations written once for both. Each backend declares its own tables (sqlite/schema.py,
postgres/schema.py); tests/store/test_schema_parity.py holds the two to the same tables,
columns, keys and indexes."""

from __future__ import annotations

# The version a new database is created at; every backend migrates an older one to it.
# Raise it with a migration appended on both backends (sqlite/migrations.py,
# postgres/schema.py), the latest schema of each changed to match.
SCHEMA_VERSION = 21

# Schema version 19, written for both databases (each backend's schema.py uses it as it
# is, in its migrations and its latest schema): claims on received messages (store/message_claims.py).
MESSAGE_CLAIMS = """
CREATE TABLE IF NOT EXISTS message_claims (
    id BIGINT PRIMARY KEY,
    chat TEXT NOT NULL,
    sender TEXT NOT NULL,
    said TEXT NOT NULL,
    sent_at DOUBLE PRECISION NOT NULL,
    claimed_at DOUBLE PRECISION NOT NULL,
    answered_by TEXT,
    logged_in TEXT
);
CREATE INDEX IF NOT EXISTS message_claims_by_message ON message_claims (chat, sender, said, sent_at);
CREATE INDEX IF NOT EXISTS message_claims_by_time ON message_claims (claimed_at);
CREATE TABLE IF NOT EXISTS message_copies (
    message BIGINT NOT NULL,
    account TEXT NOT NULL,
    message_id TEXT NOT NULL,
    process TEXT NOT NULL,
    PRIMARY KEY (message, account)
);
CREATE TABLE IF NOT EXISTS chat_presence (
    chat TEXT NOT NULL,
    account TEXT NOT NULL,
    process TEXT NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (chat, account)
);
CREATE TABLE IF NOT EXISTS claim_holders (
    process TEXT PRIMARY KEY,
    alive_at DOUBLE PRECISION NOT NULL
);
"""

# Schema version 20, written for both databases: where each memory came from
# (store/provenance.py). What an old row tells is kept (the reviewer's, the extraction's, and
# the panel's, the one writer of `source` 'command' before); the rest stays unknown.
MEMORY_PROVENANCE = """
ALTER TABLE memories ADD COLUMN origin TEXT;
ALTER TABLE memories ADD COLUMN said_by_id TEXT;
ALTER TABLE memories ADD COLUMN said_by_name TEXT;
ALTER TABLE memories ADD COLUMN told_by_id TEXT;
ALTER TABLE memories ADD COLUMN told_by_name TEXT;
ALTER TABLE memories ADD COLUMN said_in TEXT;
UPDATE memories SET origin = CASE source
    WHEN 'review' THEN 'review' WHEN 'extract' THEN 'extract' WHEN 'command' THEN 'panel' END;
"""
