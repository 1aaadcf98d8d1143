"""The objective chat log: rows as they were said, kept searchable by `chat_log_index`
(written in the same transactions), with the optional vectors of `chat_log_vectors`
removed together with their rows."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from .backend import Backend
from .chat_log_index import ChatLogIndex, KeywordRanking, logged_rows_on, row_terms
from .chat_log_vectors import ChatLogVectorStore, forget_vectors
from .connection import Connection
from .job_locks import Job, claim_job
from .sent_messages import forget_sent_before
from .storable import storable_text


@dataclass(frozen=True, slots=True)
class ChatRow:
    """One logged message; `id` is what memories cite as evidence. A `refused` row is a
    message the model service refused for its content: kept in the log, never sent to a
    model again (not searchable, skipped by the reviewer and the recent-chat tool)."""

    session_key: str
    created_at: str
    role: str
    text: str
    speaker_id: str | None = None
    speaker_name: str | None = None
    addressed: bool = True
    refused: bool = False
    id: int = 0


_COLUMNS = "id, session_key, created_at, speaker_id, speaker_name, role, text, addressed, refused"


@dataclass(frozen=True, slots=True)
class RankedRows:
    """A keyword ranking of one session, its rows (best first, those still there) and how
    many rows the log spans (bm25()'s N), read together (`ChatLogStore.ranked_rows`)."""

    ranking: KeywordRanking
    rows: list[ChatRow]
    logged_rows: int


def _row(raw: Sequence[object]) -> ChatRow:
    id_, key, created, speaker_id, speaker_name, role, text, addressed, refused = raw
    return ChatRow(
        id=int(id_),  # type: ignore[arg-type]
        session_key=str(key),
        created_at=str(created),
        speaker_id=str(speaker_id) if speaker_id is not None else None,
        speaker_name=str(speaker_name) if speaker_name is not None else None,
        role=str(role),
        text=str(text),
        addressed=bool(addressed),
        refused=bool(refused),
    )


class ChatLogStore:
    """SQL for `chat_log`, its full-text index and its vectors; reads are always bound to
    one session."""

    def __init__(self, database: Backend) -> None:
        self.database = database
        self.index = ChatLogIndex(database)
        self.vectors = ChatLogVectorStore(database)

    async def insert_many(self, rows: Sequence[ChatRow]) -> list[int]:
        """Insert rows and their search terms in one transaction; the rows' new ids, in
        order."""
        if not rows:
            return []
        # jieba takes ~0.2 ms a row: a batch of hundreds would stall the event loop.
        terms = await asyncio.to_thread(
            lambda: [row_terms(row.role, row.speaker_name, row.text) for row in rows]
        )

        def work(connection: Connection) -> list[int]:
            # The ids are taken by moving the one counter row on: a writer in another process
            # (PostgreSQL) waits for this transaction's lock on it, so no id is taken twice.
            # The counter never goes below an id already used (a file from before it).
            (last_id,) = connection.execute(
                "UPDATE chat_log_ids SET last_id = ? + CASE "
                "WHEN last_id >= (SELECT COALESCE(MAX(id), 0) FROM chat_log) THEN last_id "
                "ELSE (SELECT COALESCE(MAX(id), 0) FROM chat_log) END RETURNING last_id",
                (len(rows),),
            ).fetchone()
            ids = range(int(last_id) - len(rows) + 1, int(last_id) + 1)
            connection.executemany(
                "INSERT INTO chat_log (id, session_key, created_at, speaker_id, speaker_name, "
                "role, text, addressed, refused) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        row_id,
                        row.session_key,
                        row.created_at,
                        row.speaker_id,
                        storable_text(row.speaker_name) if row.speaker_name else row.speaker_name,
                        row.role,
                        storable_text(row.text),
                        int(row.addressed),
                        int(row.refused),
                    )
                    for row_id, row in zip(ids, rows, strict=True)
                ],
            )
            self.index.index_rows(
                connection,
                [
                    (row_id, *row_terms)
                    for row_id, row, row_terms in zip(ids, rows, terms, strict=True)
                    if not row.refused
                ],
            )
            return list(ids)

        return await self.database.write(work)

    async def mark_refused(self, rows: Sequence[ChatRow]) -> None:
        """Mark logged rows as refused and take them out of the search index. A row is found
        by what it holds (it was queued before it had an id): the newest unmarked match."""
        if not rows:
            return
        same = self.database.null_safe_equals

        def work(connection: Connection) -> None:
            # The index's writers first, then rows: the order every chat-log writer locks in.
            self.index.postings.lock(connection)
            for row in rows:
                found = connection.execute(
                    "SELECT id FROM chat_log WHERE session_key = ? AND created_at = ? "
                    f"AND role = ? AND text = ? AND speaker_id {same} ? AND refused = 0 "
                    "ORDER BY id DESC LIMIT 1",
                    (
                        row.session_key,
                        row.created_at,
                        row.role,
                        storable_text(row.text),
                        row.speaker_id,
                    ),
                ).fetchone()
                if found is None:
                    continue
                connection.execute("UPDATE chat_log SET refused = 1 WHERE id = ?", found)
                self.index.unindex_rows(connection, "t.id = ?", found)
                forget_vectors(connection, "id = ?", found)

        await self.database.write(work)

    async def recent(
        self, session_key: str, limit: int, *, with_refused: bool = True
    ) -> list[ChatRow]:
        """The newest `limit` rows of the session, oldest first (without refused rows
        unless `with_refused`)."""
        only_accepted = "" if with_refused else "AND refused = 0 "
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM chat_log WHERE session_key = ? {only_accepted}"
            "ORDER BY id DESC LIMIT ?",
            (session_key, limit),
        )
        return [_row(r) for r in reversed(rows)]

    async def since(self, session_key: str, after_id: int, limit: int) -> list[ChatRow]:
        """The newest `limit` rows after `after_id`, oldest first."""
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM chat_log WHERE session_key = ? AND id > ? "
            "ORDER BY id DESC LIMIT ?",
            (session_key, after_id, limit),
        )
        return [_row(r) for r in reversed(rows)]

    async def count_since(self, session_key: str, after_id: int) -> int:
        """How many rows a session has after row `after_id`."""
        rows = await self.database.read(
            "SELECT COUNT(*) FROM chat_log WHERE session_key = ? AND id > ?",
            (session_key, after_id),
        )
        return int(rows[0][0])

    async def first_with_rows(
        self, session_key: str, periods: Sequence[tuple[str, str]]
    ) -> int | None:
        """The index of the first of `periods` (UTC [start, end) texts) in which the session
        has rows, or None: one statement, each period an index seek, stopping at the first."""
        if not periods:
            return None
        exists = (
            "EXISTS (SELECT 1 FROM chat_log WHERE session_key = ? AND created_at >= ? "
            "AND created_at < ?)"
        )
        cases = " ".join(f"WHEN {exists} THEN {i}" for i in range(len(periods)))
        rows = await self.database.read(
            f"SELECT CASE {cases} END",
            [value for start, end in periods for value in (session_key, start, end)],
        )
        found = rows[0][0]
        return int(found) if found is not None else None

    async def search(
        self,
        session_key: str,
        text: str,
        limit: int,
        *,
        periods: Sequence[tuple[str, str]] = (),
        feedback: bool = False,
    ) -> list[ChatRow]:
        """The session's rows best matching `text` (words or a whole question), best first;
        rows said within `periods` (UTC [start, end) texts) rank higher; with `feedback`,
        rows sharing the best rows' words too. See `ChatLogIndex.ranking`."""
        ranking = await self.index.ranking(session_key, text, limit, periods, feedback=feedback)
        return await self.rows_by_id([row_id for row_id, _ in ranking.scored])

    async def catch_up_index(self) -> None:
        """Index the rows an older release logged (see `ChatLogIndex.catch_up`); searches
        do it first, so calling it at startup only saves the first search the wait."""
        await self.index.catch_up()

    async def rows_by_id(self, ids: Sequence[int]) -> list[ChatRow]:
        """The rows of `ids` that still exist, in the order of `ids`."""
        if not ids:
            return []
        return await self.database.read_all(lambda connection: _rows_by_id_on(connection, ids))

    async def ranked_rows(self, session_key: str, text: str, limit: int) -> RankedRows:
        """The session's `limit` rows best matching `text` by keyword (`ChatLogIndex.ranking`
        without periods or feedback), with the ranking and the log's span, read in one call
        on the database: a recall's reads, made on every addressed turn."""
        terms = await self.index.query_terms(text)
        if not terms:
            return RankedRows(KeywordRanking([], [], (), terms, {}), [], 0)

        def work(connection: Connection) -> RankedRows:
            ranking = self.index.ranked_on(connection, session_key, terms, limit)
            if not ranking.scored:
                return RankedRows(ranking, [], 0)
            rows = _rows_by_id_on(connection, [row_id for row_id, _ in ranking.scored])
            return RankedRows(ranking, rows, logged_rows_on(connection))

        return await self.database.read_all(work)

    async def delete_chat(self, session_key: str) -> int:
        """Remove every row of one chat, with its index rows and vectors (the try page
        clearing a test chat); how many rows went."""

        def work(connection: Connection) -> int:
            self.index.unindex_rows(connection, "c.session_key = ?", (session_key,))
            forget_vectors(connection, "session_key = ?", (session_key,))
            cursor = connection.execute(
                "DELETE FROM chat_log WHERE session_key = ?", (session_key,)
            )
            return cursor.rowcount

        return await self.database.write(work)

    async def delete_older_than(self, cutoff: str) -> int:
        """Remove rows logged before `cutoff` (fixed-width UTC text), their index rows and
        their vectors, and the records of the bot's messages sent before it. How many rows
        went: 0 when another process is doing this very cleanup (job_locks.py)."""

        def work(connection: Connection) -> int:
            if not claim_job(self.database, connection, Job.CHAT_LOG_RETENTION):
                return 0
            self.index.unindex_rows(connection, "c.created_at < ?", (cutoff,))
            forget_vectors(connection, "created_at < ?", (cutoff,))
            forget_sent_before(connection, cutoff)
            cursor = connection.execute("DELETE FROM chat_log WHERE created_at < ?", (cutoff,))
            return cursor.rowcount

        return await self.database.write(work)


def _rows_by_id_on(connection: Connection, ids: Sequence[int]) -> list[ChatRow]:
    """`ChatLogStore.rows_by_id`, read on `connection`."""
    placeholders = ", ".join("?" for _ in ids)
    rows = connection.execute(
        f"SELECT {_COLUMNS} FROM chat_log WHERE id IN ({placeholders})", ids
    ).fetchall()
    by_id = {int(row[0]): _row(row) for row in rows}
    return [by_id[i] for i in ids if i in by_id]
