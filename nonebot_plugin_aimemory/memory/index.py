"""The in-memory index of memories: each scope's entries (with their search tokens) and
tombstones (with their gist, to catch rewordings), loaded on demand, a bounded number cached,
and one write lock per scope."""

from __future__ import annotations

import asyncio
import math
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from ..store.memory_store import MemoryRecord, MemoryStore, Tombstone
from ..text import query as query_module
from ..text import segmenter
from .gist import Gist
from .rules import is_safe_to_show

# BM25F (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
# 2009) over a memory's two fields. k1 and b are the textbook values (Lucene's defaults);
# a tag is a label someone chose for the memory, so a term in its tags counts twice.
BM25_K1 = 1.2
BM25_B = 0.75
CONTENT_WEIGHT = 1.0
TAG_WEIGHT = 2.0
MAX_CACHED_SCOPES = 64


@dataclass(slots=True)
class IndexedMemory:
    """A memory with its search terms, as kept in a scope's in-memory index: the token set
    of its content (what the save rules compare), and the term counts of its content and of
    its tags (what search ranks by)."""

    record: MemoryRecord
    content_tokens: frozenset[str]
    content_terms: Counter[str]
    tag_terms: Counter[str]
    _safe: bool | None = None

    @classmethod
    def of(cls, record: MemoryRecord) -> IndexedMemory:
        """Index a record: its content's token set, its content's and its tags' terms."""
        tag_terms: Counter[str] = Counter()
        for tag in record.tags:
            tag_terms.update(segmenter.terms(tag))
        return cls(
            record,
            segmenter.token_set(record.content),
            Counter(segmenter.terms(record.content)),
            tag_terms,
        )

    @property
    def safe(self) -> bool:
        """Whether the memory may be shown to the model (checked once: entries are
        re-indexed whenever their record changes)."""
        if self._safe is None:
            self._safe = is_safe_to_show(self.record)
        return self._safe


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


def keyword_ranking(
    query: str, entries: Sequence[IndexedMemory]
) -> list[tuple[IndexedMemory, float]]:
    """Entries matching the query's terms, best first, with their keyword score (> 0).

    The score is BM25F over content and tags, with idf and average lengths taken from
    `entries` (the scope's live memories): the sum, over the query's content terms (see
    `text.query`: stopwords and function words never count) that the entry holds, of the
    term's idf times a saturating, length-normalised term frequency, about idf for one
    occurrence in a content of average length, at most (k1 + 1) x idf. idf is
    ln(1 + (N - df + 0.5) / (df + 0.5)) (always > 0). So a score says how many, and how
    rare, of the query's words the memory shares; it grows with the query's length and is
    not a probability. Ties: newest first."""
    terms = query_module.analyse(query).terms
    if not terms or not entries:
        return []
    statistics = _FieldStatistics.of(entries, terms)
    scored = []
    for entry in entries:
        score = statistics.score(entry, terms)
        if score > 0:
            scored.append((entry, score))
    scored.sort(key=lambda pair: (pair[1], pair[0].record.updated_at), reverse=True)
    return scored


@dataclass(frozen=True, slots=True)
class _FieldStatistics:
    """What BM25F needs from the collection: each query term's idf and each field's
    average length."""

    idf: dict[str, float]
    average_content_terms: float
    average_tag_terms: float

    @classmethod
    def of(cls, entries: Sequence[IndexedMemory], terms: Sequence[str]) -> _FieldStatistics:
        count = len(entries)
        holding = Counter(
            term
            for entry in entries
            for term in terms
            if term in entry.content_terms or term in entry.tag_terms
        )
        idf = {
            term: math.log(1 + (count - holding[term] + 0.5) / (holding[term] + 0.5))
            for term in terms
        }
        content_total = sum(entry.content_terms.total() for entry in entries)
        tag_total = sum(entry.tag_terms.total() for entry in entries)
        # A field empty in every entry has no length to normalise by: 1 keeps it neutral.
        return cls(idf, max(1.0, content_total / count), max(1.0, tag_total / count))

    def score(self, entry: IndexedMemory, terms: Sequence[str]) -> float:
        content_norm = _length_norm(entry.content_terms.total(), self.average_content_terms)
        tag_norm = _length_norm(entry.tag_terms.total(), self.average_tag_terms)
        score = 0.0
        for term in terms:
            weighted = (
                CONTENT_WEIGHT * entry.content_terms.get(term, 0) / content_norm
                + TAG_WEIGHT * entry.tag_terms.get(term, 0) / tag_norm
            )
            if weighted:
                score += self.idf[term] * weighted * (BM25_K1 + 1) / (weighted + BM25_K1)
        return score


def _length_norm(length: int, average: float) -> float:
    return 1 - BM25_B + BM25_B * length / average


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
        """The scope's index, loaded from the store if it is not cached."""
        cached = self._scopes.get(scope)
        if cached is not None:
            self._scopes.move_to_end(scope)
            return cached
        pending = self._loading.get(scope)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[LoadedScope] = asyncio.get_running_loop().create_future()
        self._loading[scope] = future
        try:
            records = await self.store.load_scope(scope)
            tombstones = await self.store.load_tombstone_records(scope)
            # Tokenising thousands of entries takes long enough to stall every chat: off-loop.
            loaded = await asyncio.to_thread(_index_scope, records, tombstones)
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
