"""The SQLite file's migrations: each brings a file from one schema version to the next,
applied in order by `PRAGMA user_version` (schema.py beside it has the latest schema, built
in one step for a new file; the migrations written for both databases are in
store/schema.py)."""

from __future__ import annotations

from ..schema import MEMORY_PROVENANCE, MESSAGE_CLAIMS

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
    """
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
        PRIMARY KEY (scope, id)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS memories_by_normalized ON memories (scope, normalized);
    CREATE TABLE IF NOT EXISTS memory_tombstones (
        scope TEXT NOT NULL,
        normalized TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        deleted_at TEXT NOT NULL,
        PRIMARY KEY (scope, normalized)
    ) WITHOUT ROWID;
    """,
    """
    CREATE TABLE IF NOT EXISTS chat_log (
        id INTEGER PRIMARY KEY,
        session_key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        speaker_id TEXT,
        speaker_name TEXT,
        role TEXT NOT NULL,
        text TEXT NOT NULL,
        addressed INTEGER NOT NULL DEFAULT 1
    );
    CREATE INDEX IF NOT EXISTS chat_log_by_session ON chat_log (session_key, id);
    CREATE INDEX IF NOT EXISTS chat_log_by_time ON chat_log (created_at);
    CREATE VIRTUAL TABLE IF NOT EXISTS chat_log_fts USING fts5 (
        session_key UNINDEXED, tokens, tokenize = 'unicode61 remove_diacritics 2'
    );
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
    """,
    """
    CREATE TABLE IF NOT EXISTS image_descriptions (
        hash TEXT PRIMARY KEY,
        description TEXT NOT NULL,
        created_at TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
    # The session becomes an indexed token of the FTS row, so a search is bound to its
    # session inside the full-text match instead of reading every match's stored row.
    """
    CREATE VIRTUAL TABLE chat_log_fts_v2 USING fts5 (
        session, tokens, tokenize = 'unicode61 remove_diacritics 2'
    );
    INSERT INTO chat_log_fts_v2 (rowid, session, tokens)
        SELECT rowid, 's' || lower(hex(session_key)), tokens FROM chat_log_fts;
    DROP TABLE chat_log_fts;
    ALTER TABLE chat_log_fts_v2 RENAME TO chat_log_fts;
    """,
    # Deleting a session deletes its messages in the same statement: a clear is then one
    # statement, one trip, and cannot leave half a conversation behind.
    """
    CREATE TRIGGER IF NOT EXISTS sessions_delete_messages AFTER DELETE ON sessions
    BEGIN
        DELETE FROM messages WHERE session_key = OLD.key;
    END;
    """,
    # Chat-log ids are never reused, even after retention empties the table: reviews resume
    # after `last_reviewed_row` and memories cite rows by id as their evidence.
    """
    CREATE TABLE IF NOT EXISTS chat_log_ids (
        only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
        last_id INTEGER NOT NULL
    );
    INSERT OR IGNORE INTO chat_log_ids (only_row, last_id) VALUES (1, MAX(
        (SELECT COALESCE(MAX(id), 0) FROM chat_log),
        (SELECT COALESCE(MAX(last_reviewed_row), 0) FROM review_state)
    ));
    """,
    # A message the model service refused for its content stays in the log, marked, so
    # neither the reviewer nor the chat-log tools send it to a model again.
    """
    ALTER TABLE chat_log ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;
    """,
    # A tombstone keeps whom its memory was about: deleted memories are purged after a
    # while, and a reworded fact about someone else must still be saved then.
    """
    ALTER TABLE memory_tombstones ADD COLUMN user_id TEXT;
    UPDATE memory_tombstones SET user_id = (
        SELECT memories.user_id FROM memories
        WHERE memories.scope = memory_tombstones.scope
            AND memories.id = memory_tombstones.memory_id
    );
    """,
    # Search terms change (stopword-free queries, character bigrams for unknown words,
    # plurals, the speaker as a column), and every indexed term carries its session, so a
    # search reads only its own session's postings. The index is contentless: the terms it
    # was given are kept once, in chat_log_terms, to take rows out of it again. Terms need
    # jieba, so the store re-indexes the old rows itself, newest first, from
    # chat_log_reindex.below_id down (see ChatLogStore.catch_up_index).
    """
    DROP TABLE chat_log_fts;
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
    INSERT INTO chat_log_reindex (only_row, below_id)
        SELECT 1, MAX(id) + 1 FROM chat_log HAVING COUNT(*) > 0;
    CREATE INDEX IF NOT EXISTS chat_log_by_session_time ON chat_log (session_key, created_at);
    """,
    # The persona each chat plays; a chat without a row plays the default one.
    """
    CREATE TABLE IF NOT EXISTS persona_choices (
        chat_key TEXT PRIMARY KEY,
        persona TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
    # Optional vectors of chat-log rows (aimemory_chat_log_embeddings), one per row, of the
    # model named beside it, packed by store/packed_vectors.py; the session is repeated
    # here so a search reads its own session's vectors, newest first, from the index alone.
    """
    CREATE TABLE IF NOT EXISTS chat_log_vectors (
        row_id INTEGER PRIMARY KEY,
        session_key TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE INDEX IF NOT EXISTS chat_log_vectors_by_session ON chat_log_vectors (session_key);
    """,
    # A personal memory (scope `u:<QQ号>`) told in its owner's private chat is private: used
    # only there, until its owner makes it public. Chat memories are never private.
    """
    ALTER TABLE memories ADD COLUMN private INTEGER NOT NULL DEFAULT 0;
    """,
    # Token usage of model calls (store/usage_store.py): per chat (`g:<群号>`, `f:<QQ号>`, ''
    # for calls made for no chat), per day in AIMEMORY_TIMEZONE and per role, added to in
    # batches; read per chat over days, and over all chats by day.
    """
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
    """,
    # Which chat each message the bot sent went to (store/sent_messages.py), by the bot
    # account and the id its implementation gave the message, so a quote of the bot's own
    # message is shown only there; removed with the chat log's rows (by `sent_at`).
    """
    CREATE TABLE IF NOT EXISTS sent_messages (
        account TEXT NOT NULL,
        message_id TEXT NOT NULL,
        chat_key TEXT NOT NULL,
        sent_at TEXT NOT NULL,
        PRIMARY KEY (account, message_id)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS sent_messages_by_time ON sent_messages (sent_at);
    """,
    # Several bot accounts (onebot/accounts.py): facts about the plugin's own state, the
    # home account first (its keys stay bare); the auto-clear counters keyed by the chat as
    # one account has it (`g:123`, `g:123@10001`), the home account's rows kept as they were.
    """
    CREATE TABLE IF NOT EXISTS plugin_state (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS chat_counters (
        chat_key TEXT PRIMARY KEY,
        unaddressed INTEGER NOT NULL,
        updated_at TEXT NOT NULL
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO chat_counters (chat_key, unaddressed, updated_at)
        SELECT 'g:' || group_id, unaddressed, updated_at FROM group_counters;
    DROP TABLE IF EXISTS group_counters;
    """,
    # What made each vector (engine/embeddings.py): the model and how it was told a query
    # from a stored text (`convention`); a vector made otherwise is not compared with a
    # query and is made again in the background. Rows written before have none recorded.
    # A chat-log vector also gets its sign bits (`sketch`), scanned first so a search can
    # reach beyond the rows whose whole vectors it reads.
    """
    ALTER TABLE chat_log_vectors ADD COLUMN convention TEXT NOT NULL DEFAULT '';
    ALTER TABLE chat_log_vectors ADD COLUMN sketch BLOB;
    ALTER TABLE memories ADD COLUMN embedding_model TEXT;
    ALTER TABLE memories ADD COLUMN embedding_convention TEXT;
    """,
    # Claims on received messages, shared by the bot processes on one database
    # (store/message_claims.py): each message once, each account's copy of it, which
    # accounts are present in which chat, and which processes are alive to hold claims.
    MESSAGE_CLAIMS,
    MEMORY_PROVENANCE,
    # PostgreSQL's btree holds at most 2 704 bytes a row, less than a memory of 2 000
    # characters can take: there the lookup by content is indexed by its md5
    # (store/postgres/schema.py). A SQLite index has no such limit: nothing changes here.
    "SELECT 1;",
)
