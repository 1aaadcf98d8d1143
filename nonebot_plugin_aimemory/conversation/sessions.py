"""Live conversations: one Session per key, a FIFO of work per session (each job maybe
someone's, so `~对话 停止` can stop one person's work only), and the janitor that evicts
idle or least-recently-active sessions from memory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..engine import Background, ChatBot

logger = logging.getLogger("nonebot_plugin_aimemory")

Job = Callable[[ChatBot], Coroutine[Any, Any, Any]]
Clock = Callable[[], float]


class TurnStopped(Exception):
    """The job was cancelled by `~对话 停止`."""


class Owner(Protocol):
    """Whose messages a job answers (a speaker's burst, conversation/bursts.py)."""

    @property
    def speaker_id(self) -> str:
        """Who sent them."""
        ...

    @property
    def message_count(self) -> int:
        """How many messages the job answers."""
        ...

    def drop(self) -> None:
        """The job will not answer them: take no more."""
        ...


@dataclass(eq=False, slots=True)
class QueuedJob:
    """A job, the future its submitter waits on, and whose messages it answers."""

    job: Job
    future: asyncio.Future[Any]
    owner: Owner | None = None

    def is_for(self, speaker_id: str | None) -> bool:
        """Whether the job is `speaker_id`'s (any job is everyone's: None)."""
        if speaker_id is None:
            return True
        return self.owner is not None and self.owner.speaker_id == speaker_id

    @property
    def message_count(self) -> int:
        """The messages it answers (a job of nobody's counts as one)."""
        return self.owner.message_count if self.owner is not None else 1


@dataclass(frozen=True, slots=True)
class Stopped:
    """What a stop did, in messages: whose answer was in progress, and queued ones."""

    answering: int = 0
    queued: int = 0

    @property
    def messages(self) -> int:
        """Every message stopped."""
        return self.answering + self.queued


@dataclass(eq=False)
class Session:
    """One conversation in memory: its ChatBot, lock, work queue and last-active time."""

    key: str
    bot: ChatBot
    last_active: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    queue: deque[QueuedJob] = field(default_factory=deque)
    loaded: bool = False
    current: asyncio.Task[Any] | None = None
    _running: QueuedJob | None = None
    _worker: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """Whether a job is running or waiting."""
        return self.lock.locked() or bool(self.queue)

    def submit(self, job: Job, owner: Owner | None = None) -> asyncio.Future[Any]:
        """Queue `job` behind earlier ones (synchronously, so arrival order is kept); it
        answers `owner`'s messages (None: nobody's in particular)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.queue.append(QueuedJob(job, future, owner))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._drain())
        return future

    async def ensure_loaded(self) -> None:
        """Load the window from the store once; call with the lock held."""
        if not self.loaded:
            await self.bot.load()
            self.loaded = True

    def stop_current(self) -> bool:
        """Cancel the answer in progress, if any."""
        if self.current is None or self.current.done():
            return False
        self.current.cancel()
        return True

    def stop(self, speaker_id: str | None = None) -> Stopped:
        """Stop `speaker_id`'s work (everyone's with None): the answer in progress when it
        is theirs, and what of theirs is queued. Others' work goes on in its order."""
        answering = 0
        running = self._running
        if running is not None and running.is_for(speaker_id) and self._stop_running(running):
            answering = running.message_count
        queued = 0
        for work in self.queue:
            if work is not running and not work.future.done() and work.is_for(speaker_id):
                queued += work.message_count
                _drop(work)
        return Stopped(answering, queued)

    def _stop_running(self, running: QueuedJob) -> bool:
        """Stop the job that has the session: its task, or, while the window still loads,
        the job before its task starts."""
        if self.current is not None:
            return self.stop_current()
        if running.future.done():
            return False
        _drop(running)
        return True

    async def _drain(self) -> None:
        while self.queue:
            work = self.queue[0]
            try:
                if work.future.done():  # dropped before it started
                    continue
                async with self.lock:
                    if work.future.done():
                        continue
                    await self._run(work)
            finally:
                self.queue.popleft()

    async def _run(self, work: QueuedJob) -> None:
        job, future = work.job, work.future
        self._running = work
        try:
            await self.ensure_loaded()
            if future.done():  # stopped while the window loaded
                return
            self.current = asyncio.get_running_loop().create_task(job(self.bot))
            await asyncio.wait({self.current})
            _settle(future, self.current)
        except asyncio.CancelledError:
            # The worker itself is cancelled (shutdown): the job still finishes its final
            # history write before the database closes.
            if self.current is not None:
                self.current.cancel()
                await asyncio.wait({self.current})
            if not future.done():
                future.cancel()
            raise
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
        finally:
            self.current = None
            self._running = None

    async def settle(self, grace_seconds: float) -> None:
        """Let the running job finish for `grace_seconds`, then stop it; the queued jobs
        still run (the caller made them quick), within another `grace_seconds`."""
        worker = self._worker
        if worker is None or worker.done():
            return
        await asyncio.wait({worker}, timeout=grace_seconds)
        if worker.done():
            return
        self.stop_current()
        await asyncio.wait({worker}, timeout=grace_seconds)
        if not worker.done():
            logger.warning("session %s still busy after shutdown grace", self.key)

    async def shutdown(self) -> None:
        """Cancel queued work and the worker (used when the plugin stops)."""
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        while self.queue:
            self.queue.popleft().future.cancel()


