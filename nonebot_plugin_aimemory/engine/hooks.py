"""PreCompact: a public registry of async callbacks told which messages are about to leave
the window (folded into a summary, or dropped when compression falls back to truncation),
so they can save what matters first (long-term memory does)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from .background import Background
from .messages import Message

logger = logging.getLogger("nonebot_plugin_aimemory")

PreCompactCallback = Callable[[str, Sequence[Message]], Awaitable[None]]
DEFAULT_WAIT_SECONDS = 2.0


class PreCompactHooks:
    """Callbacks run concurrently; compression waits a bounded time and never fails for them."""

    def __init__(self, wait_seconds: float = DEFAULT_WAIT_SECONDS) -> None:
        self.wait_seconds = wait_seconds
        self._callbacks: list[PreCompactCallback] = []
        # Slow callbacks outlive `fire`; they are awaited at shutdown by `drain`.
        self._background = Background("PreCompact")

    def register(self, callback: PreCompactCallback) -> PreCompactCallback:
        """Add a callback (usable as a decorator)."""
        if callback not in self._callbacks:
            self._callbacks.append(callback)
        return callback

    def unregister(self, callback: PreCompactCallback) -> None:
        """Remove a callback; unknown ones are ignored."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    async def fire(self, key: str, messages: Sequence[Message]) -> None:
        """Notify every callback; return when all finished or `wait_seconds` passed.
        Slow callbacks keep running in the background; failures are logged."""
        if not self._callbacks or not messages:
            return
        folded = tuple(messages)
        tasks = [
            self._background.spawn(self._guarded(callback, key, folded))
            for callback in list(self._callbacks)
        ]
        _, pending = await asyncio.wait(tasks, timeout=self.wait_seconds)
        if pending:
            logger.warning(
                "%d PreCompact callback(s) still running after %.1fs for %s; compressing anyway",
                len(pending),
                self.wait_seconds,
                key,
            )

    @staticmethod
    async def _guarded(callback: PreCompactCallback, key: str, messages: Sequence[Message]) -> None:
        try:
            await callback(key, messages)
        except Exception:
            logger.exception("PreCompact callback %r failed for %s", callback, key)

    async def drain(self, grace_seconds: float | None = None) -> None:
        """Wait for callbacks still running (at shutdown), at most `grace_seconds` when
        given; the rest are cancelled."""
        if grace_seconds is None:
            await self._background.wait()
        else:
            await self._background.settle(grace_seconds)
