"""The database schema and its migrations, applied in order by `PRAGMA user_version`."""

from __future__ import annotations

# Each entry migrates from version i to i + 1; never edit a released entry, append a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS sessions (
        key TEXT PRIMARY KEY,
        next_seq INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS messages (
        session_key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (session_key, seq)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS group_counters (
        group_id TEXT PRIMARY KEY,
        unaddressed INTEGER NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    """
    ALTER TABLE sessions ADD COLUMN compressions INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN last_compressed_at TEXT;
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
