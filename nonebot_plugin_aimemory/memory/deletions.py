"""Deleting memories and undoing it: a person's deletion leaves a tombstone (the same content
is refused from then on), a deleted memory can be restored until it is purged
`PURGE_DELETED_AFTER_DAYS` later, and its tombstone stays after that."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from ..store import MemoryRecord, MemoryStore, utc_text
from .index import IndexedMemory, IndexedTombstone, ScopeIndex
from .personal import MemoryView
from .rules import id_key
from .writes import WriteContext

logger = logging.getLogger("nonebot_plugin_aimemory")

# A deleted memory is kept this long (for `~记忆 恢复`), then its row is purged; its
# tombstone stays, so a save/forget loop cannot grow the table without bound.
PURGE_DELETED_AFTER_DAYS = 30


class MemoryFull(Exception):
    """The scope already holds `max_entries` memories."""


async def delete(
    ctx: WriteContext,
    view: MemoryView,
    memory_ids: Sequence[str],
    *,
    by_person: bool,
    still: Callable[[MemoryRecord], bool] = lambda record: True,
) -> list[MemoryRecord]:
    """Delete the live memories with these ids that the view shows, tombstoned if
    `by_person`, and only those that are `still` what the caller means, read under the
    scope's write lock; returns them as deleted."""
    scope = view.scope
    async with ctx.index.writing(scope) as loaded:
        targets = []
        for raw_id in memory_ids:
            entry = loaded.entries.get(id_key(raw_id))
            if entry is None or entry.record.deleted:
                continue
            if view.shows(entry.record) and still(entry.record):
                targets.append(entry.record)
        if not targets:
            return []
        await ctx.store.mark_deleted(scope, [r.id for r in targets], tombstone=by_person)
        now = ctx.now_text()
        deleted = []
        for record in targets:
            gone = replace(record, deleted_at=now, updated_at=now)
            loaded.entries[record.id] = IndexedMemory.of(gone)
            if by_person:
                loaded.tombstones[record.normalized] = IndexedTombstone.of(
                    record.normalized, record.id, record.user_id
                )
            deleted.append(gone)
    return deleted


async def restore(
    ctx: WriteContext, scope: str, memory_id: str, *, cap: int, include_private: bool
) -> MemoryRecord | None:
    """Undo a deletion in a scope holding at most `cap` (None when there is nothing to
    restore); raises MemoryFull when the scope has no room for it."""
    async with ctx.index.writing(scope) as loaded:
        entry = loaded.entries.get(id_key(memory_id))
        if entry is None or not entry.record.deleted:
            return None
        record = entry.record
        if record.private and not include_private:
            return None
        if len(loaded.live()) >= cap and not loaded.find_live_by_normalized(record.normalized):
            raise MemoryFull(cap)
        twin = loaded.find_live_by_normalized(record.normalized)
        if twin is not None:
            # The same content was saved again meanwhile: lift the tombstone, keep one copy.
            await ctx.store.lift_tombstone(scope, record.normalized)
            loaded.tombstones.pop(record.normalized, None)
            return twin.record
        if not await ctx.store.restore(scope, record.id, record.normalized):
            loaded.entries.pop(record.id, None)  # purged after this index was loaded
            return None
        restored = replace(record, deleted_at=None, updated_at=ctx.now_text())
        loaded.entries[record.id] = IndexedMemory.of(restored)
        loaded.tombstones.pop(record.normalized, None)
    return restored


async def was_purged(index: ScopeIndex, scope: str, memory_id: str) -> bool:
    """Whether a person deleted this memory so long ago that only its tombstone is left."""
    loaded = await index.get(scope)
    key = id_key(memory_id)
    if key in loaded.entries:
        return False
    return any(t.memory_id == key for t in loaded.tombstones.values())


async def purge_deleted(store: MemoryStore, index: ScopeIndex, now: datetime | None) -> int:
    """Delete for good the memories deleted more than `PURGE_DELETED_AFTER_DAYS` ago, in
    every scope; their tombstones stay. Returns how many were purged."""
    moment = now or datetime.now(timezone.utc)
    cutoff = utc_text(moment - timedelta(days=PURGE_DELETED_AFTER_DAYS))
    purged = await store.purge_deleted(cutoff)
    index.drop(purged)
    if purged:
        logger.info(
            "memory purge removed %d memories deleted over %d days ago",
            len(purged),
            PURGE_DELETED_AFTER_DAYS,
        )
    return len(purged)
