"""Scoped long-term memory: every read and write of memories goes through `MemoryService`, so
every write follows the rules (normalise, guard, mask, dedupe, tombstones, cap). A scope is a
chat's (`g:<group>`, `f:<user>`) or a person's (`u:<user>`, see personal.py: its own cap,
private memories); nothing here ever reads or writes outside the scopes it is given, and a
search of several scopes at once ranks them together.

The service is a facade: reads are in `search.py`, saves and updates in `writes.py`,
deletions, restores and the purge in `deletions.py`; the rules themselves in `rules.py`, the
in-memory index in `index.py`, its keyword ranking in `keywords.py`, embeddings in
`vectors.py`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime, timezone, tzinfo

from ..engine import Embedder, NoEmbeddings
from ..store import MemoryRecord, MemoryStore, Provenance
from . import deletions, search, writes
from .deletions import PURGE_DELETED_AFTER_DAYS, MemoryFull
from .index import ScopeIndex
from .personal import MemoryView, is_personal_scope
from .rules import MISSING, Missing, id_key
from .search import SearchHit
from .shared_guard import SharedScopeGuard
from .vectors import MemoryVectors
from .writes import SaveOutcome, Source, UpdateOutcome, WriteContext

__all__ = [
    "PURGE_DELETED_AFTER_DAYS",
    "MemoryFull",
    "MemoryService",
    "SaveOutcome",
    "SearchHit",
    "Source",
    "UpdateOutcome",
]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class MemoryService:
    """Long-term memories of every scope, loaded per scope on demand."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        max_entries: int = 200,
        personal_max_entries: int = 100,
        mask_pii: bool = True,
        embedder: Embedder | None = None,
        zone: tzinfo = timezone.utc,
        clock: Callable[[], datetime] = _utc_now,
        guard: SharedScopeGuard | None = None,
    ) -> None:
        self.store = store
        self.max_entries = max_entries
        self.personal_max_entries = personal_max_entries
        self.mask_pii = mask_pii
        # Days named in a query ("昨天", "5月2日") are counted in the chat's zone from now.
        self.zone = zone
        self.clock = clock
        # The model check of memories other people are shown (shared_guard.py).
        self.guard = guard or SharedScopeGuard()
        self._index = ScopeIndex(store)
        self._vectors = MemoryVectors(store, self._index, embedder or NoEmbeddings())

    def _writing(self) -> WriteContext:
        """What a write works on, with the service's settings as they are now."""
        return WriteContext(
            self.store, self._index, self._vectors, self.mask_pii, self.clock, self.guard
        )

    @property
    def embedder(self) -> Embedder:
        """The embedding client, or None when only keyword search is configured."""
        return self._vectors.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self._vectors.embedder = embedder

    def max_entries_for(self, scope: str) -> int:
        """The cap of a scope: a person's memories have their own."""
        return self.personal_max_entries if is_personal_scope(scope) else self.max_entries

    async def list(self, scope: str, *, include_private: bool = True) -> list[MemoryRecord]:
        """Live memories, newest first (without private ones unless `include_private`)."""
        view = MemoryView(scope, include_private)
        records = [e.record for e in await search.visible(self._index, view)]
        return sorted(records, key=lambda r: (r.updated_at, r.id), reverse=True)

    async def count(self, scope: str, *, include_private: bool = True) -> int:
        """How many live memories the scope holds (private ones only if `include_private`)."""
        return len(await search.visible(self._index, MemoryView(scope, include_private)))

    async def get(
        self, scope: str, memory_id: str, *, include_private: bool = True
    ) -> MemoryRecord | None:
        """A live memory by id (`#` and case ignored), or None (also for a private one
        unless `include_private`)."""
        entry = (await self._index.get(scope)).entries.get(id_key(memory_id))
        if entry is None or entry.record.deleted:
            return None
        return entry.record if include_private or not entry.record.private else None

    async def search(
        self,
        scope: str,
        query: str | None,
        limit: int = 10,
        *,
        safe_only: bool = False,
        include_private: bool = True,
    ) -> list[SearchHit]:
        """Without a query: everything, newest first. With one: the keyword ranking, fused by
        score with the vector ranking when embeddings are configured (see text/fusion.py).
        `safe_only` leaves out memories that fail the injection guard (a model is shown
        them: shared ones the model check never read are read first)."""
        view = MemoryView(scope, include_private)
        return await self.search_in([view], query, limit, safe_only=safe_only)

    async def search_in(
        self,
        views: Sequence[MemoryView],
        query: str | None,
        limit: int = 10,
        *,
        safe_only: bool = False,
        feedback: bool = False,
    ) -> list[SearchHit]:
        """`search` over what several views show, ranked together as one collection (a
        chat's memories and its speaker's personal ones in one ranking); with `feedback`
        (the model's search), the best memories' words are added to the query."""
        hits = await search.search_views(
            self._index,
            self._vectors,
            views,
            query,
            limit,
            safe_only=safe_only,
            zone=self.zone,
            clock=self.clock,
            feedback=feedback,
        )
        return await self._checked(views, hits) if safe_only else hits

    async def relevant(
        self, scope: str, text: str, top_k: int, *, include_private: bool = True
    ) -> list[MemoryRecord]:
        """The memories most relevant to `text` that are safe to show the model, as
        `search` ranks them, but only those above the relevance floor (see relevance.py):
        none at all when nothing stored is about the message."""
        hits = await self.relevant_in([MemoryView(scope, include_private)], text, top_k)
        return [hit.memory for hit in hits]

    async def relevant_in(
        self, views: Sequence[MemoryView], text: str, top_k: int
    ) -> list[SearchHit]:
        """`relevant` over what several views show, ranked together, at most `top_k` in
        all."""
        hits = await search.relevant_views(
            self._index, self._vectors, views, text, top_k, zone=self.zone
        )
        return await self._checked(views, hits)

    async def _checked(self, views: Sequence[MemoryView], hits: list[SearchHit]) -> list[SearchHit]:
        """`hits` about to be shown to a model, less the shared ones the model check says
        steer (shared_guard.py)."""
        scopes = {view.personal: view.scope for view in views}
        steering = await self.guard.unshown((scopes[hit.personal], hit.memory) for hit in hits)
        return [hit for hit in hits if hit.memory.id not in steering]

    async def save(
        self,
        scope: str,
        content: str,
        *,
        tags: Sequence[object] | None = None,
        user_id: str | None = None,
        source: Source = "tool",
        evidence: Sequence[int] = (),
        private: bool = False,
        provenance: Provenance = Provenance(),
    ) -> SaveOutcome:
        """Save one memory through every rule; never raises for bad content. `private`: a
        personal memory told in its owner's private chat (see personal.py); `provenance`:
        where it came from (unknown unless given). A member's turn saves with source
        "tool": where the guard checks such a note after the turn, it starts that check."""
        outcome = await writes.save(
            self._writing(),
            scope,
            content,
            cap=self.max_entries_for(scope),
            tags=tags,
            user_id=user_id,
            source=source,
            evidence=evidence,
            private=private,
            provenance=provenance,
        )
        if outcome.later is not None and outcome.memory is not None:
            retract = functools.partial(self._retract, scope, outcome.memory)
            self.guard.check_later(outcome.later, retract)
        return outcome

    async def _retract(self, scope: str, saved: MemoryRecord) -> None:
        """Delete `saved` (no tombstone: nobody asked to forget it) after the model check
        said it steers, unless it was changed or deleted since (a change was checked)."""
        view = MemoryView(scope, include_private=True)
        await deletions.delete(
            self._writing(),
            view,
            [saved.id],
            by_person=False,
            still=lambda current: current.content == saved.content,
        )

    async def update(
        self,
        scope: str,
        memory_id: str,
        *,
        content: str | Missing = MISSING,
        tags: Sequence[object] | Missing | None = MISSING,
        user_id: str | Missing | None = MISSING,
        add_evidence: Sequence[int] = (),
        include_private: bool = True,
    ) -> UpdateOutcome:
        """Change a memory; omitted fields keep their value, empty tags/user_id clear them.
        `add_evidence` appends chat-log row ids the change was based on. A private memory
        is not found unless `include_private`."""
        return await writes.update(
            self._writing(),
            scope,
            memory_id,
            content=content,
            tags=tags,
            user_id=user_id,
            add_evidence=add_evidence,
            include_private=include_private,
        )

    async def forget(
        self, scope: str, memory_id: str, *, by_person: bool, include_private: bool = True
    ) -> MemoryRecord | None:
        """Delete one memory. A person's deletion leaves a tombstone: the same content is
        refused from then on, whoever tries to save it. A private memory is not found
        unless `include_private`."""
        view = MemoryView(scope, include_private)
        deleted = await deletions.delete(self._writing(), view, [memory_id], by_person=by_person)
        return deleted[0] if deleted else None

    async def clear(self, scope: str, *, include_private: bool = True) -> int:
        """A person deletes every memory of the scope (all tombstoned); private ones only
        if `include_private`."""
        view = MemoryView(scope, include_private)
        ids = [e.record.id for e in await search.visible(self._index, view)]
        return len(await deletions.delete(self._writing(), view, ids, by_person=True))

    async def erase(self, scope: str) -> int:
        """Delete the scope's memories for good, tombstones too, leaving nothing a save would
        be refused for: only for the try page's test chats, which start over when cleared."""
        async with self._index.writing(scope):
            erased = await self.store.erase_scope(scope)
            self._index.forget(scope)
        return erased

    async def set_private(self, scope: str, memory_id: str, private: bool) -> MemoryRecord | None:
        """Make a live memory private or public (its owner's choice); None when there is no
        live memory with that id."""
        return await writes.set_private(self._writing(), scope, memory_id, private)

    async def restore(
        self, scope: str, memory_id: str, *, include_private: bool = True
    ) -> MemoryRecord | None:
        """Undo a deletion: lift the tombstone and bring the entry back (None when there is
        no deleted memory with that id, or it was purged, or it is private and not
        `include_private`). Raises MemoryFull when the scope has no room for it."""
        return await deletions.restore(
            self._writing(),
            scope,
            memory_id,
            cap=self.max_entries_for(scope),
            include_private=include_private,
        )

    async def was_purged(self, scope: str, memory_id: str) -> bool:
        """Whether a person deleted this memory so long ago that only its tombstone is left."""
        return await deletions.was_purged(self._index, scope, memory_id)

    async def purge_deleted(self, now: datetime | None = None) -> int:
        """Delete for good the memories deleted more than `PURGE_DELETED_AFTER_DAYS` ago, in
        every scope; their tombstones stay. Returns how many were purged."""
        return await deletions.purge_deleted(self.store, self._index, now)

    async def backfill_embeddings(self, batch_size: int = 32) -> int:
        """Compute vectors for memories stored without one (saved before embeddings were
        configured, or while the server was down), until none is left or the embedding
        server fails: keyword search keeps working meanwhile, and the next successful
        embedding call starts the backfill again."""
        return await self._vectors.backfill(batch_size)

    async def close(self, grace_seconds: float = 0.0) -> None:
        """Stop the guard's checks still to come after `grace_seconds`, and a backfill
        started after the embedding server recovered: it may have many batches to go, and
        whatever it has not filled is filled after the next start."""
        await self.guard.close(grace_seconds)
        await self._vectors.close()
