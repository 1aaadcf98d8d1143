"""Where a conversation's window is kept: the store interface the turn loop writes to, row
per message, and the compression statistics kept beside it."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from .messages import Message


@dataclass(frozen=True, slots=True)
class CompressionStats:
    """How often a conversation was compressed, and when last (UTC)."""

    count: int = 0
    last_at: datetime | None = None


class HistoryStore(Protocol):
    """Where a conversation's window is persisted, row per message."""

    async def load(self, key: str) -> list[Message]:
        """The stored window of `key`, oldest message first."""
        ...

    async def load_stats(self, key: str) -> CompressionStats:
        """How often `key` was compressed, and when last."""
        ...

    def append(self, key: str, messages: Sequence[Message]) -> Awaitable[None]:
        """Add messages to the end of the stored window. The write is queued when this
        returns (writes are done in the order asked for); awaiting tells when it is done."""
        ...

    def replace(
        self, key: str, messages: Sequence[Message], *, compressed_at: datetime | None = None
    ) -> Awaitable[None]:
        """Overwrite the stored window; `compressed_at` also counts a compression."""
        ...

    def clear(self, key: str) -> Awaitable[None]:
        """Forget the window and its compression stats."""
        ...
