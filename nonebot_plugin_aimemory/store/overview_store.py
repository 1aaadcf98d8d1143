"""What the web panel's overview reads: every stored conversation window, every chat with a
chat log, memories, token usage or a persona choice, in a few statements that read no
message bodies and no log text (with a thousand chats the overview answers in
milliseconds); and, for one chat's page, whether anything of it is stored at all."""

from __future__ import annotations

from dataclasses import dataclass

from .connection import Backend

# Every distinct chat of the log, one index seek per chat instead of a scan of every row
# (a recursive skip-scan over chat_log_by_session_time), each with its newest row's time.
_LOGGED_CHATS = """
WITH RECURSIVE chats(key) AS (
    SELECT MIN(session_key) FROM chat_log
    UNION ALL
    SELECT (SELECT MIN(session_key) FROM chat_log WHERE session_key > chats.key)
    FROM chats WHERE chats.key IS NOT NULL
)
SELECT key, (SELECT MAX(created_at) FROM chat_log WHERE session_key = chats.key)
FROM chats WHERE key IS NOT NULL
"""


def _distinct(table: str, column: str, below: str) -> str:
    """Every distinct value of `column` (the leading column of `table`'s primary key) that
    sorts below `below`, one index seek per value (the skip-scan above). Only called with
    the literal names below."""
    return f"""
WITH RECURSIVE found(value) AS (
    SELECT MIN({column}) FROM {table} WHERE {column} < '{below}'
    UNION ALL
    SELECT (SELECT MIN({column}) FROM {table} WHERE {column} > found.value AND {column} < '{below}')
    FROM found WHERE found.value IS NOT NULL
)
SELECT value FROM found WHERE value IS NOT NULL
"""


# Chats' keys (`f:…`, `g:…`) sort below every person's (`u:…`).
_CHAT_KEYS_BELOW = "u:"
_MEMORY_SCOPES = (
    f"SELECT * FROM ({_distinct('memories', 'scope', _CHAT_KEYS_BELOW)})"
    f" UNION SELECT * FROM ({_distinct('memory_tombstones', 'scope', _CHAT_KEYS_BELOW)})"
)
_ACTIVE_CHATS = (
    f"SELECT * FROM ({_distinct('token_usage', 'chat_key', _CHAT_KEYS_BELOW)})"
    " UNION SELECT chat_key FROM persona_choices"
)
# One scope's stored traces: under its own key (a window, memories, tombstones), under any
# key of its chat (`g:1` or `g:1#<persona>`: `#` sorts just before `$`), and of the chat
# itself (chat-log rows, usage, a persona choice); ?1 is the key, ?2 the chat's. Every test
# is a primary-key or index seek.
_OWN = (
    "EXISTS (SELECT 1 FROM sessions WHERE key = ?1)"
    " OR EXISTS (SELECT 1 FROM memories WHERE scope = ?1)"
    " OR EXISTS (SELECT 1 FROM memory_tombstones WHERE scope = ?1)"
)
_IN_CHAT = " OR ".join(
    f"EXISTS (SELECT 1 FROM {table} WHERE {column} = ?2"
    f" OR ({column} >= ?2 || '#' AND {column} < ?2 || '$'))"
    for table, column in (
        ("sessions", "key"),
        ("memories", "scope"),
        ("memory_tombstones", "scope"),
    )
)
_OF_CHAT = (
    "EXISTS (SELECT 1 FROM chat_log WHERE session_key = ?2)"
    " OR EXISTS (SELECT 1 FROM token_usage WHERE chat_key = ?2)"
    " OR EXISTS (SELECT 1 FROM persona_choices WHERE chat_key = ?2)"
)
_TRACES = f"SELECT {_OWN}, {_IN_CHAT}, {_OF_CHAT}"


@dataclass(frozen=True, slots=True)
class ScopeTraces:
    """What is stored of one scope: under its own key (`own`: a window, memories or
    tombstones), under any scope of its chat (`in_chat`), and of the chat as a whole
    (`of_chat`: chat-log rows, token usage or a persona choice)."""

    own: bool
    in_chat: bool
    of_chat: bool


