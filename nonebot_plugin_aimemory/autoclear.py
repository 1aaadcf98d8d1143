"""Group auto-clear: after N consecutive messages that do not address the bot, the group's
context window is cleared. Counting is the hot path of a busy group: a dict update, with
the counters persisted in batches."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from .store.counters import GroupCounterStore

logger = logging.getLogger("nonebot_plugin_aimemory")

PERSIST_EVERY_MESSAGES = 10


class GroupAutoClear:
    """Counts unaddressed group messages and clears a group's context at the threshold."""

    def __init__(
        self,
        threshold: int,
        store: GroupCounterStore | None,
        clear_group: Callable[[str], Awaitable[None]],
    ) -> None:
        self.threshold = threshold
        self._store = store
        self._clear_group = clear_group
        self.counts: dict[str, int] = {}
        # Groups whose window may hold something: clearing any other group is a no-op, and
        # skipping it keeps database writes off the hot path of groups that never talk to us.
        self.with_context: set[str] = set()
        self._dirty: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending_flush: asyncio.Task[None] | None = None

    @property
    def enabled(self) -> bool:
        """Whether auto-clear is on; a threshold of 0 turns it off."""
        return self.threshold > 0

    async def load(self) -> None:
        """Restore the counters and the groups with context from the store, if any."""
        if self._store is not None:
            self.counts = await self._store.load_all()
            self.with_context = await self._store.load_groups_with_context()

    def note_unaddressed(self, group_id: str) -> None:
        """Count one message that did not address the bot; never awaits."""
        if not self.enabled:
            return
        count = self.counts.get(group_id, 0) + 1
        self.counts[group_id] = count
        if group_id not in self.with_context:
            # Nothing to clear, so nothing to persist: the next addressed message resets the
            # count anyway. A group that never talks to the bot costs no write at all.
            return
        self._dirty.add(group_id)
        if count >= self.threshold:
            self.with_context.discard(group_id)
            self._spawn(self._clear_and_flush(group_id))
        elif count % PERSIST_EVERY_MESSAGES == 0:
            self._flush_soon()

    def note_addressed(self, group_id: str) -> None:
        """A message addressed to the bot resets the group's count."""
        self.with_context.add(group_id)
        if self.counts.get(group_id):
            self.counts[group_id] = 0
            self._dirty.add(group_id)
            self._flush_soon()

    def _flush_soon(self) -> None:
        """One pending flush at a time: a busy bot's batches are coalesced, not queued."""
        if self._pending_flush is None or self._pending_flush.done():
            self._pending_flush = asyncio.ensure_future(self.flush())
            self._tasks.add(self._pending_flush)
            self._pending_flush.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        """Persist the counters changed since the last flush."""
        if self._store is None or not self._dirty:
            self._dirty.clear()
            return
        batch = {group_id: self.counts.get(group_id, 0) for group_id in self._dirty}
        self._dirty.clear()
        try:
            await self._store.save(batch)
        except Exception:
            logger.exception("could not persist auto-clear counters")

    async def _clear_and_flush(self, group_id: str) -> None:
        try:
            await self._clear_group(group_id)
            logger.info(
                "group %s: context cleared after %d unaddressed messages", group_id, self.threshold
            )
        except Exception:
            logger.exception("auto-clear of group %s failed", group_id)
        self._flush_soon()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Finish pending clears and write the last counts."""
        while self._tasks:  # a clear may have scheduled one more flush
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.flush()
