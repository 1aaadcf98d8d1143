"""What the web panel's overview reads: every stored conversation window, every chat with a
chat log, memories, token usage or a persona choice, in a few statements that read no
message bodies and no log text (with a thousand chats the overview answers in
milliseconds); and, for one chat's page, whether anything of it is stored at all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .backend import Backend

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


# Chats' keys (`f:…`, `g:…`) sort below every person's (`u:…`) in any collation: their
# first letters differ.
_CHAT_KEYS_BELOW = "u:"
_MEMORY_SCOPES = (
    f"SELECT * FROM ({_distinct('memories', 'scope', _CHAT_KEYS_BELOW)}) AS chat_scopes"
    f" UNION SELECT * FROM ({_distinct('memory_tombstones', 'scope', _CHAT_KEYS_BELOW)})"
    " AS tombstone_scopes"
)
_ACTIVE_CHATS = (
    f"SELECT * FROM ({_distinct('token_usage', 'chat_key', _CHAT_KEYS_BELOW)}) AS used"
    " UNION SELECT chat_key FROM persona_choices"
)
# The ranges below need keys compared byte by byte (`#` before `$`, `:` before `;`):
# SQLite's only order, but PostgreSQL's follows the database's collation unless told
# (the backend's `byte_order`).
# Where a scope's own keys are stored, and its chat's.
_OWN_KEYS = (("sessions", "key"), ("memories", "scope"), ("memory_tombstones", "scope"))
_CHAT_KEYS = (
    ("chat_log", "session_key"),
    ("token_usage", "chat_key"),
    ("persona_choices", "chat_key"),
)


def _traces_sql(byte_order: Callable[[str], str]) -> str:
    """One scope's stored traces: under its own key (a window, memories, tombstones), under
    any key of its chat (`g:1` or `g:1#<persona>`: `#` sorts just before `$`), and of the
    chat itself (chat-log rows, usage, a persona choice); the parameters are `_traces_params`.
    Every test is a primary-key or index seek (on SQLite; PostgreSQL scans for the ranges
    unless its database's collation is C)."""
    own = " OR ".join(
        f"EXISTS (SELECT 1 FROM {table} WHERE {column} = ?)" for table, column in _OWN_KEYS
    )
    in_chat = " OR ".join(
        f"EXISTS (SELECT 1 FROM {table} WHERE {column} = ?"
        f" OR ({byte_order(column)} >= ? || '#'"
        f" AND {byte_order(column)} < ? || '$'))"
        for table, column in _OWN_KEYS
    )
    of_chat = " OR ".join(
        f"EXISTS (SELECT 1 FROM {table} WHERE {column} = ?)" for table, column in _CHAT_KEYS
    )
    return f"SELECT {own}, {in_chat}, {of_chat}"


def _traces_params(key: str, chat_key: str) -> tuple[str, ...]:
    """The values of `_traces_sql`'s placeholders, in order (positional on both databases)."""
    return (key,) * len(_OWN_KEYS) + (chat_key,) * (3 * len(_OWN_KEYS) + len(_CHAT_KEYS))


# Personal scopes (`u:…`): the keys from `u:` up to `u;`, the character after `:`.
def _personal_scopes_sql(byte_order: Callable[[str], str]) -> str:
    """The personal scopes and their live memories' counts, in the order of their keys."""
    scope = byte_order("scope")
    return (
        "SELECT scope, COUNT(*) FROM memories "
        f"WHERE {scope} >= 'u:' AND {scope} < 'u;' "
        f"AND deleted_at IS NULL GROUP BY scope ORDER BY {scope}"
    )


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
        self._traces = _traces_sql(database.byte_order)
        self._personal_scopes = _personal_scopes_sql(database.byte_order)

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
        # The newest id as text: a column of a UNION has one type on PostgreSQL.
        rows = await self.database.read(
            f"SELECT * FROM ({_LOGGED_CHATS}) AS logged"
            " UNION ALL SELECT NULL, CAST(MAX(id) AS TEXT) FROM chat_log"
        )
        return _split_newest(rows)

    async def logged_since(self, after_id: int) -> tuple[dict[str, str], int]:
        """`logged_chats` of the rows after row `after_id` only (a primary-key range)."""
        rows = await self.database.read(
            "SELECT session_key, MAX(created_at) FROM chat_log WHERE id > ? "
            "GROUP BY session_key "
            "UNION ALL SELECT NULL, CAST(MAX(id) AS TEXT) FROM chat_log WHERE id > ?",
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
        rows = await self.database.read(self._traces, _traces_params(key, chat_key))
        own, in_chat, of_chat = rows[0]
        return ScopeTraces(bool(own), bool(in_chat), bool(of_chat))

    async def personal_scopes(self) -> list[PersonalScope]:
        """Every person with live personal memories, by scope."""
        rows = await self.database.read(self._personal_scopes)
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