@dataclass(frozen=True, slots=True)
class StoredWindow:
    """One row of `sessions`: a window's key, how many messages it holds (`next_seq`: a
    replace renumbers from 0 and appends count on, see history_store.py), compressions and
    when it was last written (UTC text)."""

    key: str
    messages: int
    compressions: int
    updated_at: str


@dataclass(frozen=True, slots=True)
class PersonalScope:
    """A person's memories (`u:<QQ号>`, maybe `#<persona>`) and how many are live."""

    scope: str
    memories: int


class OverviewStore:
    """Read-only SQL for the panel's overview."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def windows(self) -> list[StoredWindow]:
        """Every stored window."""
        rows = await self.database.read(
            "SELECT key, next_seq, compressions, updated_at FROM sessions"
        )
        return [StoredWindow(str(k), int(n), int(c), str(u)) for k, n, c, u in rows]

    async def window(self, key: str) -> StoredWindow | None:
        """One stored window, or None."""
        rows = await self.database.read(
            "SELECT key, next_seq, compressions, updated_at FROM sessions WHERE key = ?", (key,)
        )
        return (
            StoredWindow(str(rows[0][0]), int(rows[0][1]), int(rows[0][2]), str(rows[0][3]))
            if rows
            else None
        )

    async def last_logged(self, chat_key: str) -> str | None:
        """When the chat's newest chat-log row was said (UTC text), or None."""
        rows = await self.database.read(
            "SELECT MAX(created_at) FROM chat_log WHERE session_key = ?", (chat_key,)
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

    async def logged_chats(self) -> tuple[dict[str, str], int]:
        """Chat key → time of its newest chat-log row (UTC text), for every logged chat, and
        the newest row's id (to read only what came after it next time)."""
        rows = await self.database.read(
            f"SELECT * FROM ({_LOGGED_CHATS}) UNION ALL SELECT NULL, MAX(id) FROM chat_log"
        )
        return _split_newest(rows)

    async def logged_since(self, after_id: int) -> tuple[dict[str, str], int]:
        """`logged_chats` of the rows after row `after_id` only (a primary-key range)."""
        rows = await self.database.read(
            "SELECT session_key, MAX(created_at) FROM chat_log WHERE id > ? "
            "GROUP BY session_key UNION ALL SELECT NULL, MAX(id) FROM chat_log WHERE id > ?",
            (after_id, after_id),
        )
        found, newest = _split_newest(rows)
        return found, max(newest, after_id)

    async def memory_scopes(self) -> set[str]:
        """Every chat's scope (not a person's) with memories, live or deleted, or tombstones."""
        return {str(value) for (value,) in await self.database.read(_MEMORY_SCOPES)}

    async def active_chats(self) -> set[str]:
        """Every chat key with token usage or a persona choice (the empty key of calls made
        for no chat included: the caller keeps only scopes)."""
        return {str(value) for (value,) in await self.database.read(_ACTIVE_CHATS)}

    async def traces(self, key: str, chat_key: str) -> ScopeTraces:
        """What is stored of scope `key`, of chat `chat_key`."""
        rows = await self.database.read(_TRACES, (key, chat_key))
        own, in_chat, of_chat = rows[0]
        return ScopeTraces(bool(own), bool(in_chat), bool(of_chat))

    async def personal_scopes(self) -> list[PersonalScope]:
        """Every person with live personal memories, by scope."""
        rows = await self.database.read(
            "SELECT scope, COUNT(*) FROM memories WHERE scope >= 'u:' AND scope < 'u;' "
            "AND deleted_at IS NULL GROUP BY scope ORDER BY scope"
        )
        return [PersonalScope(str(scope), int(count)) for scope, count in rows]


def _split_newest(rows: list) -> tuple[dict[str, str], int]:
    """(chat → newest time) from the rows with a key, and the id the keyless row carries."""
    found: dict[str, str] = {}
    newest = 0
    for key, value in rows:
        if key is None:
            newest = int(value or 0)
        else:
            found[str(key)] = str(value)
    return found, newest
