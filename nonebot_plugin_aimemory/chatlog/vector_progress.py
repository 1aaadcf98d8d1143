"""The log lines of the chat-log row vectors' background work worth reporting: a backfill
that has many rows to embed (a new model, a long outage), and a copy of many packed vectors
into pgvector's column (rows stored before pgvector was there: chatlog/vectors.py)."""

from __future__ import annotations

import logging

from ..engine import VectorMaker
from ..store import ChatLogVectorStore

logger = logging.getLogger("nonebot_plugin_aimemory")

# A backfill logs its progress every this many rows; fewer rows to do are not logged.
PROGRESS_ROWS = 2000


class BackfillProgress:
    """A backfill's lines: how many rows it has to embed, every `PROGRESS_ROWS` done, and
    its end."""

    def __init__(self, maker: VectorMaker) -> None:
        self.maker = maker
        self.total = 0
        self.embedded = 0
        self._reported = 0

    async def begin(self, store: ChatLogVectorStore) -> None:
        """Count the rows to embed, and say so when they are many."""
        self.total, self.embedded, self._reported = await store.unembedded_count(self.maker), 0, 0
        if self.total >= PROGRESS_ROWS:
            logger.info(
                "chat-log vectors: embedding %d rows with %s (%s), newest first; until then "
                "they are found by keyword",
                self.total,
                self.maker.model,
                self.maker.convention,
            )

    def done(self, rows: int) -> None:
        """`rows` more embedded."""
        self.embedded += rows
        if self.total >= PROGRESS_ROWS and self.embedded - self._reported >= PROGRESS_ROWS:
            self._reported = self.embedded
            logger.info("chat-log vectors: %d of %d rows embedded", self.embedded, self.total)

    def end(self) -> None:
        """None is left."""
        if self.total >= PROGRESS_ROWS:
            logger.info("chat-log vectors: all %d rows embedded", self.embedded)
        self.total = 0


class FillProgress:
    """A copy into pgvector's column: a line at its start and at its end, when it has many
    vectors to copy."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.filled = 0

    @property
    def counted(self) -> bool:
        """Whether the copy under way was counted (`begin`)."""
        return self.total is not None

    def begin(self, total: int) -> None:
        """`total` vectors to copy."""
        self.total, self.filled = total, 0
        if total >= PROGRESS_ROWS:
            logger.info(
                "chat-log vectors: copying %d vectors into pgvector's column; until a "
                "session's are all there it is ranked in-process",
                total,
            )

    def done(self, vectors: int) -> None:
        """`vectors` more copied; none: the copy is over."""
        self.filled += vectors
        if vectors:
            return
        if (self.total or 0) >= PROGRESS_ROWS:
            logger.info("chat-log vectors: %d vectors copied into pgvector's column", self.filled)
        self.total = None
