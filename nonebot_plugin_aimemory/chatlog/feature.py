"""The chat log as one feature: the batched writer, its tools, recall and the reviewer, or
the null twins when there is no database or the log may not be sent to a model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import tzinfo

from ..engine import Tool
from ..store import ChatRow
from .commands import ReviewCommands, ReviewsUnavailable
from .recall import NoRecall, RecalledLines
from .scheduler import ReviewScheduler
from .tools import chat_log_tools
from .writer import ChatLog


class ReviewsOff:
    """No background reviewer: nothing to start or stop."""

    def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to stop."""


@dataclass
class RecordedChat:
    """Every addressed message (and, if enabled, the others) in the database."""

    writer: ChatLog
    zone: tzinfo
    reviews: ReviewScheduler | ReviewsOff
    commands: ReviewCommands | ReviewsUnavailable
    recall: RecalledLines | NoRecall = field(default_factory=NoRecall)

    def add(self, row: ChatRow, *, review: bool = False, review_for: str | None = None) -> None:
        """Queue one row (never awaits)."""
        self.writer.add(row, review=review, review_for=review_for)

    def mark_refused(self, row: ChatRow) -> None:
        """Mark a row added earlier as refused by the model service (never awaits)."""
        self.writer.mark_refused(row)

    def replace(self, queued: ChatRow, row: ChatRow) -> bool:
        """Put `row` in place of `queued` if that is still waiting to be written."""
        return self.writer.replace(queued, row)

    async def flush(self) -> None:
        """Write what is queued."""
        await self.writer.flush()

    async def recalled(
        self, session_key: str, query: str, seen: Sequence[str], *, asker: str = ""
    ) -> str:
        """The earlier lines answering `query`, as a quoted block (recall.py)."""
        return await self.recall.block(session_key, query, seen, asker=asker)

    def tools(self, session_key: str) -> list[Tool]:
        """The chat-log tools bound to `session_key`."""
        return list(chat_log_tools(self.writer, self.zone, session_key))

    def start(self) -> None:
        """Start the periodic flush, retention cleanup and review ticks."""
        self.writer.start()
        self.reviews.start()

    async def close(self) -> None:
        """Stop the reviewer, then flush and stop the writer."""
        await self.reviews.close()
        await self.writer.close()


@dataclass
class ChatLogOff:
    """No database: nothing is logged, there are no tools and no reviewer."""

    commands: ReviewsUnavailable = field(default_factory=ReviewsUnavailable)

    def add(self, row: ChatRow, *, review: bool = False, review_for: str | None = None) -> None:
        """Rows are dropped."""

    def mark_refused(self, row: ChatRow) -> None:
        """Nothing was logged."""

    def replace(self, queued: ChatRow, row: ChatRow) -> bool:
        """Nothing was logged."""
        return False

    async def flush(self) -> None:
        """Nothing to write."""

    async def recalled(
        self, session_key: str, query: str, seen: Sequence[str], *, asker: str = ""
    ) -> str:
        """Nothing was logged, so nothing is recalled."""
        return ""

    def tools(self, session_key: str) -> list[Tool]:
        """No chat-log tools."""
        return []

    def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to close."""
