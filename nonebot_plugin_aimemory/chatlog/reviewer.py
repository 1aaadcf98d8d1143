"""The background memory reviewer: now and then, turn a session's recent chat log into
long-term memories (through the same rules as every other write)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

from .. import prompts
from ..engine.llm import LLMClient
from ..engine.messages import Message
from ..memory.service import MemoryService
from ..store.chat_log_store import ChatLogStore, ChatRow
from ..store.database import parse_utc_text, utc_text
from ..store.review_store import ReviewState, ReviewStore
from ..text.fit import cut_line, fit_lines
from ..text.model_json import parse_json_object
from .lines import format_row

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_ROWS = 50
MAX_CHARS = 8000
MAX_OPS = 3
MIN_PARTIAL_ROW_CHARS = 200
MAX_FAILURES = 5
# Scheduled reviews running at once, across sessions: a tick after a busy hour must not
# fire hundreds of model calls together.
MAX_CONCURRENT_REVIEWS = 4
RETRY_BASE_SECONDS = 60.0
RETRY_MAX_SECONDS = 3600.0


@dataclass(slots=True)
class ReviewOutcome:
    """What one review did."""

    created: int = 0
    updated: int = 0
    last_row: int = 0
    rejected: list[str] = field(default_factory=list)


class MemoryReviewer:
    """Asks the review model for memory operations and applies the valid ones."""

    def __init__(
        self,
        llm: LLMClient,
        memory: MemoryService,
        chat_log: ChatLogStore,
        *,
        persona: str,
        zone: tzinfo,
    ) -> None:
        self.llm = llm
        self.memory = memory
        self.chat_log = chat_log
        self.persona = persona
        self.zone = zone

    async def review(self, scope: str, after_row: int) -> ReviewOutcome:
        """Review rows after `after_row`; raises LLMError when the model cannot be reached."""
        rows, log = _shown_log(await self.chat_log.since(scope, after_row, MAX_ROWS), self.zone)
        if not rows:
            return ReviewOutcome(last_row=after_row)
        memories = await self.memory.list(scope)
        system = prompts.review_prompt(
            self.persona, in_group=scope.startswith("g:"), max_ops=MAX_OPS
        )
        completion = await self.llm.complete(
            [
                Message("system", system),
                Message("user", prompts.review_request(memories, log)),
            ],
            context=f"review {scope}",
        )
        outcome = ReviewOutcome(last_row=rows[-1].id)
        await self._apply(scope, completion.message.text, {row.id for row in rows}, outcome)
        logger.info(
            "review of %s: %d created, %d updated, %d rejected",
            scope,
            outcome.created,
            outcome.updated,
            len(outcome.rejected),
        )
        for reason in outcome.rejected:
            logger.info("review of %s: skipped %s", scope, reason)
        return outcome

    async def _apply(
        self, scope: str, answer: str, row_ids: set[int], outcome: ReviewOutcome
    ) -> None:
        data = parse_json_object(answer)
        ops = data.get("ops") if data else None
        if not isinstance(ops, list):
            outcome.rejected.append(f"no ops in answer: {answer[:200]!r}")
            logger.warning("reviewer answer for %s had no valid ops: %r", scope, answer[:300])
            return
        for op in ops[:MAX_OPS]:
            await self._apply_one(scope, op, row_ids, outcome)
        if len(ops) > MAX_OPS:
            outcome.rejected.append(f"{len(ops) - MAX_OPS} ops over the limit")

    async def _apply_one(
        self, scope: str, op: Any, row_ids: set[int], outcome: ReviewOutcome
    ) -> None:
        if not isinstance(op, dict):
            outcome.rejected.append(f"not an object: {op!r}")
            return
        kind = op.get("op")
        evidence = _evidence(op.get("evidence"), row_ids)
        content = op.get("content")
        if kind == "noop":
            return
        if kind == "create" and isinstance(content, str) and content.strip():
            saved = await self.memory.save(
                scope,
                content,
                tags=op.get("tags") if isinstance(op.get("tags"), list) else None,
                user_id=str(op["user_id"]) if op.get("user_id") else None,
                source="review",
                evidence=evidence,
            )
            if saved.status == "saved":
                outcome.created += 1
            else:
                outcome.rejected.append(f"create refused ({saved.status}): {content[:50]!r}")
            return
        if kind == "update" and isinstance(op.get("id"), str) and isinstance(content, str):
            # The id is looked up in this scope only: another scope's id is simply unknown.
            updated = await self.memory.update(
                scope, op["id"], content=content, add_evidence=evidence
            )
            if updated.status == "updated" and updated.changed:
                outcome.updated += 1
            elif updated.status == "updated":
                outcome.rejected.append(f"update {op['id']!r} changed nothing")
            else:
                outcome.rejected.append(f"update {op['id']!r} refused ({updated.status})")
            return
        outcome.rejected.append(f"invalid op: {str(op)[:100]}")


def _shown_log(rows: list[ChatRow], zone: tzinfo) -> tuple[list[ChatRow], str]:
    """The newest rows whose `[#id] [time] speaker：text` lines fit in MAX_CHARS, and those
    lines, oldest first; the line where the budget runs out is shortened rather than
    dropped when a useful part of it still fits."""

    def shorten(line: str, room_chars: int, rank: int) -> str | None:
        if rank == 0 or room_chars >= MIN_PARTIAL_ROW_CHARS:
            return cut_line(line, room_chars)
        return None

    lines = [f"[#{row.id}] {format_row(row, zone)}" for row in rows]
    fitted = fit_lines(lines, MAX_CHARS, newest=True, shorten=shorten)
    return [rows[i] for i in fitted.indices], fitted.text


def _evidence(raw: Any, row_ids: set[int]) -> list[int]:
    """Cited rows that were really shown; all shown rows when the citation is unusable."""
    if isinstance(raw, list):
        cited = [
            int(x)
            for x in raw
            if isinstance(x, int | str) and str(x).isdigit() and int(x) in row_ids
        ]
        if cited:
            return cited
    return sorted(row_ids)


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
            self._register(state.session_key, asyncio.ensure_future(self._run_scheduled(state)))
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
        task = asyncio.ensure_future(self._run_fresh(session_key))
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
            self._loop = asyncio.ensure_future(self._run_loop())

    async def _run_loop(self) -> None:
        while True:
            await asyncio.sleep(self.tick_seconds)
            try:
                await self.tick()
            except Exception:
                logger.exception("review scheduler tick failed")

    async def close(self) -> None:
        """Stop the loop and any running review; unfinished ones stay pending in the DB."""
        tasks = [t for t in (self._loop, *self.running.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.running.clear()
