"""When the background reviewer runs: every tick, the sessions with enough new chat since
their last review; one review per session at a time, at most a few at once; failures
retried with backoff a bounded number of times. Pending work lives in the database."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from ..engine.background import Background
from ..store.database import parse_utc_text, utc_text
from ..store.review_store import ReviewState, ReviewStore
from .reviewer import MemoryReviewer, ReviewOutcome

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_FAILURES = 5
# Scheduled reviews running at once, across sessions: a tick after a busy hour must not
# fire hundreds of model calls together.
MAX_CONCURRENT_REVIEWS = 4
RETRY_BASE_SECONDS = 60.0
RETRY_MAX_SECONDS = 3600.0

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class ReviewScheduler:
    """Starts due reviews every tick; one review per session at a time; failures retried
    with backoff, a bounded number of times; pending work lives in the database."""

    def __init__(
        self,
        reviewer: MemoryReviewer,
        store: ReviewStore,
        *,
        tick_seconds: float,
        interval_seconds: int,
        min_new_rows: int,
        enabled_by_default: bool,
        clock: Clock = _utc_now,
    ) -> None:
        self.reviewer = reviewer
        self.store = store
        self.tick_seconds = tick_seconds
        self.interval_seconds = interval_seconds
        self.min_new_rows = min_new_rows
        self.enabled_by_default = enabled_by_default
        self.clock = clock
        self.running: dict[str, asyncio.Task[ReviewOutcome | None]] = {}
        self._loop: asyncio.Task[None] | None = None
        self._background = Background("memory review")
        self._slots = asyncio.Semaphore(MAX_CONCURRENT_REVIEWS)

    def enabled(self, state: ReviewState) -> bool:
        """Whether automatic review is on for this session (its own switch or the default)."""
        return self.enabled_by_default if state.enabled is None else state.enabled

    def interval(self, state: ReviewState) -> int:
        """Seconds between reviews of this session (its own or the default)."""
        return state.interval_seconds or self.interval_seconds

    async def tick(self) -> list[str]:
        """Start every due review; returns the session keys started."""
        started = []
        now = self.clock()
        for state in await self.store.pending():
            if state.session_key in self.running or not await self._due(state, now):
                continue
            if state.session_key in self.running:  # started meanwhile (立即生成)
                continue
            self._register(state.session_key, self._background.spawn(self._run_scheduled(state)))
            started.append(state.session_key)
        return started

    def _register(self, key: str, task: asyncio.Task[ReviewOutcome | None]) -> None:
        """Mark `key` as being reviewed; synchronous, so no other review can slip in."""
        self.running[key] = task

        def forget(done: asyncio.Task[ReviewOutcome | None]) -> None:
            """Drop the finished task, unless a newer review already replaced it."""
            if self.running.get(key) is done:
                del self.running[key]

        task.add_done_callback(forget)

    async def _due(self, state: ReviewState, now: datetime) -> bool:
        if not self.enabled(state):
            return False
        if state.next_attempt_at and now < parse_utc_text(state.next_attempt_at):
            return False
        if state.last_review_at:
            elapsed = (now - parse_utc_text(state.last_review_at)).total_seconds()
            if elapsed < self.interval(state):
                return False
        new_rows = await self.reviewer.chat_log.count_since(
            state.session_key, state.last_reviewed_row
        )
        return new_rows >= self.min_new_rows

    async def run_now(self, session_key: str) -> ReviewOutcome | None:
        """Review a session right away (after any review of it already running)."""
        while (running := self.running.get(session_key)) is not None:
            with contextlib.suppress(Exception):
                await running
        task = self._background.spawn(self._run_fresh(session_key), awaited=True)
        self._register(session_key, task)
        return await task

    async def _run_scheduled(self, state: ReviewState) -> ReviewOutcome | None:
        async with self._slots:
            return await self._run(state)

    async def _run_fresh(self, session_key: str) -> ReviewOutcome | None:
        """Review with the state read now (after any earlier review has finished)."""
        return await self._run(await self.store.get(session_key), raise_errors=True)

    async def _run(self, state: ReviewState, *, raise_errors: bool = False) -> ReviewOutcome | None:
        key = state.session_key
        try:
            outcome = await self.reviewer.review(key, state.last_reviewed_row)
        except Exception as exc:
            await self._record_failure(state, exc)
            if raise_errors:
                raise
            return None
        await self.store.finish(key, utc_text(self.clock()), outcome.last_row)
        return outcome

    async def _record_failure(self, state: ReviewState, exc: Exception) -> None:
        failures = state.failures + 1
        key = state.session_key
        if failures >= MAX_FAILURES:
            # Give up on this batch rather than retry it forever; new chat makes a new one.
            logger.error(
                "review of %s failed %d times, skipping these rows: %s", key, failures, exc
            )
            latest = await self.reviewer.chat_log.recent(key, 1)
            await self.store.finish(key, utc_text(self.clock()), latest[-1].id if latest else 0)
            return
        delay = min(RETRY_BASE_SECONDS * 2 ** (failures - 1), RETRY_MAX_SECONDS)
        next_at = utc_text(self.clock() + timedelta(seconds=delay))
        logger.warning("review of %s failed (%s); retry %d in %.0fs", key, exc, failures, delay)
        await self.store.fail(key, failures, next_at)

    def start(self) -> None:
        """Start the periodic tick loop, unless it is already running."""
        if self._loop is None or self._loop.done():
            self._loop = self._background.every(self.tick_seconds, self.tick, name="tick")

    async def close(self) -> None:
        """Stop the loop and any running review; unfinished ones stay pending in the DB."""
        await self._background.close(cancel=True)
        self.running.clear()
