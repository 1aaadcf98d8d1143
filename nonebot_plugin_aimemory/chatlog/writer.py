"""Writing the chat log in batches (a busy group costs no write per message), marking
sessions for review, handing written rows to their optional vectors, and the daily
retention cleanup."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Protocol

from ..engine import Background
from ..store import ChatLogStore, ChatRow, database_unavailable, utc_text
from .vectors import NoChatLogVectors, RowVectors

logger = logging.getLogger("nonebot_plugin_aimemory")

FLUSH_BATCH_ROWS = 500
MAX_QUEUED_ROWS = 20_000
CLEANUP_INTERVAL_SECONDS = 24 * 3600


class ReviewMarks(Protocol):
    """Where sessions with new chat are marked for the memory reviewer."""

    async def mark_pending(self, session_keys: Iterable[str]) -> None:
        """Mark these sessions as having chat to review."""
        ...


class NoReviewMarks:
    """The reviewer is off (the chat log may not be sent to a model): nothing to mark."""

    async def mark_pending(self, session_keys: Iterable[str]) -> None:
        """Nothing to mark."""


class ChatLog:
    """Buffers rows and writes them together; flushed on an interval and at shutdown."""

    def __init__(
        self,
        store: ChatLogStore,
        reviews: ReviewMarks,
        *,
        flush_seconds: float,
        keep_days: int,
        vectors: RowVectors | None = None,
    ) -> None:
        self.store = store
        self.reviews = reviews
        # Off by default: every embedded row costs the embedding model's tokens.
        self.vectors: RowVectors = vectors if vectors is not None else NoChatLogVectors()
        self.flush_seconds = flush_seconds
        self.keep_days = keep_days
        self._buffer: list[ChatRow] = []
        self._to_review: set[str] = set()
        self._refusals: list[ChatRow] = []  # written rows still to be marked refused
        self._lock = asyncio.Lock()
        self._background = Background("chat log")
        # Apart from the flushes, which must never be cancelled halfway: it is cancelled
        # at shutdown.
        self._indexing = Background("chat log index")
        self._early_flush: asyncio.Task[None] | None = None
        # After a failed write only the periodic flush retries, not every added row.
        self._failing = False

    def __len__(self) -> int:
        """How many rows wait to be written."""
        return len(self._buffer)

    def add(self, row: ChatRow, *, review: bool = False, review_for: str | None = None) -> None:
        """Queue one row (never awaits); `review` marks its session for a memory review,
        `review_for` the scope named instead (a persona's, which reviews the chat's log)."""
        self._buffer.append(row)
        if review or review_for:
            self._to_review.add(review_for or row.session_key)
        if (
            len(self._buffer) >= FLUSH_BATCH_ROWS
            and not self._failing
            and (self._early_flush is None or self._early_flush.done())
        ):
            self._early_flush = self._background.spawn(self.flush(), name="early flush")

    def mark_refused(self, row: ChatRow) -> None:
        """Mark a row added earlier as refused by the model service (never awaits): in the
        queue if it is still there, else in the database with the next flush."""
        for index in range(len(self._buffer) - 1, -1, -1):
            if self._buffer[index] is row:
                self._buffer[index] = replace(row, refused=True)
                return
        self._refusals.append(row)

    def replace(self, queued: ChatRow, row: ChatRow) -> bool:
        """Put `row` in place of `queued` if that is still waiting to be written (never
        awaits); whether it was."""
        for index in range(len(self._buffer) - 1, -1, -1):
            if self._buffer[index] is queued:
                self._buffer[index] = row
                return True
        return False

    async def flush(self) -> None:
        """Write everything queued so far in one transaction. On failure (disk full, file
        locked) the rows go back to the queue and the next flush tries again."""
        async with self._lock:
            rows, self._buffer = self._buffer, []
            review_keys, self._to_review = self._to_review, set()
            refusals, self._refusals = self._refusals, []
            if not rows and not review_keys and not refusals:
                return
            try:
                ids = await self.store.insert_many(rows)
            except Exception as error:
                if database_unavailable(error):
                    # The database itself (disk full, file locked, server down): every row
                    # would fail alike.
                    logger.exception("could not write %d chat-log rows; will retry", len(rows))
                    self._failing = True
                    self._requeue(rows, review_keys)
                    self._refusals = [*refusals, *self._refusals]
                    return
                # Something in the rows: write them one by one, so one bad row never blocks
                # the batch (or every later batch, of every session).
                logger.exception(
                    "a batch of %d chat-log rows failed; writing them one by one", len(rows)
                )
                self._failing = False
                await self._insert_one_by_one(rows)
            else:
                self._failing = False
                self._written(rows, ids)
            try:
                await self.store.mark_refused(refusals)
            except Exception:
                logger.exception("could not mark %d chat-log rows refused", len(refusals))
                self._refusals = [*refusals, *self._refusals]
            if review_keys:
                try:
                    await self.reviews.mark_pending(review_keys)
                except Exception:
                    logger.exception("could not mark %d sessions for review", len(review_keys))
                    self._to_review |= review_keys

    async def _insert_one_by_one(self, rows: list[ChatRow]) -> None:
        """Insert each row alone; a row that still fails is dropped and logged. Should the
        database itself fail meanwhile, the rows not yet written wait for the next flush."""
        for index, row in enumerate(rows):
            try:
                ids = await self.store.insert_many([row])
            except Exception as error:
                if database_unavailable(error):
                    logger.exception("could not write chat-log rows; will retry")
                    self._failing = True
                    self._requeue(rows[index:], set())
                    return
                logger.exception(
                    "dropped a chat-log row of %s that cannot be stored: %r",
                    row.session_key,
                    row.text[:100],
                )
            else:
                self._written([row], ids)

    def _written(self, rows: list[ChatRow], ids: list[int]) -> None:
        """Rows are in the database: their vectors are made in the background."""
        self.vectors.written([replace(row, id=i) for row, i in zip(rows, ids, strict=True)])

    def _requeue(self, rows: list[ChatRow], review_keys: set[str]) -> None:
        """Put unwritten rows back before the ones queued meanwhile, keeping at most
        MAX_QUEUED_ROWS (the newest) so a disk that stays full cannot exhaust memory."""
        self._buffer = [*rows, *self._buffer]
        dropped = len(self._buffer) - MAX_QUEUED_ROWS
        if dropped > 0:
            logger.error("chat log: dropping the %d oldest unwritten rows", dropped)
            del self._buffer[:dropped]
        self._to_review |= review_keys

    async def cleanup(self, now: datetime | None = None) -> int:
        """Delete rows older than the retention; memories and tombstones are not touched."""
        moment = now or datetime.now(timezone.utc)
        cutoff = utc_text(moment - timedelta(days=self.keep_days))
        deleted = await self.store.delete_older_than(cutoff)
        if deleted:
            logger.info(
                "chat log cleanup removed %d rows older than %d days", deleted, self.keep_days
            )
        return deleted

    def start(self) -> None:
        """Start the periodic flush and retention-cleanup loops, and index what an older
        release logged and embed rows without a vector (in the background, so the first
        search need not wait for them)."""
        self._background.every(self.flush_seconds, self.flush, name="flush")
        self._background.every(
            CLEANUP_INTERVAL_SECONDS, self.cleanup, first_delay_seconds=0, name="cleanup"
        )
        self._indexing.spawn(self.store.catch_up_index(), name="catch-up")
        self.vectors.start()

    async def close(self) -> None:
        """Stop indexing old rows and embedding rows (both resumed after the next start),
        stop the loops, let an early flush finish, and flush what is still buffered."""
        await self._indexing.close(cancel=True)
        await self.vectors.close()
        await self._background.close()
        await self.flush()
