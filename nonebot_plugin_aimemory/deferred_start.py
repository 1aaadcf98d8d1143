"""Starting the plugin when its PostgreSQL server is not there yet: the bot's other plugins
start as usual, this one tries again in the background (1 s, 2 s, 4 s … at most a
minute apart, each failure logged with its reason), answers addressed messages with a
short notice meanwhile, and starts fully once the database comes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .store.opening import DatabaseUnreachable

logger = logging.getLogger("nonebot_plugin_aimemory")

T = TypeVar("T")
FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 60.0
# A chat hears the notice at most this often while the plugin waits.
NOTICE_INTERVAL_SECONDS = 60.0


class DeferredStart:
    """The background attempts to start, and who was told that the plugin is waiting."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._task: asyncio.Task[None] | None = None
        self._told: dict[str, float] = {}

    @property
    def waiting(self) -> bool:
        """Whether the plugin waits for its database."""
        return self._task is not None and not self._task.done()

    def begin(
        self,
        start: Callable[[], Awaitable[T]],
        started: Callable[[T], None],
        first_error: DatabaseUnreachable,
    ) -> None:
        """Try `start` again and again until it works, then hand its result to `started`."""
        logger.error("%s; the plugin will start when the database can be used", first_error)
        self._task = asyncio.create_task(self._keep_trying(start, started))

    async def _keep_trying(
        self, start: Callable[[], Awaitable[T]], started: Callable[[T], None]
    ) -> None:
        delay = FIRST_RETRY_SECONDS
        while True:
            await asyncio.sleep(delay)
            try:
                result = await start()
            except DatabaseUnreachable as error:
                delay = min(delay * 2, MAX_RETRY_SECONDS)
                logger.warning("%s; trying again in %.0f s", error, delay)
                continue
            except Exception:
                logger.exception("the plugin could not start; it stays off")
                return
            self._told.clear()
            started(result)
            return

    def notice_due(self, chat_key: str) -> bool:
        """Whether `chat_key` should be told now that the plugin waits (once a minute)."""
        now = self.clock()
        told = self._told.get(chat_key)
        if told is not None and now - told < NOTICE_INTERVAL_SECONDS:
            return False
        self._told[chat_key] = now
        return True

    async def cancel(self) -> None:
        """Stop trying (shutdown)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None


_deferred = DeferredStart()


def deferred_start() -> DeferredStart:
    """The plugin's deferred start (one per plugin, like its runtime)."""
    return _deferred
