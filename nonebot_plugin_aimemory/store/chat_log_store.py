"""The objective chat log: rows as they were said, and a full-text index of their jieba
tokens (FTS5's own tokenizer does not split Chinese)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aiosqlite

from .. import segmenter
from .database import Database


@dataclass(frozen=True, slots=True)
class ChatRow:
    """One logged message; `id` is what memories cite as evidence."""

    session_key: str
    created_at: str
    role: str
    text: str
    speaker_id: str | None = None
    speaker_name: str | None = None
    addressed: bool = True
    id: int = 0


_COLUMNS = "id, session_key, created_at, speaker_id, speaker_name, role, text, addressed"


def _row(raw: Sequence[object]) -> ChatRow:
    id_, key, created, speaker_id, speaker_name, role, text, addressed = raw
    return ChatRow(
        id=int(id_),  # type: ignore[arg-type]
        session_key=str(key),
        created_at=str(created),
        speaker_id=str(speaker_id) if speaker_id is not None else None,
        speaker_name=str(speaker_name) if speaker_name is not None else None,
        role=str(role),
        text=str(text),
        addressed=bool(addressed),
    )


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any of the text's tokens, each quoted as an FTS5 string
    (quotes doubled) so `*`, `NEAR`, `OR`, `-`, `(` in user input are just characters."""
    terms = list(dict.fromkeys(segmenter.tokens(text)))
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms[:32])


class ChatLogStore:
    """SQL for `chat_log` and its FTS index; reads are always bound to one session."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def insert_many(self, rows: Sequence[ChatRow]) -> None:
        if not rows:
            return
        prepared = [(row, segmenter.segmented(row.text)) for row in rows]

        async def work(connection: aiosqlite.Connection) -> None:
            for row, tokens in prepared:
                cursor = await connection.execute(
                    "INSERT INTO chat_log (session_key, created_at, speaker_id, speaker_name, "
                    "role, text, addressed) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        row.session_key,
                        row.created_at,
                        row.speaker_id,
                        row.speaker_name,
                        row.role,
                        row.text,
                        int(row.addressed),
                    ),
                )
                await connection.execute(
                    "INSERT INTO chat_log_fts (rowid, session_key, tokens) VALUES (?, ?, ?)",
                    (cursor.lastrowid, row.session_key, tokens),
                )
                await cursor.close()

        await self.database.write(work)

    async def recent(self, session_key: str, limit: int) -> list[ChatRow]:
        """The newest `limit` rows of the session, oldest first."""
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM chat_log WHERE session_key = ? ORDER BY id DESC LIMIT ?",
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
        rows = await self.database.read(
            "SELECT COUNT(*) FROM chat_log WHERE session_key = ? AND id > ?",
            (session_key, after_id),
        )
        return int(rows[0][0])

    async def search(self, session_key: str, text: str, limit: int) -> list[ChatRow]:
        """Rows of the session matching `text`, best bm25 first, then newest."""
        query = fts_query(text)
        if query is None:
            return []
        rows = await self.database.read(
            f"SELECT {', '.join('c.' + c.strip() for c in _COLUMNS.split(','))} "
            "FROM chat_log_fts JOIN chat_log AS c ON c.id = chat_log_fts.rowid "
            "WHERE chat_log_fts MATCH ? AND chat_log_fts.session_key = ? "
            "ORDER BY bm25(chat_log_fts), c.id DESC LIMIT ?",
            (query, session_key, limit),
        )
        return [_row(r) for r in rows]

    async def delete_older_than(self, cutoff: str) -> int:
        """Remove rows logged before `cutoff` (fixed-width UTC text) and their index rows."""

        async def work(connection: aiosqlite.Connection) -> int:
            await connection.execute(
                "DELETE FROM chat_log_fts WHERE rowid IN "
                "(SELECT id FROM chat_log WHERE created_at < ?)",
                (cutoff,),
            )
            cursor = await connection.execute(
                "DELETE FROM chat_log WHERE created_at < ?", (cutoff,)
            )
            deleted = cursor.rowcount
            await cursor.close()
            return deleted

        return await self.database.write(work)
