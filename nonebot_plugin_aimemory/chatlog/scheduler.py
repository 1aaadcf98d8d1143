"""When the background reviewer runs: every tick, the sessions with enough new chat since
their last review; one review per session at a time, at most a few at once; failures
retried with backoff a bounded number of times. Pending work lives in the database, and a
review first claims its session there (store/review_store.py), so that of several
processes sharing the database one reviews a session at a time."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..engine import Background, within
from ..store import ReviewState, ReviewStore, parse_utc_text, utc_text
from .reviewer import MemoryReviewer, ReviewOutcome

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_FAILURES = 5
# Scheduled reviews running at once, across sessions: a tick after a busy hour must not
# fire hundreds of model calls together.
MAX_CONCURRENT_REVIEWS = 4
RETRY_BASE_SECONDS = 60.0
RETRY_MAX_SECONDS = 3600.0
# A review's claim on its session lasts this long and is renewed while the review runs, so
# the session of a process that died is reviewed by another within CLAIM_SECONDS. The
# processes' clocks must agree to well within CLAIM_SECONDS - RENEW_CLAIM_SECONDS.
CLAIM_SECONDS = 120.0
RENEW_CLAIM_SECONDS = 30.0
# How often a review asked for by hand looks whether another process's review of the same
# session has ended.
CLAIM_POLL_SECONDS = 1.0

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(slots=True)
class _Claim:
    """A session this process is reviewing, held until `until` (renewed as it runs)."""

    session_key: str
    until: str


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
        claim_seconds: float = CLAIM_SECONDS,
        renew_claim_seconds: float = RENEW_CLAIM_SECONDS,
    ) -> None:
        self.reviewer = reviewer
        self.store = store
        self.tick_seconds = tick_seconds
        self.interval_seconds = interval_seconds
        self.min_new_rows = min_new_rows
        self.enabled_by_default = enabled_by_default
        self.clock = clock
        self.claim_seconds = claim_seconds
        self.renew_claim_seconds = renew_claim_seconds
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

    def reviewing(self, state: ReviewState) -> bool:
        """Whether this session is being reviewed, by this process or another."""
        if state.session_key in self.running:
            return True
        held_until = state.next_attempt_at
        return state.claimed and held_until is not None and self._now_text() < held_until

    def _now_text(self) -> str:
        return utc_text(self.clock())

    def _claim_end(self) -> str:
        return utc_text(self.clock() + timedelta(seconds=self.claim_seconds))

    async def tick(self) -> list[str]:
        """Start every due review; returns the session keys started (a review whose session
        another process claims first does nothing)."""
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

    async def _run_scheduled(self, seen: ReviewState) -> ReviewOutcome | None:
        async with self._slots:
            # Claimed only now: a claim waiting for a slot would run out meanwhile.
            claimed = await self.store.claim_due(seen, self._now_text(), self._claim_end())
            if claimed is None:
                return None  # another process reviews it, or did since it was read
            return await self._run(claimed)

    async def _run_fresh(self, session_key: str) -> ReviewOutcome | None:
        """Review with the state read when the session is claimed: after any earlier review
        of it, in this process or another, has finished."""
        # Another process's review is in the database only: polled, as nothing here is told
        # when it ends.
        while True:
            claimed = await self.store.claim(session_key, self._now_text(), self._claim_end())
            if claimed is not None:
                return await self._run(claimed, raise_errors=True)
            await asyncio.sleep(CLAIM_POLL_SECONDS)

    async def _run(
        self, claimed: ReviewState, *, raise_errors: bool = False
    ) -> ReviewOutcome | None:
        """Review a session this process has claimed, and hand the claim back."""
        key = claimed.session_key
        assert claimed.next_attempt_at is not None  # a claim's end
        claim = _Claim(key, claimed.next_attempt_at)
        try:
            async with self._renewing(claim):
                outcome = await self.reviewer.review(key, claimed.last_reviewed_row)
        except asyncio.CancelledError:
            await self._release(claim)
            raise
        except Exception as exc:
            await self._record_failure(claimed, exc, claim)
            if raise_errors:
                raise
            return None
        await self.store.finish(key, self._now_text(), outcome.last_row, claim=claim.until)
        return outcome

    @contextlib.asynccontextmanager
    async def _renewing(self, claim: _Claim) -> AsyncIterator[None]:
        """Keep `claim` renewed while the block runs; afterwards `claim.until` is the end
        the database holds (no renewal is left in flight)."""
        done = asyncio.Event()
        keeper = asyncio.get_running_loop().create_task(self._keep(claim, done))
        try:
            yield
        finally:
            done.set()
            await keeper

    async def _keep(self, claim: _Claim, done: asyncio.Event) -> None:
        while True:
            try:
                await within(done.wait(), self.renew_claim_seconds)
                return
            except asyncio.TimeoutError:
                pass
            until = self._claim_end()
            try:
                kept = await self.store.renew(claim.session_key, claim.until, until)
            except Exception:
                logger.exception("could not renew the review claim of %s", claim.session_key)
                continue
            if not kept:
                logger.warning(
                    "review of %s outlived its claim: another process may review it too",
                    claim.session_key,
                )
                return
            claim.until = until

    async def _release(self, claim: _Claim) -> None:
        """Hand back the claim of a review stopped halfway, so another process need not
        wait for it to run out."""
        try:
            await self.store.release(claim.session_key, claim.until)
        except Exception:
            logger.exception(
                "could not hand back the review claim of %s; it runs out in %.0fs",
                claim.session_key,
                self.claim_seconds,
            )

    async def _record_failure(self, state: ReviewState, exc: Exception, claim: _Claim) -> None:
        failures = state.failures + 1
        key = state.session_key
        if failures >= MAX_FAILURES:
            # Give up on this batch rather than retry it forever; new chat makes a new one.
            logger.error(
                "review of %s failed %d times, skipping these rows: %s", key, failures, exc
            )
            latest = await self.reviewer.chat_log.recent(key, 1)
            await self.store.finish(
                key, self._now_text(), latest[-1].id if latest else 0, claim=claim.until
            )
            return
        delay = min(RETRY_BASE_SECONDS * 2 ** (failures - 1), RETRY_MAX_SECONDS)
        next_at = utc_text(self.clock() + timedelta(seconds=delay))
        logger.warning("review of %s failed (%s); retry %d in %.0fs", key, exc, failures, delay)
        await self.store.fail(key, failures, next_at, claim=claim.until)

    def start(self) -> None:
        """Start the periodic tick loop, unless it is already running."""
        if self._loop is None or self._loop.done():
            self._loop = self._background.every(self.tick_seconds, self.tick, name="tick")

    async def close(self) -> None:
        """Stop the loop and any running review; unfinished ones stay pending in the DB,
        their claims handed back."""
        await self._background.close(cancel=True)
        self.running.clear()
