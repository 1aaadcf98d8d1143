"""A conversation's window and its stored copy, kept in step: what the window takes is
committed first, and a failed write makes the next one store the window whole."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from .history import HistoryStore, StoreError
from .messages import Message
from .window import Window

logger = logging.getLogger("nonebot_plugin_aimemory")


class StoredWindow:
    """Writes a window's messages to the store before the window takes them."""

    def __init__(self, key: str, window: Window, store: HistoryStore) -> None:
        self.key = key
        self.window = window
        self.store = store
        # A store write failed or was cut off (disk full, file locked, cancelled): the stored
        # window may miss messages, so the next write stores the whole window instead of
        # appending after a gap.
        self.behind = False

    async def clear(self) -> None:
        """Forget the stored window; raises StoreError when the store could not (its next
        write then stores the window whole)."""
        self.behind = True  # and so it stays if the clear fails or is cancelled
        try:
            await self.store.clear(self.key)
        except Exception as exc:
            raise StoreError(f"could not clear the stored window of {self.key}") from exc
        self.behind = False

    async def store_answered(self, messages: list[Message]) -> None:
        """Commit an answered turn, then take it into the window. When the store fails the
        turn fails as after a transient failure: nothing of it was stored (the transaction
        rolled back), the window keeps the user's message and finished tool rounds but not
        the answer nobody will see, and the next write stores the window whole."""
        failure = await self.commit(messages)
        if failure is not None:
            self.hold_unstored(messages[:-1])
            raise StoreError(
                f"could not store the turn, so its reply is not sent: {failure!r}"
            ) from failure

    async def keep(self, messages: list[Message]) -> None:
        """Commit what a failed, stopped or unanswered turn keeps; when the store fails the
        window keeps it anyway (logged), and the next write stores the window whole."""
        failure = await self.commit(messages)
        if failure is not None:
            self.hold_unstored(messages)
            self._log_kept_in_memory(failure)

    async def commit(self, messages: list[Message]) -> Exception | None:
        """Store `messages` after the window (with the whole window, when the store is
        behind), then extend the window with them; or return the store's failure, the
        window left as it was. Cancelled while the write runs (it runs on to its end), the
        window takes them: whether they were committed or not, the next write stores the
        window whole."""
        try:
            if self.behind:
                await self.store.replace(self.key, [*self.window.messages, *messages])
            else:
                await self.store.append(self.key, messages)
        except asyncio.CancelledError:
            self.hold_unstored(messages)
            raise
        except Exception as exc:
            return exc
        self.behind = False
        self.window.extend(messages)
        return None

    def hold_unstored(self, messages: list[Message]) -> None:
        """Keep in the window messages the store may not hold."""
        self.window.extend(messages)
        self.behind = True

    async def store_whole(self, *, compressed_at: datetime | None = None) -> None:
        """Store the window whole after it was rewritten in memory (a compaction, filled-in
        reasoning). A failure is logged and leaves the store behind: the turn's own commit
        then stores the window whole, or fails the turn."""
        self.behind = True  # and so it stays if the write fails or is cancelled
        try:
            await self.store.replace(self.key, self.window.messages, compressed_at=compressed_at)
        except Exception as exc:
            self._log_kept_in_memory(exc)
            return
        self.behind = False

    def _log_kept_in_memory(self, failure: Exception) -> None:
        logger.error(
            "history write failed for %s; kept in memory, stored with the next turn: %r",
            self.key,
            failure,
        )
