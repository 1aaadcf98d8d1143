"""The in-memory index of memories: each scope's entries (with their search tokens) and
tombstones (with their gist, to catch rewordings), loaded on demand, a bounded number cached,
and one write lock per scope."""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from ..store import MemoryRecord, MemoryStore, Tombstone
from ..text import analyse, content_characters, segmenter
from .gist import Gist
from .rules import is_safe_to_show

MAX_CACHED_SCOPES = 64


# A tag is a label someone chose for the memory: a term in its tags counts twice in the
# ranking (keywords.py's BM25F), and so do its characters here (counts are integers).
TAG_WEIGHT = 2.0
TAG_CHARACTER_COUNT = int(TAG_WEIGHT)


@dataclass(slots=True)
class IndexedMemory:
    """A memory with its search terms, as kept in a scope's in-memory index: the token set
    of its content (what the save rules compare), and what search ranks by: the term counts
    of its content and of its tags, and the counts of its Chinese characters (a tag's
    counting as TAG_WEIGHT)."""

    record: MemoryRecord
    content_tokens: frozenset[str]
    content_terms: Counter[str]
    tag_terms: Counter[str]
    characters: Counter[str]
    # The lengths BM25 normalises by, counted once (Counter.total() is a Python-level sum).
    content_length: int = 0
    tag_length: int = 0
    characters_length: int = 0
    # When it was saved (None when unreadable): what a day named in a query matches.
    saved_at: datetime | None = None
    _safe: bool | None = None
    _query_terms: tuple[str, ...] | None = None

    @classmethod
    def of(cls, record: MemoryRecord) -> IndexedMemory:
        """Index a record: its content's token set, its content's and its tags' terms."""
        tag_terms: Counter[str] = Counter()
        for tag in record.tags:
            tag_terms.update(segmenter.terms(tag))
        content_terms = Counter(segmenter.terms(record.content))
        characters = Counter(content_characters(record.content))
        for tag in record.tags:
            for character in content_characters(tag):
                characters[character] += TAG_CHARACTER_COUNT
        return cls(
            record,
            segmenter.token_set(record.content),
            content_terms,
            tag_terms,
            characters,
            content_terms.total(),
            tag_terms.total(),
            characters.total(),
            _parse_saved_at(record.created_at),
        )

    @property
    def safe(self) -> bool:
        """Whether the memory may be shown to the model (checked once: entries are
        re-indexed whenever their record changes)."""
        if self._safe is None:
            self._safe = is_safe_to_show(self.record)
        return self._safe

    @property
    def query_terms(self) -> tuple[str, ...]:
        """Its content's terms as a query's (text/query.py: no stopwords or function
        words): what it lends a search's feedback (feedback.py), analysed once."""
        if self._query_terms is None:
            self._query_terms = analyse(self.record.content).terms
        return self._query_terms


@dataclass(frozen=True, slots=True)
class IndexedTombstone:
    """A tombstone with the gist of its content, as kept in a scope's index."""

    memory_id: str
    gist: Gist

    @classmethod
    def of(cls, normalized: str, memory_id: str, user_id: str | None) -> IndexedTombstone:
        """Index the tombstoned content (only its normalised form is kept)."""
        return cls(memory_id, Gist.of(normalized, user_id))


@dataclass(slots=True)
class LoadedScope:
    """One scope as indexed: every entry by id (deleted ones too) and its tombstones
    (normalised content → the tombstone of the memory a person deleted)."""

    entries: dict[str, IndexedMemory]
    tombstones: dict[str, IndexedTombstone]
    # What the database held when it was loaded (MemoryStore.scope_stamp): on a database
    # other processes write to, a different stamp means this index is out of date.
    stamp: tuple[object, ...] = ()

    def live(self) -> list[IndexedMemory]:
        """Entries not deleted."""
        return [e for e in self.entries.values() if not e.record.deleted]

    def ids_in_use(self) -> set[str]:
        """Ids a new memory may not take: every entry's, and those of tombstones whose memory
        was purged (a late `~记忆 恢复 #id` must never reach a different memory)."""
        return {*self.entries, *(t.memory_id for t in self.tombstones.values())}

    def tombstone_for(self, normalized: str, gist: Gist) -> IndexedTombstone | None:
        """The tombstone this content falls under: its exact text, or a deleted fact it
        rewords."""
        exact = self.tombstones.get(normalized)
        if exact is not None:
            return exact
        return next((t for t in self.tombstones.values() if gist.rewords(t.gist)), None)

    def find_live_by_normalized(self, normalized: str) -> IndexedMemory | None:
        """The live entry with this normalised content, if any."""
        for entry in self.entries.values():
            if not entry.record.deleted and entry.record.normalized == normalized:
                return entry
        return None


