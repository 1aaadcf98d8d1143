"""The in-memory index of memories: each scope's entries (with their search tokens) and
tombstones (with their gist, to catch rewordings), loaded on demand, a bounded number cached,
and one write lock per scope."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo

from ..store.memory_store import MemoryRecord, MemoryStore, Tombstone
from ..text import query as query_module
from ..text import segmenter
from ..text.query import Period, Query, content_characters
from .gist import Gist
from .rules import is_safe_to_show

# BM25F (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
# 2009) over a memory's two fields. k1 and b are the textbook values (Lucene's defaults);
# a tag is a label someone chose for the memory, so a term in its tags counts twice.
BM25_K1 = 1.2
BM25_B = 0.75
CONTENT_WEIGHT = 1.0
TAG_WEIGHT = 2.0
# The characters of a tag count TAG_WEIGHT times too (counts are integers).
TAG_CHARACTER_COUNT = int(TAG_WEIGHT)
# What a function word of the query ("我", "the") weighs against a content word of the same
# idf. Measured on MemoryBank-SiliconFriend (bench/retrieval.py), recall@10 is flat from
# 0.05 to 0.5 and falls at 1 (function words then reorder real matches): the middle of it.
WEAK_TERM_WEIGHT = 0.2
# What a Chinese character of the query's content words weighs against a word. Measured on
# the same bench, recall@10 is the same from 0.1 to 0.3 and lower without: the middle.
CHARACTER_WEIGHT = 0.2
MIN_CHARACTERS_TO_FIND = 2
MAX_CACHED_SCOPES = 64


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
    query: str | Query,
    entries: Sequence[IndexedMemory],
    zone: tzinfo = timezone.utc,
    *,
    characters_find: bool = True,
) -> list[tuple[IndexedMemory, float]]:
    """Entries matching the query's terms or the days it names, best first, with their
    keyword score (> 0).

    The score is BM25F over content and tags, with idf and average lengths taken from
    `entries` (the scope's live memories): the sum, over the query's content terms (see
    `text.query`: stopwords and function words never find a memory) that the entry holds, of
    the term's idf times a saturating, length-normalised term frequency, about idf for one
    occurrence in a content of average length, at most (k1 + 1) x idf. idf is
    ln(1 + (N - df + 0.5) / (df + 0.5)) (always > 0). Three more kinds of evidence count:
    - a day the query names ("昨天", "5月2日"; only in a `Query` analysed with today's date)
      is one more term, held by the memories saved on it (in `zone`), so that "我5月2日说的
      那本书" finds what was said that day;
    - the Chinese characters of the query's content words, BM25 over the characters of each
      memory, weighted CHARACTER_WEIGHT: words and characters together retrieve Chinese
      better than either (Nie, Gao, Zhang & Zhou, "On the Use of Words and N-grams for
      Chinese Information Retrieval", IRAL 2000), so "糖醋鱼" finds "醋、糖……鱼块" (two
      characters in common needed to find); with `characters_find` False (auto-inject,
      where a wrong find costs more than a miss) they only order what words matched;
    - the query's function words, weighted WEAK_TERM_WEIGHT, order the entries the rest
      matched, but never match alone: a question of only function words finds nothing.
    So a score says how many, and how rare, of the query's words the memory shares; it grows
    with the query's length and is not a probability. Ties: newest first."""
    analysed = query_module.analyse(query) if isinstance(query, str) else query
    terms, weak_terms = frozenset(analysed.terms), frozenset(analysed.weak_terms)
    if not (terms or analysed.periods) or not entries:
        return []
    # What each entry shares with the query, worked out once for the statistics and scores.
    asked = terms | weak_terms
    held = [_shared_terms(entry, asked) for entry in entries]
    words = _WordStatistics.of(entries, asked, held)
    characters = _CharacterStatistics.of(entries, analysed.terms)
    days = _DayTerm.of(entries, analysed.periods, zone)
    scored = []
    for entry, shared in zip(entries, held, strict=True):
        score = (words.score(entry, shared & terms) if shared else 0.0) + days.score(entry)
        if score or characters_find:
            score += CHARACTER_WEIGHT * characters.score(entry, finding=not score)
        if score > 0:
            score += WEAK_TERM_WEIGHT * words.score(entry, shared & weak_terms)
            scored.append((entry, score))
    scored.sort(key=lambda pair: (pair[1], pair[0].record.updated_at), reverse=True)
    return scored


def _shared_terms(entry: IndexedMemory, terms: frozenset[str]) -> frozenset[str]:
    """The terms of `terms` the entry's content or tags hold. (`terms.intersection(d)`
    looks each term up in the dict; `d.keys() & terms` would first copy every key.)"""
    shared = terms.intersection(entry.content_terms)
    if entry.tag_terms:
        shared |= terms.intersection(entry.tag_terms)
    return shared


def _idf(count: int, holding: int) -> float:
    return math.log(1 + (count - holding + 0.5) / (holding + 0.5))


def _saturated(weighted_frequency: float) -> float:
    return weighted_frequency * (BM25_K1 + 1) / (weighted_frequency + BM25_K1)


def _length_norm(length: int, average: float) -> float:
    return 1 - BM25_B + BM25_B * length / average


@dataclass(frozen=True, slots=True)
class _WordStatistics:
    """What BM25F needs from the collection: each query term's idf and each field's
    average length. Terms are matched by set intersection, so an entry costs what it shares
    with the query, not what the query holds."""

    idf: dict[str, float]
    average_content_terms: float
    average_tag_terms: float

    @classmethod
    def of(
        cls,
        entries: Sequence[IndexedMemory],
        terms: frozenset[str],
        held: Sequence[frozenset[str] | set[str]],
    ) -> _WordStatistics:
        """The statistics of `terms` over `entries`, given what each entry holds of them."""
        count = len(entries)
        holding = Counter(itertools.chain.from_iterable(held))
        idf = {term: _idf(count, holding[term]) for term in terms}
        content_total = sum(entry.content_length for entry in entries)
        tag_total = sum(entry.tag_length for entry in entries)
        # A field empty in every entry has no length to normalise by: 1 keeps it neutral.
        return cls(idf, max(1.0, content_total / count), max(1.0, tag_total / count))

    def score(self, entry: IndexedMemory, shared: frozenset[str] | set[str]) -> float:
        """BM25F of the query terms the entry holds (`shared`, from `_shared_terms`)."""
        if not shared:
            return 0.0
        content, tags = entry.content_terms, entry.tag_terms
        content_norm = _length_norm(entry.content_length, self.average_content_terms)
        tag_norm = _length_norm(entry.tag_length, self.average_tag_terms)
        return sum(
            self.idf[term]
            * _saturated(
                CONTENT_WEIGHT * content.get(term, 0) / content_norm
                + TAG_WEIGHT * tags.get(term, 0) / tag_norm
            )
            for term in shared
        )


@dataclass(frozen=True, slots=True)
class _CharacterStatistics:
    """BM25 over the Chinese characters of memories: each query character's idf and the
    average count of characters."""

    idf: dict[str, float]
    average_characters: float

    @classmethod
    def of(cls, entries: Sequence[IndexedMemory], terms: Sequence[str]) -> _CharacterStatistics:
        characters = frozenset(content_characters("".join(terms)))
        if not characters:
            return cls({}, 1.0)
        count = len(entries)
        holding = Counter(
            itertools.chain.from_iterable(characters.intersection(e.characters) for e in entries)
        )
        total = sum(entry.characters_length for entry in entries)
        idf = {character: _idf(count, holding[character]) for character in characters}
        return cls(idf, max(1.0, total / count))

    def score(self, entry: IndexedMemory, *, finding: bool) -> float:
        """The entry's character score. `finding` (nothing else matched it): 0 unless it
        shares MIN_CHARACTERS_TO_FIND of the query's characters, so that one character in
        common ("宠物" for "量子物理") never finds a memory."""
        if not self.idf:
            return 0.0
        counts = entry.characters
        shared = [c for c in self.idf if c in counts]
        if not shared or (finding and len(shared) < MIN_CHARACTERS_TO_FIND):
            return 0.0
        norm = _length_norm(entry.characters_length, self.average_characters)
        return sum(self.idf[c] * _saturated(counts[c] / norm) for c in shared)


@dataclass(frozen=True, slots=True)
class _DayTerm:
    """The days a query names as one term: the ids of the entries saved on one of them, and
    its idf among all entries."""

    holders: frozenset[str]
    idf: float

    @classmethod
    def of(
        cls, entries: Sequence[IndexedMemory], periods: Sequence[Period], zone: tzinfo
    ) -> _DayTerm:
        if not periods:
            return cls(frozenset(), 0.0)
        holders = frozenset(
            entry.record.id for entry in entries if _saved_within(entry.saved_at, periods, zone)
        )
        return cls(holders, _idf(len(entries), len(holders)))

    def score(self, entry: IndexedMemory) -> float:
        return self.idf if entry.record.id in self.holders else 0.0


def _parse_saved_at(created_at: str) -> datetime | None:
    try:
        # fromisoformat is some 20 times faster than strptime; Python 3.10's needs "+00:00".
        return datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None  # never stored without a time; an unreadable one names no day


def _saved_within(saved_at: datetime | None, periods: Sequence[Period], zone: tzinfo) -> bool:
    """Whether the memory was saved on a day of `periods`, a year-less date (always one day)
    matching that day of any year (a memory has no "latest year with rows" to pick)."""
    if saved_at is None:
        return False
    day = saved_at.astimezone(zone).date()
    for period in periods:
        if period.first <= day <= period.last:
            return True
        if period.yearless and (day.month, day.day) == (period.first.month, period.first.day):
            return True
    return False


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
