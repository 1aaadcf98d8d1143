"""Per-session state of the background memory reviewer (survives restarts), and the claim a
process takes on a session before reviewing it, so that of several processes sharing the
database one reviews it at a time."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .backend import Backend
from .connection import Connection

_COLUMNS = (
    "session_key, enabled, interval_seconds, last_review_at, last_reviewed_row, pending, "
    "failures, next_attempt_at"
)

# What `pending` holds: no chat to review, chat waiting for a review, or chat being reviewed
# by some process, which holds the session until `next_attempt_at` (a lease it renews while
# the review runs; the lease of a process that died runs out, and another takes the session
# over). The lease's end is also the claim's token: a later claim always ends later. Taking
# a session is one conditional UPDATE, so of two processes asking at once one gets it.
IDLE, WAITING, CLAIMED = 0, 1, 2

# Sets the pending flag from the chat logged after the review mark (an integer on both
# databases; EXISTS is a boolean on PostgreSQL).
_PENDING_FROM_ROWS = (
    f"pending = CASE WHEN EXISTS (SELECT 1 FROM chat_log WHERE chat_log.session_key = "
    f"review_state.session_key AND chat_log.id > review_state.last_reviewed_row) "
    f"THEN {WAITING} ELSE {IDLE} END"
)


@dataclass(frozen=True, slots=True)
class ReviewState:
    """`enabled`/`interval_seconds` None mean "the configured default". `claimed`: a process
    was reviewing the session when it was read, holding it until `next_attempt_at`."""

    session_key: str
    enabled: bool | None = None
    interval_seconds: int | None = None
    last_review_at: str | None = None
    last_reviewed_row: int = 0
    pending: bool = False
    failures: int = 0
    next_attempt_at: str | None = None
    claimed: bool = False


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
        claimed=int(pending) == CLAIMED,
    )


def _claimed_state(
    connection: Connection, sql: str, params: tuple[object, ...]
) -> ReviewState | None:
    """The state an `UPDATE ... RETURNING` claim left, or None when it claimed nothing."""
    rows = connection.execute(f"{sql} RETURNING {_COLUMNS}", params).fetchall()
    return _state(tuple(rows[0])) if rows else None


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
        """Sessions with new chat waiting for review, or being reviewed (a claim that ran
        out is to be taken over)."""
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM review_state WHERE pending <> {IDLE} ORDER BY session_key"
        )
        return [_state(tuple(r)) for r in rows]

    async def mark_pending(self, session_keys: Iterable[str]) -> None:
        """Flag sessions as having new chat to review (a claimed one stays claimed: its
        review's end sees the new rows)."""
        keys = [(key,) for key in set(session_keys)]
        if not keys:
            return

        def work(connection: Connection) -> None:
            connection.executemany(
                f"INSERT INTO review_state (session_key, pending) VALUES (?, {WAITING}) "
                f"ON CONFLICT (session_key) DO UPDATE SET pending = CASE WHEN "
                f"review_state.pending = {CLAIMED} THEN {CLAIMED} ELSE {WAITING} END",
                keys,
            )

        await self.database.write(work)

    async def claim_due(self, seen: ReviewState, now: str, until: str) -> ReviewState | None:
        """Claim a session for a scheduled review until `until`: only if it still has chat
        waiting, no process holds it and no retry waits (at `now`), and nobody reviewed it
        since it was read as `seen`. The claimed state, or None."""

        def work(connection: Connection) -> ReviewState | None:
            return _claimed_state(
                connection,
                f"UPDATE review_state SET pending = {CLAIMED}, next_attempt_at = ? "
                f"WHERE session_key = ? AND pending <> {IDLE} "
                "AND (next_attempt_at IS NULL OR next_attempt_at <= ?) "
                "AND last_reviewed_row = ? AND failures = ? AND COALESCE(last_review_at, '') = ?",
                (
                    until,
                    seen.session_key,
                    now,
                    seen.last_reviewed_row,
                    seen.failures,
                    seen.last_review_at or "",
                ),
            )

        return await self.database.write(work)

    async def claim(self, session_key: str, now: str, until: str) -> ReviewState | None:
        """Claim a session for a review asked for by hand until `until`, whatever its
        schedule or retry wait, unless another process holds it (at `now`). The claimed
        state, or None."""

        def work(connection: Connection) -> ReviewState | None:
            connection.execute(
                "INSERT INTO review_state (session_key) VALUES (?) ON CONFLICT DO NOTHING",
                (session_key,),
            )
            return _claimed_state(
                connection,
                f"UPDATE review_state SET pending = {CLAIMED}, next_attempt_at = ? "
                f"WHERE session_key = ? AND (pending <> {CLAIMED} "
                "OR COALESCE(next_attempt_at, '') <= ?)",
                (until, session_key, now),
            )

        return await self.database.write(work)

    async def renew(self, session_key: str, claim: str, until: str) -> bool:
        """Extend the claim ending at `claim` to `until`; False when it is no longer held
        (it ran out and another process took the session)."""

        def work(connection: Connection) -> bool:
            cursor = connection.execute(
                "UPDATE review_state SET next_attempt_at = ? "
                f"WHERE session_key = ? AND pending = {CLAIMED} AND next_attempt_at = ?",
                (until, session_key, claim),
            )
            return cursor.rowcount == 1

        return await self.database.write(work)

    async def release(self, session_key: str, claim: str) -> None:
        """Hand back a claim without a review done (the bot stops): the session waits for
        the next tick of any process."""
        await self.database.write_one(
            f"UPDATE review_state SET pending = {WAITING}, next_attempt_at = NULL "
            f"WHERE session_key = ? AND pending = {CLAIMED} AND next_attempt_at = ?",
            (session_key, claim),
        )

    async def set_enabled(self, session_key: str, enabled: bool) -> None:
        """Switch a session's automatic review on or off."""
        await self._upsert(session_key, "enabled", int(enabled))

    async def set_interval(self, session_key: str, seconds: int) -> None:
        """Set a session's own review interval."""
        await self._upsert(session_key, "interval_seconds", seconds)

    async def finish(
        self, session_key: str, reviewed_at: str, last_row: int, *, claim: str | None = None
    ) -> None:
        """Record a review; it stays pending only if rows arrived after the reviewed ones.
        `claim`: the end of the claim the review held, handed back here; a claim it no
        longer holds (or, without one, any claim) stays with its holder, and only the mark
        moves."""
        held = (
            f"pending <> {CLAIMED}"
            if claim is None
            else f"pending = {CLAIMED} AND next_attempt_at = ?"
        )

        def work(connection: Connection) -> None:
            connection.execute(
                "INSERT INTO review_state (session_key) VALUES (?) ON CONFLICT DO NOTHING",
                (session_key,),
            )
            # A review never moves the mark back (CASE: PostgreSQL's MAX takes one argument).
            connection.execute(
                "UPDATE review_state SET last_review_at = ?, last_reviewed_row = CASE "
                "WHEN last_reviewed_row > ? THEN last_reviewed_row ELSE ? END "
                "WHERE session_key = ?",
                (reviewed_at, last_row, last_row, session_key),
            )
            connection.execute(
                "UPDATE review_state SET failures = 0, next_attempt_at = NULL, "
                f"{_PENDING_FROM_ROWS} WHERE session_key = ? AND {held}",
                (session_key,) if claim is None else (session_key, claim),
            )

        await self.database.write(work)

    async def fail(
        self,
        session_key: str,
        failures: int,
        next_attempt_at: str | None,
        *,
        claim: str | None = None,
    ) -> None:
        """Record a failed review and when to retry it, handing back its `claim`; nothing
        is recorded for a claim no longer held (its new holder records its own review) or,
        without one, for a session another process holds."""
        held = (
            f"pending <> {CLAIMED}"
            if claim is None
            else f"pending = {CLAIMED} AND next_attempt_at = ?"
        )

        def work(connection: Connection) -> None:
            connection.execute(
                "UPDATE review_state SET failures = ?, next_attempt_at = ?, "
                f"pending = {WAITING} WHERE session_key = ? AND {held}",
                (failures, next_attempt_at, session_key)
                if claim is None
                else (failures, next_attempt_at, session_key, claim),
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