def _parse_saved_at(created_at: str) -> datetime | None:
    try:
        # fromisoformat is some 20 times faster than strptime; Python 3.10's needs "+00:00".
        return datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None  # never stored without a time; an unreadable one names no day


class ScopeIndex:
    """The indexed scopes: loaded once per scope (concurrent readers share one load), at
    most `MAX_CACHED_SCOPES` kept, and written only under the scope's lock."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._scopes: OrderedDict[str, LoadedScope] = OrderedDict()
        self._loading: dict[str, asyncio.Future[LoadedScope]] = {}
        # Write locks live apart from the cache so that evicting a scope never gives it a
        # second lock; `_lock_users` counts holders and waiters, and a scope with any is
        # never evicted (its writer's index must stay the cached one).
        self._locks: dict[str, asyncio.Lock] = {}
        self._lock_users: Counter[str] = Counter()

    async def get(self, scope: str) -> LoadedScope:
        """The scope's index, loaded from the store if it is not cached (or, on a database
        other processes share, if they changed the scope since)."""
        cached = self._scopes.get(scope)
        if cached is not None and await self._still_current(scope, cached):
            self._scopes.move_to_end(scope)
            return cached
        pending = self._loading.get(scope)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[LoadedScope] = asyncio.get_running_loop().create_future()
        self._loading[scope] = future
        try:
            # Stamped first: a write landing during the load makes the next read reload.
            stamp = await self.store.scope_stamp(scope) if self._shared else ()
            records = await self.store.load_scope(scope)
            tombstones = await self.store.load_tombstone_records(scope)
            # Tokenising thousands of entries takes long enough to stall every chat: off-loop.
            loaded = await asyncio.to_thread(_index_scope, records, tombstones)
            loaded.stamp = stamp
            self._remember(scope, loaded)
            future.set_result(loaded)
            return loaded
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiting callers re-raise it
            raise
        finally:
            del self._loading[scope]

    @asynccontextmanager
    async def writing(self, scope: str) -> AsyncIterator[LoadedScope]:
        """Hold the scope's write lock and yield its index, loaded (or reloaded) under it."""
        lock = self._locks.get(scope)
        if lock is None:
            lock = self._locks[scope] = asyncio.Lock()
        self._lock_users[scope] += 1
        try:
            async with lock:
                yield await self.get(scope)
        finally:
            self._lock_users[scope] -= 1
            if not self._lock_users[scope]:
                del self._lock_users[scope]
                del self._locks[scope]

    @property
    def _shared(self) -> bool:
        """Whether other processes may write the scopes (a PostgreSQL database)."""
        return self.store.database.shared

    async def _still_current(self, scope: str, cached: LoadedScope) -> bool:
        """Whether the cached index still holds what the database does: always with one
        process on the database; on PostgreSQL, one small query tells."""
        if not self._shared or scope in self._lock_users:
            # A writer of this process holds the scope: its index is the one being written.
            return True
        return await self.store.scope_stamp(scope) == cached.stamp

    def forget(self, scope: str) -> None:
        """Stop trusting the cached index of `scope` (the database holds what another
        process wrote): the next read loads it again."""
        self._scopes.pop(scope, None)

    def forget_all(self) -> None:
        """Stop trusting every cached index not being written (the vectors they hold were
        made by another model): the next read of each loads it again."""
        for scope in [s for s in self._scopes if s not in self._lock_users]:
            del self._scopes[scope]

    def drop(self, purged: Iterable[tuple[str, str]]) -> None:
        """Forget purged entries, given as (scope, id), in the scopes that are cached (one
        that is not is loaded without them)."""
        for scope, memory_id in purged:
            cached = self._scopes.get(scope)
            if cached is not None:
                cached.entries.pop(memory_id, None)

    def _remember(self, scope: str, loaded: LoadedScope) -> None:
        self._scopes[scope] = loaded
        # Keep a bounded number of scopes indexed; an evicted one is reloaded on demand. A
        # scope being written stays: its writer updates this very index after the database.
        while len(self._scopes) > MAX_CACHED_SCOPES:
            victim = next(
                (s for s in self._scopes if s != scope and s not in self._lock_users), None
            )
            if victim is None:
                return  # every other cached scope is being written: over the bound for now
            del self._scopes[victim]


def _index_scope(records: Sequence[MemoryRecord], tombstones: Sequence[Tombstone]) -> LoadedScope:
    return LoadedScope(
        {r.id: IndexedMemory.of(r) for r in records},
        {
            t.normalized: IndexedTombstone.of(t.normalized, t.memory_id, t.user_id)
            for t in tombstones
        },
    )
