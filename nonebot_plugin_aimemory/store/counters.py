"""Per-chat count of consecutive group messages that did not address the bot (for auto-clear),
keyed by the chat as one account has it (`g:123`, `g:123@10001`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from .backend import Backend
from .connection import Connection
from .times import utc_now_text

ROWS_PER_STATEMENT = 300  # 900 bound values, under SQLite's oldest variable limit


class GroupCounterStore:
    """Persists the counters in batches; the hot path only touches a dict."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def load_all(self) -> dict[str, int]:
        """The unaddressed-message count of every group chat, by its key."""
        rows = await self.database.read("SELECT chat_key, unaddressed FROM chat_counters")
        return {str(chat_key): int(count) for chat_key, count in rows}

    async def load_group_window_keys(self) -> set[str]:
        """The keys of every stored group window, a persona's too (the groups an auto-clear
        has work to do in)."""
        rows = await self.database.read(
            "SELECT DISTINCT session_key FROM messages WHERE session_key LIKE 'g:%'"
        )
        return {str(key) for (key,) in rows}

    async def save(self, counts: Mapping[str, int], clear_windows: Collection[str] = ()) -> None:
        """Persist counters (by chat key) and delete the stored windows `clear_windows`
        (session keys), in one transaction: one trip to the database for a whole batch."""
        if not counts and not clear_windows:
            return
        now = utc_now_text()
        items = list(counts.items())

        def work(connection: Connection) -> None:
            for key in clear_windows:
                # The sessions_delete_messages trigger removes the messages too.
                connection.execute("DELETE FROM sessions WHERE key = ?", (key,))
            for start in range(0, len(items), ROWS_PER_STATEMENT):
                chunk = items[start : start + ROWS_PER_STATEMENT]
                connection.execute(
                    "INSERT INTO chat_counters (chat_key, unaddressed, updated_at) VALUES "
                    + ", ".join("(?, ?, ?)" for _ in chunk)
                    + " ON CONFLICT (chat_key) DO UPDATE SET "
                    "unaddressed = excluded.unaddressed, updated_at = excluded.updated_at",
                    [value for chat_key, count in chunk for value in (chat_key, count, now)],
                )

        await self.database.write(work)


class MemoryOnlyCounterStore:
    """No database: counters live in the auto-clear's dict only, and there is no stored
    window to clear (the in-memory one is cleared by the auto-clear itself)."""

    async def load_all(self) -> dict[str, int]:
        """Nothing was persisted."""
        return {}

    async def load_group_window_keys(self) -> set[str]:
        """No group has a stored window."""
        return set()

    async def save(self, counts: Mapping[str, int], clear_windows: Collection[str] = ()) -> None:
        """Nothing to persist."""
