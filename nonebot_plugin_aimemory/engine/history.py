"""Where a conversation's window is kept: the store interface the turn loop writes to, row
per message, the compression statistics kept beside it, and the error of a store that
could not keep a turn."""

from __future__ import annotations

from collections.abc import Sequence
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

    async def append(self, key: str, messages: Sequence[Message]) -> None:
        """Add messages to the end of the stored window, all or none: committed when this
        returns. Raises whatever the store failed with."""
        ...

    async def replace(
        self, key: str, messages: Sequence[Message], *, compressed_at: datetime | None = None
    ) -> None:
        """Overwrite the stored window, all or none; `compressed_at` also counts a
        compression."""
        ...

    async def clear(self, key: str) -> None:
        """Forget the window and its compression stats."""
        ...


class StoreError(Exception):
    """The store could not keep a turn's messages, so its reply must not be sent: a reply
    tells the user that what they said is kept. The store's own error is the cause."""
