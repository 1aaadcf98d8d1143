"""The chat-log rows' vectors in pgvector's column (`chat_log_vectors.embedding`), on a
PostgreSQL database where pgvector is there or could be created (pgvector.py's
`enable_pgvector`): the database ranks a session's rows by cosine itself, all of them
(`nearest`). Vectors stored before the column existed (or copied from SQLite) get theirs
from their packed bytes (`fill`); a session with rows still waiting for theirs is ranked
as without pgvector (`unfilled`), so none is missed."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence

from ...engine import VectorMaker
from ..backend import Backend
from ..connection import Connection
from ..packed_vectors import HEADER, int8_components
from .chat_log_terms_index import lock_chat_log
from .pgvector import PGVECTOR_MAX_DIMENSIONS, NoPgVector, PgVector, enable_pgvector

logger = logging.getLogger("nonebot_plugin_aimemory")

# A packed vector pgvector can hold: the header and 1 to 16 000 components.
_FILLABLE = f"length(vector) BETWEEN {HEADER.size + 1} AND {HEADER.size + PGVECTOR_MAX_DIMENSIONS}"


def pgvector_text(vector: Sequence[float]) -> str:
    """`vector` as pgvector's `vector` type reads it: `[0.1,-0.2,…]` (a float's shortest
    exact form)."""
    return "[" + ",".join(map(str, vector)) + "]"


def fits_pgvector(vector: Sequence[float]) -> bool:
    """Whether pgvector can hold `vector` (1 to 16 000 components)."""
    return 0 < len(vector) <= PGVECTOR_MAX_DIMENSIONS


async def open_pgvector_column(database: Backend) -> PgvectorColumn | None:
    """pgvector's column of the chat-log vectors, where the database can have it: pgvector
    found or created, the column added. Logged in one line either way."""
    found = await database.write(enable_pgvector)
    if isinstance(found, NoPgVector):
        logger.info(
            "chat-log vectors: ranked by the plugin, not by PostgreSQL: pgvector cannot be "
            "used (%s); with pgvector installed on the server, a superuser's CREATE "
            "EXTENSION vector (in any schema) lets PostgreSQL rank every row of a session",
            found.reason,
        )
        return None
    logger.info(
        "chat-log vectors: ranked by PostgreSQL with pgvector %s (schema %s)",
        found.version,
        found.schema,
    )
    return PgvectorColumn(database, found)


class PgvectorColumn:
    """SQL for `chat_log_vectors.embedding` (a `VectorColumn`, vector_column.py); reads are
    bound to one session and one vector maker, and to the query's length."""

    def __init__(self, database: Backend, pgvector: PgVector) -> None:
        self.database = database
        self.pgvector = pgvector

    @property
    def vector_type(self) -> str:
        """pgvector's type, qualified by its schema, for a cast (`?::…`)."""
        return self.pgvector.vector_type

    @property
    def placeholder(self) -> str:
        """A vector's value in a statement: `?` cast to pgvector's type."""
        return f"?::{self.vector_type}"

    def fits(self, vector: Sequence[float]) -> bool:
        """See `fits_pgvector`."""
        return fits_pgvector(vector)

    def value(self, vector: Sequence[float]) -> str | None:
        """`vector` in pgvector's text form, or None when it is too long (or empty)."""
        return pgvector_text(vector) if fits_pgvector(vector) else None

    async def nearest(
        self,
        session_key: str,
        maker: VectorMaker,
        query: Sequence[float],
        limit: int,
        *,
        within: Sequence[tuple[int, int]] = (),
        outside: Sequence[tuple[int, int]] = (),
    ) -> list[tuple[int, float]]:
        """The `limit` rows of the session whose vectors of `maker`, of the query's length,
        are closest to `query`, ranked by pgvector, with their cosine, best first (equal
        ones newest first): only rows with ids in the `within` spans if any, none in the
        `outside` ones (inclusive). A row without its pgvector vector yet is not among
        them (see `unfilled`)."""
        pgvector = self.pgvector
        if within and outside:
            raise ValueError("rows within spans, or outside them, not both")
        spans = within or outside
        restricted = ""
        if spans:
            either = " OR ".join("row_id BETWEEN ? AND ?" for _ in spans)
            restricted = f"AND {'' if within else 'NOT '}({either}) "
        rows = await self.database.read(
            f"SELECT row_id, embedding {pgvector.cosine_distance} ?::{pgvector.vector_type} "
            "AS distance FROM chat_log_vectors "
            "WHERE session_key = ? AND model = ? AND convention = ? "
            f"AND {pgvector.dimensions}(embedding) = ? {restricted}"
            "ORDER BY distance, row_id DESC LIMIT ?",
            (
                pgvector_text(query),
                session_key,
                maker.model,
                maker.convention,
                len(query),
                *(bound for span in spans for bound in span),
                limit,
            ),
        )
        # A zero vector has no direction: pgvector's distance to it is NaN, sorted last.
        return [
            (int(row_id), 1.0 - float(distance))
            for row_id, distance in rows
            if not math.isnan(distance)
        ]

    async def unfilled(self, session_key: str, maker: VectorMaker) -> bool:
        """Whether rows of the session still lack the pgvector copy of their vector of
        `maker` (stored before pgvector was there, or copied from SQLite)."""
        rows = await self.database.read(
            "SELECT 1 FROM chat_log_vectors WHERE embedding IS NULL AND session_key = ? "
            f"AND model = ? AND convention = ? AND {_FILLABLE} LIMIT 1",
            (session_key, maker.model, maker.convention),
        )
        return bool(rows)

    async def unfilled_count(self, maker: VectorMaker) -> int:
        """How many vectors of `maker` lack their pgvector copy (for the log)."""
        rows = await self.database.read(
            "SELECT COUNT(*) FROM chat_log_vectors WHERE embedding IS NULL "
            f"AND model = ? AND convention = ? AND {_FILLABLE}",
            (maker.model, maker.convention),
        )
        return int(rows[0][0])

    async def fill(self, maker: VectorMaker, limit: int) -> int:
        """Give up to `limit` vectors of `maker` that lack it their pgvector copy, from
        their packed bytes; how many were found (0: none is left). A vector replaced
        meanwhile is left as its new writer stored it.

        The copy is the int8 vector, so its cosines are those the plugin computes from the
        packed bytes, at its packed scale: a cosine does not depend on it, and integers
        are written eight times faster than floats (100 000 rows to copy after an
        upgrade)."""
        rows = await self.database.read(
            "SELECT row_id, vector FROM chat_log_vectors WHERE embedding IS NULL "
            f"AND model = ? AND convention = ? AND {_FILLABLE} LIMIT ?",
            (maker.model, maker.convention, limit),
        )
        if not rows:
            return 0
        filled = await asyncio.to_thread(
            lambda: sorted(
                (int(row_id), pgvector_text(int8_components(bytes(packed))), bytes(packed))
                for row_id, packed in rows
            )
        )

        def work(connection: Connection) -> None:
            lock_chat_log(connection)  # as put() does
            connection.executemany(
                f"UPDATE chat_log_vectors SET embedding = ?::{self.vector_type} "
                "WHERE row_id = ? AND embedding IS NULL AND vector = ?",
                [(text, row_id, packed) for row_id, text, packed in filled],
            )

        await self.database.write(work)
        return len(rows)
