"""Vectors of chat-log rows (optional, `aimemory_chat_log_embeddings`): one per row, packed
small (packed_vectors.py), and recorded with what made it (the model and its prefix
convention); where the database ranks vectors itself (vector_column.py: PostgreSQL with
pgvector), also in its column."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from ..engine import VectorMaker
from .backend import Backend
from .connection import Connection
from .packed_vectors import HEADER, pack_vector
from .vector_column import VectorColumn

# Row ids in one `IN (...)` read: below SQLite's old limit of 999 bound parameters.
IDS_PER_READ = 500


@dataclass(frozen=True, slots=True)
class Unembedded:
    """A row still without a vector of the model: what it says, who said it, and where."""

    id: int
    session_key: str
    text: str
    role: str = "user"
    speaker_name: str | None = None


class ChatLogVectorStore:
    """SQL for `chat_log_vectors`; reads are bound to one session and one vector maker."""

    def __init__(self, database: Backend) -> None:
        self.database = database
        # The database's own column, once `use_vector_column` found it can have one.
        self.vector_column: VectorColumn | None = None
        self._column_checked = False

    async def use_vector_column(self) -> bool:
        """Whether the database ranks the vectors (PostgreSQL, pgvector there or created,
        its column added): checked once, and logged in one line either way."""
        if not self._column_checked:
            self.vector_column = await self.database.vector_column()
            self._column_checked = True
        return self.vector_column is not None

    async def put(self, maker: VectorMaker, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
        """Store vectors of `maker` by row id, packed (and as pgvector vectors where the
        database ranks them), replacing older ones; a row removed or refused meanwhile gets
        none. Returns how many were stored."""
        column = self.vector_column
        # Off the event loop: a backfill's batch holds 64 vectors, packed in Python.
        packed = await asyncio.to_thread(
            lambda: sorted(
                (
                    row_id,
                    pack_vector(v),
                    column.value(v) if column is not None else None,
                )
                for row_id, v in vectors
            )
        )
        embedding = (
            (f", {column.placeholder}", ", embedding", ", embedding = excluded.embedding")
            if column is not None
            else ("", "", "")
        )
        sql = (
            "INSERT INTO chat_log_vectors "
            f"(row_id, session_key, model, convention, vector{embedding[1]}) "
            f"SELECT id, session_key, ?, ?, ?{embedding[0]} FROM chat_log "
            "WHERE id = ? AND refused = 0 "
            "ON CONFLICT (row_id) DO UPDATE SET session_key = excluded.session_key, "
            "model = excluded.model, convention = excluded.convention, "
            # The sketch column (sign bits an earlier release ranked older rows by) is left
            # empty: exact search reads the vectors themselves (chatlog/row_matrix.py).
            f"vector = excluded.vector, sketch = NULL{embedding[2]}"
        )

        def work(connection: Connection) -> int:
            # As every writer of the log: a retention run deleting these rows' vectors
            # meanwhile would otherwise wait for this one while it waits for that.
            self.database.chat_log_postings().lock(connection)
            stored = 0
            # In id order: a b-tree filled in descending order (a backfill goes newest
            # first) is left with half-empty pages, 820 bytes a row instead of 460.
            for row_id, vector, text in packed:
                values = (vector, text) if column is not None else (vector,)
                cursor = connection.execute(sql, (maker.model, maker.convention, *values, row_id))
                stored += cursor.rowcount
            return stored

        return await self.database.write(work)

    async def unembedded(
        self, maker: VectorMaker, limit: int, below_id: int | None = None
    ) -> list[Unembedded]:
        """The newest `limit` rows (below `below_id`) that are neither refused nor empty and
        have no vector of `maker`, newest first."""
        below = "AND c.id < ? " if below_id is not None else ""
        rows = await self.database.read(
            "SELECT c.id, c.session_key, c.text, c.role, c.speaker_name FROM chat_log c "
            f"WHERE c.refused = 0 AND trim(c.text) != '' {below}"
            "AND NOT EXISTS (SELECT 1 FROM chat_log_vectors v "
            "WHERE v.row_id = c.id AND v.model = ? AND v.convention = ?) "
            "ORDER BY c.id DESC LIMIT ?",
            (*((below_id,) if below_id is not None else ()), *_made_by(maker), limit),
        )
        return [
            Unembedded(int(row_id), str(key), str(text), str(role), name and str(name))
            for row_id, key, text, role, name in rows
        ]

    async def unembedded_count(self, maker: VectorMaker) -> int:
        """How many rows that should have a vector of `maker` have none (for the log)."""
        rows = await self.database.read(
            "SELECT COUNT(*) FROM chat_log c WHERE c.refused = 0 AND trim(c.text) != '' "
            "AND NOT EXISTS (SELECT 1 FROM chat_log_vectors v "
            "WHERE v.row_id = c.id AND v.model = ? AND v.convention = ?)",
            _made_by(maker),
        )
        return int(rows[0][0])

    async def newest(
        self,
        session_key: str,
        maker: VectorMaker,
        limit: int,
        *,
        within: tuple[int, int] | None = None,
        below_id: int | None = None,
        dimensions: int | None = None,
    ) -> list[tuple[int, bytes]]:
        """The session's newest `limit` vectors of `maker`, newest first, by row id: only
        rows with ids in `within` (inclusive) and below `below_id`, and vectors of
        `dimensions` components, where given."""
        where, params = _narrowed(within=within, below_id=below_id, dimensions=dimensions)
        rows = await self.database.read(
            "SELECT row_id, vector FROM chat_log_vectors "
            f"WHERE session_key = ? {where}AND model = ? AND convention = ? "
            "ORDER BY row_id DESC LIMIT ?",
            (session_key, *params, *_made_by(maker), limit),
        )
        return [(int(row_id), bytes(packed)) for row_id, packed in rows]

    async def after(
        self, session_key: str, maker: VectorMaker, dimensions: int, after_id: int, limit: int
    ) -> list[tuple[int, bytes]]:
        """The session's oldest `limit` vectors of `maker` and `dimensions` on rows after
        `after_id`, oldest first."""
        where, params = _narrowed(dimensions=dimensions)
        rows = await self.database.read(
            "SELECT row_id, vector FROM chat_log_vectors "
            f"WHERE session_key = ? AND row_id > ? {where}AND model = ? AND convention = ? "
            "ORDER BY row_id LIMIT ?",
            (session_key, after_id, *params, *_made_by(maker), limit),
        )
        return [(int(row_id), bytes(packed)) for row_id, packed in rows]

    async def by_ids(
        self, session_key: str, maker: VectorMaker, row_ids: Sequence[int]
    ) -> list[tuple[int, bytes]]:
        """The session's vectors of `maker` on the rows `row_ids` (any order)."""
        found: list[tuple[int, bytes]] = []
        for start in range(0, len(row_ids), IDS_PER_READ):
            chunk = list(row_ids[start : start + IDS_PER_READ])
            rows = await self.database.read(
                "SELECT row_id, vector FROM chat_log_vectors WHERE session_key = ? "
                f"AND model = ? AND convention = ? AND row_id IN ({', '.join('?' * len(chunk))})",
                (session_key, *_made_by(maker), *chunk),
            )
            found += [(int(row_id), bytes(packed)) for row_id, packed in rows]
        return found

    async def count(self, session_key: str, maker: VectorMaker) -> int:
        """How many rows of the session have a vector of `maker`."""
        rows = await self.database.read(
            "SELECT COUNT(*) FROM chat_log_vectors "
            "WHERE session_key = ? AND model = ? AND convention = ?",
            (session_key, *_made_by(maker)),
        )
        return int(rows[0][0])


def _made_by(maker: VectorMaker) -> tuple[str, str]:
    return (maker.model, maker.convention)


def _narrowed(
    *,
    within: tuple[int, int] | None = None,
    below_id: int | None = None,
    dimensions: int | None = None,
) -> tuple[str, list[int]]:
    """The conditions (each followed by a space) and values of a read's optional limits."""
    conditions: list[str] = []
    params: list[int] = []
    if within is not None:
        conditions.append("AND row_id BETWEEN ? AND ? ")
        params += within
    if below_id is not None:
        conditions.append("AND row_id < ? ")
        params.append(below_id)
    if dimensions is not None:
        # A stored vector is its header and a byte per component (packed_vectors.py).
        conditions.append("AND length(vector) = ? ")
        params.append(HEADER.size + dimensions)
    return "".join(conditions), params


def forget_vectors(connection: Connection, where: str, params: Sequence[object]) -> None:
    """Delete the vectors of the chat_log rows `where` selects, in the caller's
    transaction (before the rows themselves go: retention, refusals)."""
    connection.execute(
        f"DELETE FROM chat_log_vectors WHERE row_id IN (SELECT id FROM chat_log WHERE {where})",
        params,
    )