def _drop(work: QueuedJob) -> None:
    """The job will not run: its submitter is told, and its burst takes no more messages."""
    work.future.cancel()
    if work.owner is not None:
        work.owner.drop()


def _settle(future: asyncio.Future[Any], task: asyncio.Task[Any]) -> None:
    if future.done():
        return
    if task.cancelled():
        future.set_exception(TurnStopped())
    elif task.exception() is not None:
        future.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        future.set_result(task.result())


class SessionCache:
    """The resident sessions, created on demand and evicted by the janitor."""

    def __init__(
        self,
        make_bot: Callable[[str], ChatBot],
        *,
        max_idle_seconds: float,
        max_sessions: int,
        clock: Clock = time.monotonic,
    ) -> None:
        self._make_bot = make_bot
        self.max_idle_seconds = max_idle_seconds
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        self._background = Background("session janitor")
        self._janitor: asyncio.Task[None] | None = None
        self._sweep_soon: asyncio.Task[int] | None = None

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, key: str) -> bool:
        return key in self._sessions

    def get(self, key: str) -> Session | None:
        """The resident session for `key`, without creating or touching it."""
        return self._sessions.get(key)

    def get_or_create(self, key: str, *, touch: bool = True) -> Session:
        """The resident session for `key`, created (unloaded) if needed. `touch` marks it
        active; only messages addressed to the bot should touch."""
        session = self._sessions.get(key)
        if session is None:
            # A session created without a touch counts as least recently active.
            session = Session(key, self._make_bot(key), self._clock() if touch else float("-inf"))
            self._sessions[key] = session
            self._sweep_if_over_capacity()
        elif touch:
            session.last_active = self._clock()
        return session

    async def evict_idle_sessions(self) -> int:
        """Evict sessions idle too long, then the least recently active while over capacity.
        Busy sessions (answering or with queued messages) are never evicted."""
        evicted = 0
        now = self._clock()
        if self.max_idle_seconds > 0:
            for session in list(self._sessions.values()):
                if now - session.last_active > self.max_idle_seconds and await self._evict(
                    session, lambda s: now - s.last_active > self.max_idle_seconds
                ):
                    evicted += 1
        if self.max_sessions > 0 and len(self._sessions) > self.max_sessions:
            for session in sorted(self._sessions.values(), key=lambda s: s.last_active):
                if len(self._sessions) <= self.max_sessions:
                    break
                seen = session.last_active
                if await self._evict(session, lambda s, seen=seen: s.last_active == seen):
                    evicted += 1
        if evicted:
            logger.debug("janitor evicted %d sessions, %d resident", evicted, len(self))
        return evicted

    async def _evict(self, session: Session, still_evictable: Callable[[Session], bool]) -> bool:
        if session.busy:
            return False
        async with session.lock:
            # Re-check under the lock: a message may have arrived meanwhile.
            if session.queue or not still_evictable(session):
                return False
            if self._sessions.get(session.key) is session:
                del self._sessions[session.key]
                return True
        return False

    def _sweep_if_over_capacity(self) -> None:
        """A burst of new sessions should not wait a whole janitor interval to be trimmed."""
        if self.max_sessions <= 0 or len(self._sessions) <= self.max_sessions * 2:
            return
        if self._sweep_soon is None or self._sweep_soon.done():
            self._sweep_soon = self._background.spawn(self.evict_idle_sessions())

    def start_janitor(self, interval_seconds: float) -> None:
        """Start evicting idle sessions every `interval_seconds`, unless already started."""
        if self._janitor is None or self._janitor.done():
            self._janitor = self._background.every(
                interval_seconds, self.evict_idle_sessions, name="sweep"
            )

    async def settle(self, grace_seconds: float) -> None:
        """Give every session's work `grace_seconds` to finish, then stop what still runs
        (all sessions at once, so shutdown takes the grace period once, not per chat)."""
        await asyncio.gather(*(s.settle(grace_seconds) for s in list(self._sessions.values())))

    async def close(self) -> None:
        """Stop the janitor and every session's worker."""
        await self._background.close(cancel=True)
        for session in list(self._sessions.values()):
            await session.shutdown()
        self._sessions.clear()
