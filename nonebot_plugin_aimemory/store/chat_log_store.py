"""The objective chat log: rows as they were said, and a full-text index of their jieba
tokens (FTS5's own tokenizer does not split Chinese)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from ..text import segmenter
from ..text.encodable import encodable
from .database import Database


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


# bm25 scores at most this many of the newest matches: a broad query in a long log would
# otherwise score and sort tens of thousands of rows.
MAX_RANKED_MATCHES = 2000


def session_token(session_key: str) -> str:
    """The session as one alphanumeric FTS token (`g:123` -> `s673a313233`)."""
    return "s" + session_key.encode().hex()


def fts_query(session_key: str, text: str) -> str | None:
    """An FTS5 query for rows of `session_key` matching any token of `text`. Every term is
    quoted as an FTS5 string (quotes doubled), so `*`, `NEAR`, `OR`, `-`, `(` in user input
    are just characters."""
    terms = list(dict.fromkeys(segmenter.tokens(text)))
    if not terms:
        return None
    alternatives = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms[:32])
    return f'session : "{session_token(session_key)}" AND tokens : ({alternatives})'


class ChatLogStore:
    """SQL for `chat_log` and its FTS index; reads are always bound to one session."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def insert_many(self, rows: Sequence[ChatRow]) -> None:
        """Insert rows and their segmented text (for full-text search) in one transaction."""
        if not rows:
            return
        # jieba takes ~0.2 ms a row: a batch of hundreds would stall the event loop.
        tokens = await asyncio.to_thread(
            lambda: [segmenter.segmented(encodable(r.text)) for r in rows]
        )

        def work(connection: sqlite3.Connection) -> None:
            (last_id,) = connection.execute(
                "SELECT MAX((SELECT COALESCE(MAX(id), 0) FROM chat_log), "
                "(SELECT COALESCE(MAX(last_id), 0) FROM chat_log_ids))"
            ).fetchone()
            ids = range(last_id + 1, last_id + 1 + len(rows))
            connection.execute(
                "INSERT OR REPLACE INTO chat_log_ids (only_row, last_id) VALUES (1, ?)",
                (ids[-1],),
            )
            connection.executemany(
                "INSERT INTO chat_log (id, session_key, created_at, speaker_id, speaker_name, "
                "role, text, addressed, refused) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        row_id,
                        row.session_key,
                        row.created_at,
                        row.speaker_id,
                        encodable(row.speaker_name) if row.speaker_name else row.speaker_name,
                        row.role,
                        encodable(row.text),
                        int(row.addressed),
                        int(row.refused),
                    )
                    for row_id, row in zip(ids, rows, strict=True)
                ],
            )
            connection.executemany(
                "INSERT INTO chat_log_fts (rowid, session, tokens) VALUES (?, ?, ?)",
                [
                    (row_id, session_token(row.session_key), row_tokens)
                    for row_id, row, row_tokens in zip(ids, rows, tokens, strict=True)
                    if not row.refused
                ],
            )

        await self.database.write(work)

    async def mark_refused(self, rows: Sequence[ChatRow]) -> None:
        """Mark logged rows as refused and take them out of the search index. A row is found
        by what it holds (it was queued before it had an id): the newest unmarked match."""
        if not rows:
            return

        def work(connection: sqlite3.Connection) -> None:
            for row in rows:
                found = connection.execute(
                    "SELECT id FROM chat_log WHERE session_key = ? AND created_at = ? "
                    "AND role = ? AND text = ? AND speaker_id IS ? AND refused = 0 "
                    "ORDER BY id DESC LIMIT 1",
                    (row.session_key, row.created_at, row.role, row.text, row.speaker_id),
                ).fetchone()
                if found is None:
                    continue
                connection.execute("UPDATE chat_log SET refused = 1 WHERE id = ?", found)
                connection.execute("DELETE FROM chat_log_fts WHERE rowid = ?", found)

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

    async def search(self, session_key: str, text: str, limit: int) -> list[ChatRow]:
        """Rows of the session matching `text`, best bm25 first, then newest (bm25 is taken
        over the newest MAX_RANKED_MATCHES matches)."""
        query = fts_query(session_key, text)
        if query is None:
            return []
        cutoff = await self.database.read(
            "SELECT rowid FROM chat_log_fts WHERE chat_log_fts MATCH ? "
            "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (query, MAX_RANKED_MATCHES - 1),
        )
        oldest_ranked = int(cutoff[0][0]) if cutoff else 0
        ranked = await self.database.read(
            "SELECT rowid FROM chat_log_fts WHERE chat_log_fts MATCH ? AND rowid >= ? "
            "ORDER BY bm25(chat_log_fts, 0.0, 1.0), rowid DESC LIMIT ?",
            (query, oldest_ranked, limit),
        )
        ids = [int(row[0]) for row in ranked]
        if not ids:
            return []
        placeholders = ", ".join("?" for _ in ids)
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM chat_log WHERE id IN ({placeholders})", ids
        )
        by_id = {int(row[0]): _row(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def delete_older_than(self, cutoff: str) -> int:
        """Remove rows logged before `cutoff` (fixed-width UTC text) and their index rows."""

        def work(connection: sqlite3.Connection) -> int:
            connection.execute(
                "DELETE FROM chat_log_fts WHERE rowid IN "
                "(SELECT id FROM chat_log WHERE created_at < ?)",
                (cutoff,),
            )
            cursor = connection.execute("DELETE FROM chat_log WHERE created_at < ?", (cutoff,))
            deleted = cursor.rowcount
            return deleted

        return await self.database.write(work)
