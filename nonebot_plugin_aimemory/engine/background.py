"""Background work owned by one component: tracked tasks and periodic loops, stopped and
awaited together at shutdown, so nothing is left running or silently lost."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from .turn_context import usage_chat

logger = logging.getLogger("nonebot_plugin_aimemory")

T = TypeVar("T")
PeriodicJob = Callable[[], Awaitable[object]]


class Background:
    """Tasks with one owner. `spawn` starts a task and keeps a reference to it (asyncio
    keeps only weak ones); `every` runs a periodic loop; `close` stops the loops, then
    waits for (or cancels) the tasks. Usable again after closing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loops: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        """How many spawned tasks are still running (loops not counted)."""
        return len(self._tasks)

    def spawn(
        self, work: Coroutine[Any, Any, T], *, name: str | None = None, awaited: bool = False
    ) -> asyncio.Task[T]:
        """Start `work` as a task tracked until it finishes. A failure is logged, unless
        `awaited`: then the caller awaits the task and handles its failure itself."""
        task = _detached(asyncio.get_running_loop().create_task, work, name=name or self.name)
        self._track(task, self._tasks, log_failure=not awaited)
        return task

    def every(
        self,
        interval_seconds: float,
        job: PeriodicJob,
        *,
        first_delay_seconds: float | None = None,
        name: str = "periodic job",
    ) -> asyncio.Task[None]:
        """Run `job` every `interval_seconds` (the first time after `first_delay_seconds`,
        default one interval) until closed; a failing run is logged and the loop goes on."""
        delay = interval_seconds if first_delay_seconds is None else first_delay_seconds
        task = _detached(
            asyncio.get_running_loop().create_task,
            self._repeat(interval_seconds, job, delay, name),
            name=name,
        )
        self._track(task, self._loops, log_failure=True)
        return task

    async def wait(self) -> None:
        """Wait until no spawned task is left, including ones spawned meanwhile (loops are
        not waited for). Cancelling the waiter does not cancel the tasks."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def settle(self, grace_seconds: float) -> None:
        """Wait for the tasks at most `grace_seconds`, then cancel what is left (bounded
        shutdown: a model call in flight must not hold the bot for minutes)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace_seconds)
        if self._tasks:
            logger.warning("%s: %d tasks cancelled at shutdown", self.name, len(self._tasks))
            await _cancel(self._tasks)

    async def close(self, *, cancel: bool = False) -> None:
        """Stop the loops, then wait for the tasks (or, with `cancel`, cancel them)."""
        await _cancel(self._loops)
        if cancel:
            await _cancel(self._tasks)
        else:
            await self.wait()

    async def _repeat(
        self, interval_seconds: float, job: PeriodicJob, delay: float, name: str
    ) -> None:
        await asyncio.sleep(delay)
        while True:
            try:
                await job()
            except Exception:
                logger.exception("%s: %s failed", self.name, name)
            await asyncio.sleep(interval_seconds)

    def _track(
        self, task: asyncio.Task[Any], tasks: set[asyncio.Task[Any]], *, log_failure: bool
    ) -> None:
        tasks.add(task)
        task.add_done_callback(lambda done: self._finished(done, tasks, log_failure))

    def _finished(
        self, task: asyncio.Task[Any], tasks: set[asyncio.Task[Any]], log_failure: bool
    ) -> None:
        tasks.discard(task)
        if task.cancelled() or (error := task.exception()) is None:
            return
        if log_failure:
            # Nobody awaits a background task: this is the only place its error shows.
            logger.error("%s: %s failed", self.name, task.get_name(), exc_info=error)


async def _cancel(tasks: set[asyncio.Task[Any]]) -> None:
    """Cancel `tasks` and wait until they are done; the closer's own cancellation still
    propagates (nothing here swallows CancelledError)."""
    pending = set(tasks)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)


def _detached(
    create_task: Callable[..., asyncio.Task[T]], work: Coroutine[Any, Any, T], *, name: str
) -> asyncio.Task[T]:
    """`work` as a task whose context has no chat: background work (a flush, a backfill
    over every chat) is nobody's usage, even when a turn happened to start it; work done for
    one chat says so itself (engine/usage.py `attributed_to`). A task copies the context it
    is created in (create_task's `context=` needs Python 3.11)."""
    context = contextvars.copy_context()
    context.run(usage_chat.set, None)
    return context.run(create_task, work, name=name)
