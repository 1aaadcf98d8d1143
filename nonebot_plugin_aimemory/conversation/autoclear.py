"""Group auto-clear: after N consecutive messages that do not address the bot, the group's
context window is cleared; each bot account counts for its own window (a group is counted
by its chat key as that account has it, `g:123` or `g:123@10001`). Counting is the hot path of a busy group: a dict update. What
must be written (counters every 10 messages, the windows to clear) goes into one batched
transaction a moment later, because under load every trip to the database thread costs
the event loop several milliseconds."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from ..engine import Background
from ..scopes import Scope
from ..store import GroupCounterStore, MemoryOnlyCounterStore

logger = logging.getLogger("nonebot_plugin_aimemory")

PERSIST_EVERY_MESSAGES = 10
BATCH_SECONDS = 0.25

# Clears a group's window (its current persona's) in memory and holds its session until the
# store is cleared too, so no turn can append to a window whose stored copy is about to be
# deleted; yields the key of the window it cleared.
HoldCleared = Callable[[str], AbstractAsyncContextManager[str]]


def groups_of(window_keys: set[str]) -> set[str]:
    """The group chats (as each account has them) the window keys belong to (a persona's
    window is its chat's)."""
    scopes = (Scope.parse_or_none(key) for key in window_keys)
    return {scope.chat_key for scope in scopes if scope is not None and scope.is_group}


class GroupAutoClear:
    """Counts unaddressed group messages and clears a group's context at the threshold."""

    def __init__(
        self,
        threshold: int,
        store: GroupCounterStore | MemoryOnlyCounterStore,
        hold_cleared: HoldCleared,
    ) -> None:
        self.threshold = threshold
        self._store = store
        self._hold_cleared = hold_cleared
        self.counts: dict[str, int] = {}
        # Groups whose window may hold something: clearing any other group is a no-op, and
        # skipping it keeps database writes off the hot path of groups that never talk to us.
        self.with_context: set[str] = set()
        self._dirty: set[str] = set()
        self._to_clear: set[str] = set()
        self._batch: asyncio.Task[None] | None = None
        # Clears and batches run off the hot path; close() waits for all of them.
        self._background = Background("auto-clear")
        self.clears_done = 0
        self.batches_written = 0

    @property
    def enabled(self) -> bool:
        """Whether auto-clear is on; a threshold of 0 turns it off."""
        return self.threshold > 0

    async def load(self) -> None:
        """Read the persisted counters and which groups have a stored window."""
        self.counts = await self._store.load_all()
        self.with_context = groups_of(await self._store.load_group_window_keys())

    def note_unaddressed(self, chat_key: str) -> None:
        """Count one message that did not address the bot; never awaits."""
        if not self.enabled:
            return
        count = self.counts.get(chat_key, 0) + 1
        self.counts[chat_key] = count
        if chat_key not in self.with_context:
            # Nothing to clear, so nothing to persist: the next addressed message resets the
            # count anyway. A group that never talks to the bot costs no write at all.
            return
        self._dirty.add(chat_key)
        if count >= self.threshold:
            self.with_context.discard(chat_key)
            self._background.spawn(self._clear(chat_key))
        elif count % PERSIST_EVERY_MESSAGES == 0:
            self._next_batch()

    def note_addressed(self, chat_key: str) -> None:
        """A message addressed to the bot resets the group's count."""
        self.with_context.add(chat_key)
        if self.counts.get(chat_key):
            self.counts[chat_key] = 0
            self._dirty.add(chat_key)
            self._next_batch()

    async def _clear(self, chat_key: str) -> None:
        try:
            async with self._hold_cleared(chat_key) as window_key:
                self._to_clear.add(window_key)
                await asyncio.shield(self._next_batch())
            self.clears_done += 1
            logger.info(
                "%s: context cleared after %d unaddressed messages", chat_key, self.threshold
            )
        except Exception:
            logger.exception("auto-clear of group %s failed", chat_key)

    def _next_batch(self) -> asyncio.Task[None]:
        """The batch that will carry what is due now (started if none is waiting)."""
        if self._batch is None:
            self._batch = self._background.spawn(self._write_batch_later())
        return self._batch

    async def _write_batch_later(self) -> None:
        await asyncio.sleep(BATCH_SECONDS)
        self._batch = None  # from here on, new work goes into the next batch
        await self.flush()

    async def flush(self) -> None:
        """Write the changed counters and the windows to clear, now, in one transaction."""
        counts = {chat_key: self.counts.get(chat_key, 0) for chat_key in self._dirty}
        clears, self._to_clear = self._to_clear, set()
        self._dirty.clear()
        if not counts and not clears:
            return
        try:
            await self._store.save(counts, clears)
            self.batches_written += 1
        except Exception:
            logger.exception("could not persist auto-clear counters and clears")

    async def close(self) -> None:
        """Finish pending clears and write the last counts."""
        if self._batch is not None:
            self._batch.cancel()  # written right below, without the wait
            self._batch = None
        await self.flush()
        await self._background.close()
        await self.flush()
