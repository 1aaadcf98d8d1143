"""A column in which the database itself ranks the chat-log rows' vectors
(`chat_log_vectors.embedding`), beside the packed bytes every database keeps: PostgreSQL's
with pgvector (postgres/chat_log_pgvector.py). Where there is none, the plugin ranks the
packed vectors (chatlog/row_matrix.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..engine import VectorMaker


class VectorColumn(Protocol):
    """The column: how a vector is written to it, and the database's ranking over it."""

    @property
    def placeholder(self) -> str:
        """The placeholder of a vector's value in a statement (`?` and a cast)."""
        ...

    def fits(self, vector: Sequence[float]) -> bool:
        """Whether the column can hold `vector` (its length)."""
        ...

    def value(self, vector: Sequence[float]) -> str | None:
        """`vector` as the column reads it, or None when it cannot hold it."""
        ...

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
        """The `limit` rows of the session closest to `query`, with their cosine, best
        first: only rows with ids in the `within` spans if any, none in the `outside` ones."""
        ...

    async def unfilled(self, session_key: str, maker: VectorMaker) -> bool:
        """Whether rows of the session still lack their copy in the column."""
        ...

    async def unfilled_count(self, maker: VectorMaker) -> int:
        """How many vectors of `maker` lack their copy in the column."""
        ...

    async def fill(self, maker: VectorMaker, limit: int) -> int:
        """Copy up to `limit` packed vectors of `maker` into the column; how many were found
        (0: none is left)."""
        ...
