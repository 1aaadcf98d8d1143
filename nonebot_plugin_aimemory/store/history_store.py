"""Conversation windows stored row per message; a turn appends, only compression rewrites."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime

from ..engine import CompressionStats, Message
from .backend import Backend
from .connection import Connection
from .times import parse_utc_text, utc_now_text, utc_text

logger = logging.getLogger("nonebot_plugin_aimemory")


def persisted_body(message: Message) -> str:
    """What a message is stored as: its API JSON with images reduced to markers."""
    return message.with_image_markers().api_json().decode()


class DatabaseHistoryStore:
    """`HistoryStore` on the `sessions` and `messages` tables."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def load(self, key: str) -> list[Message]:
        """The stored window of `key`; unreadable rows are skipped with a warning."""
        rows = await self.database.read(
            "SELECT seq, body FROM messages WHERE session_key = ? ORDER BY seq", (key,)
        )
        messages: list[Message] = []
        for seq, body in rows:
            try:
                messages.append(Message.from_api(json.loads(body)))
            except (ValueError, TypeError, AttributeError):
                logger.warning("skipping unreadable history row %s#%s", key, seq)
        return messages

    async def load_stats(self, key: str) -> CompressionStats:
        """How often `key` was compressed, and when last."""
        rows = await self.database.read(
            "SELECT compressions, last_compressed_at FROM sessions WHERE key = ?", (key,)
        )
        if not rows:
            return CompressionStats()
        count, last_at = rows[0]
        return CompressionStats(int(count), parse_utc_text(last_at) if last_at else None)

    async def append(self, key: str, messages: Sequence[Message]) -> None:
        """Add messages after the last stored one, in one transaction."""
        rows = [(m.role, persisted_body(m)) for m in messages]
        if not rows:
            return

        def work(connection: Connection) -> None:
            now = utc_now_text()
            # The counter is bumped inside this transaction, so concurrent appends never
            # reuse a sequence number.
            (next_seq,) = connection.execute(
                "INSERT INTO sessions (key, next_seq, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET next_seq = sessions.next_seq + excluded.next_seq, "
                "updated_at = excluded.updated_at RETURNING next_seq",
                (key, len(rows), now),
            ).fetchone()
            first = next_seq - len(rows)
            connection.executemany(
                "INSERT INTO messages (session_key, seq, role, body, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(key, first + i, role, body, now) for i, (role, body) in enumerate(rows)],
            )

        await self.database.write(work)

    async def replace(
        self, key: str, messages: Sequence[Message], *, compressed_at: datetime | None = None
    ) -> None:
        """Overwrite the stored window; `compressed_at` also counts a compression."""
        rows = [(m.role, persisted_body(m)) for m in messages]
        compressed_text = utc_text(compressed_at) if compressed_at else None

        def work(connection: Connection) -> None:
            now = utc_now_text()
            connection.execute("DELETE FROM messages WHERE session_key = ?", (key,))
            connection.execute(
                "INSERT INTO sessions (key, next_seq, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET next_seq = excluded.next_seq, "
                "updated_at = excluded.updated_at",
                (key, len(rows), now),
            )
            if compressed_text is not None:
                connection.execute(
                    "UPDATE sessions SET compressions = compressions + 1, "
                    "last_compressed_at = ? WHERE key = ?",
                    (compressed_text, key),
                )
            connection.executemany(
                "INSERT INTO messages (session_key, seq, role, body, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(key, i, role, body, now) for i, (role, body) in enumerate(rows)],
            )

        await self.database.write(work)

    async def clear(self, key: str) -> None:
        """Forget the window and its compression stats."""
        # The sessions_delete_messages trigger removes the messages in the same statement.
        await self.database.write_one("DELETE FROM sessions WHERE key = ?", (key,))


class MemoryOnlyHistoryStore:
    """The stand-in when no database could be opened: windows live in memory only."""

    async def load(self, key: str) -> list[Message]:
        """Always empty: nothing survives a restart."""
        return []

    async def load_stats(self, key: str) -> CompressionStats:
        """Always zero: compressions are not counted without a database."""
        return CompressionStats()

    async def append(self, key: str, messages: Sequence[Message]) -> None:
        """Nothing to persist."""
        return None

    async def replace(
        self, key: str, messages: Sequence[Message], *, compressed_at: datetime | None = None
    ) -> None:
        """Nothing to persist."""
        return None

    async def clear(self, key: str) -> None:
        """Nothing to forget."""
        return None
