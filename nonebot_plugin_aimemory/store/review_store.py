"""Per-session state of the background memory reviewer (survives restarts)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .connection import Backend, Connection

_COLUMNS = (
    "session_key, enabled, interval_seconds, last_review_at, last_reviewed_row, pending, "
    "failures, next_attempt_at"
)


@dataclass(frozen=True, slots=True)
class ReviewState:
    """`enabled`/`interval_seconds` None mean "the configured default"."""

    session_key: str
    enabled: bool | None = None
    interval_seconds: int | None = None
    last_review_at: str | None = None
    last_reviewed_row: int = 0
    pending: bool = False
    failures: int = 0
    next_attempt_at: str | None = None


def _state(raw: tuple) -> ReviewState:
    key, enabled, interval, last_at, last_row, pending, failures, next_at = raw
    return ReviewState(
        session_key=str(key),
        enabled=None if enabled is None else bool(enabled),
        interval_seconds=None if interval is None else int(interval),
        last_review_at=last_at,
        last_reviewed_row=int(last_row),
        pending=bool(pending),
        failures=int(failures),
        next_attempt_at=next_at,
    )


class ReviewStore:
    """SQL for `review_state`."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def get(self, session_key: str) -> ReviewState:
        """A session's review state; defaults if it has none yet."""
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM review_state WHERE session_key = ?", (session_key,)
        )
        return _state(tuple(rows[0])) if rows else ReviewState(session_key)

    async def pending(self) -> list[ReviewState]:
        """Sessions with new chat waiting for review."""
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM review_state WHERE pending = 1 ORDER BY session_key"
        )
        return [_state(tuple(r)) for r in rows]

    async def mark_pending(self, session_keys: Iterable[str]) -> None:
        """Flag sessions as having new chat to review."""
        keys = [(key,) for key in set(session_keys)]
        if not keys:
            return

        def work(connection: Connection) -> None:
            connection.executemany(
                "INSERT INTO review_state (session_key, pending) VALUES (?, 1) "
                "ON CONFLICT (session_key) DO UPDATE SET pending = 1",
                keys,
            )

        await self.database.write(work)

    async def set_enabled(self, session_key: str, enabled: bool) -> None:
        """Switch a session's automatic review on or off."""
        await self._upsert(session_key, "enabled", int(enabled))

    async def set_interval(self, session_key: str, seconds: int) -> None:
        """Set a session's own review interval."""
        await self._upsert(session_key, "interval_seconds", seconds)

    async def finish(self, session_key: str, reviewed_at: str, last_row: int) -> None:
        """Record a review; it stays pending only if rows arrived after the reviewed ones."""

        def work(connection: Connection) -> None:
            connection.execute(
                "INSERT INTO review_state (session_key) VALUES (?) ON CONFLICT DO NOTHING",
                (session_key,),
            )
            # A review never moves the mark back (CASE: PostgreSQL's MAX takes one argument);
            # `pending` is an integer on both databases, and EXISTS a boolean on PostgreSQL.
            connection.execute(
                "UPDATE review_state SET last_review_at = ?, last_reviewed_row = CASE "
                "WHEN last_reviewed_row > ? THEN last_reviewed_row ELSE ? END, failures = 0, "
                "next_attempt_at = NULL, pending = CASE WHEN EXISTS "
                "(SELECT 1 FROM chat_log WHERE session_key = ? AND id > ?) THEN 1 ELSE 0 END "
                "WHERE session_key = ?",
                (reviewed_at, last_row, last_row, session_key, last_row, session_key),
            )

        await self.database.write(work)

    async def fail(self, session_key: str, failures: int, next_attempt_at: str | None) -> None:
        """Record a failed review and when to retry it."""

        def work(connection: Connection) -> None:
            connection.execute(
                "UPDATE review_state SET failures = ?, next_attempt_at = ? WHERE session_key = ?",
                (failures, next_attempt_at, session_key),
            )

        await self.database.write(work)

    async def _upsert(self, session_key: str, column: str, value: object) -> None:
        assert column in ("enabled", "interval_seconds")  # never user input

        def work(connection: Connection) -> None:
            connection.execute(
                f"INSERT INTO review_state (session_key, {column}) VALUES (?, ?) "
                f"ON CONFLICT (session_key) DO UPDATE SET {column} = excluded.{column}",
                (session_key, value),
            )

        await self.database.write(work)
