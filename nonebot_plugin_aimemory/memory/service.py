"""Scoped long-term memory: every read and write of memories goes through here, so every
write follows the rules (normalise, guard, mask, dedupe, tombstones, cap). A scope is a
chat's (`g:<group>`, `f:<user>`) or a person's (`u:<user>`, see personal.py: its own cap,
private memories); nothing here ever reads or writes outside the scopes it is given, and a
search of several scopes at once ranks them together.

The rules themselves are in `rules.py`, the in-memory index and its keyword ranking in
`index.py`, embeddings in `vectors.py`, the hybrid ranking in `fusion.py` and the floor of
auto-inject in `relevance.py`. Deleted memories are purged after `PURGE_DELETED_AFTER_DAYS`; their
tombstones stay."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, time, timedelta, timezone, tzinfo
from typing import Literal

from ..engine.embeddings import Embedder, NoEmbeddings
from ..guard import injection_reason, injection_reason_for_memory, mask_pii
from ..store.database import utc_text
from ..store.memory_store import MemoryRecord, MemoryStore
from ..text import query as query_module
from ..text import segmenter
from ..text.encodable import encodable
from ..text.fusion import fuse_rankings
from ..text.query import Query
from .gist import Gist
from .index import IndexedMemory, IndexedTombstone, LoadedScope, ScopeIndex, keyword_ranking
from .personal import MemoryView, is_personal_scope
from .relevance import RelevanceFloor
from .rules import (
    MAX_CONTENT_CHARS,
    MISSING,
    NEAR_DUPLICATE_DICE,
    Missing,
    clean_user_id,
    different_people,
    fold_whitespace,
    id_key,
    new_id,
    normalize,
    people_of,
    prepare_tags,
    tags_problem,
)
from .vectors import MemoryVectors, vector_ranking

logger = logging.getLogger("nonebot_plugin_aimemory")

Source = Literal["tool", "command", "extract", "review"]
# A deleted memory is kept this long (for `~记忆 恢复`), then its row is purged; its
# tombstone stays, so a save/forget loop cannot grow the table without bound.
PURGE_DELETED_AFTER_DAYS = 30


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class MemoryFull(Exception):
    """The scope already holds `max_entries` memories."""


@dataclass(slots=True)
class SaveOutcome:
    """What a save did; `status` says which branch the rules took."""

    status: Literal["saved", "duplicate", "tombstoned", "refused", "full", "empty"]
    memory: MemoryRecord | None = None
    similar: list[MemoryRecord] = field(default_factory=list)
    truncated: bool = False
    reason: str = ""


@dataclass(slots=True)
class UpdateOutcome:
    """What an update did; `status` says which branch the rules took."""

    status: Literal["updated", "not_found", "refused", "tombstoned", "duplicate", "empty"]
    memory: MemoryRecord | None = None
    truncated: bool = False
    reason: str = ""
    # False when content, tags and user_id were already as asked (evidence may still grow).
    changed: bool = True


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A search result with its relevance score; `personal` when it is a person's memory
    (found through a personal view), not the chat's."""

    memory: MemoryRecord
    score: float
    personal: bool = False


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
    ) -> None:
        self.store = store
        self.max_entries = max_entries
        self.personal_max_entries = personal_max_entries
        self.mask_pii = mask_pii
        # Days named in a query ("昨天", "5月2日") are counted in the chat's zone from now.
        self.zone = zone
        self.clock = clock
        self._index = ScopeIndex(store)
        self._vectors = MemoryVectors(store, self._index, embedder or NoEmbeddings())

    def _now_text(self) -> str:
        return utc_text(self.clock())

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
        records = [e.record for e in await self._visible(view)]
        return sorted(records, key=lambda r: (r.updated_at, r.id), reverse=True)

    async def count(self, scope: str, *, include_private: bool = True) -> int:
        """How many live memories the scope holds (private ones only if `include_private`)."""
        return len(await self._visible(MemoryView(scope, include_private)))

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
        rank with the vector ranking when embeddings are configured (see fusion.py).
        `safe_only` leaves out memories that fail the injection guard."""
        view = MemoryView(scope, include_private)
        return await self.search_in([view], query, limit, safe_only=safe_only)

    async def search_in(
        self,
        views: Sequence[MemoryView],
        query: str | None,
        limit: int = 10,
        *,
        safe_only: bool = False,
    ) -> list[SearchHit]:
        """`search` over what several views show, ranked together as one collection (a
        chat's memories and its speaker's personal ones in one ranking)."""
        live, personal = await self._pooled(views)
        # The guard runs only on entries about to be returned (and once per entry).
        if not query or not query.strip():
            live.sort(key=lambda e: (e.record.updated_at, e.record.id), reverse=True)
            shown = (e for e in live if not safe_only or e.safe)
            return [
                SearchHit(e.record, 0.0, e.record.id in personal)
                for e in itertools.islice(shown, limit)
            ]
        if not live:
            return []  # the common case of a new chat: no tokenising, no embedding call
        ranking = await self._rank(query, live)
        return _best_shown(ranking.fused, limit, safe_only=safe_only, personal=personal)

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
        if not text.strip():
            return []
        live, personal = await self._pooled(views)
        if not live:
            return []
        # A message names days to talk about them ("今天好冷"), not to recall them, and shares
        # a character or two with many an unrelated memory: only words find what it injects.
        ranking = await self._rank(text, live, searching=False)
        unrelated = None
        if ranking.similarity:
            unrelated = await self._vectors.unrelated_similarity(ranking.query_vector)
        floor = RelevanceFloor(ranking.coverage, unrelated)
        passing = [
            (entry, score)
            for entry, score in ranking.fused
            if floor.admits(entry.record.id, ranking.similarity.get(entry.record.id))
        ]
        return _best_shown(passing, top_k, safe_only=True, personal=personal)

    async def _visible(self, view: MemoryView) -> list[IndexedMemory]:
        """The live entries of the view's scope that it shows."""
        return [e for e in (await self._index.get(view.scope)).live() if view.shows(e.record)]

    async def _pooled(self, views: Sequence[MemoryView]) -> tuple[list[IndexedMemory], set[str]]:
        """The live entries the views show, as one collection, and the ids of those seen
        through a personal view. Ids of the two kinds differ (see rules.new_id); should a
        row written otherwise repeat one, the first view's entry is the one kept."""
        pooled: dict[str, IndexedMemory] = {}
        personal: set[str] = set()
        for view in views:
            for entry in await self._visible(view):
                if entry.record.id in pooled:
                    continue
                pooled[entry.record.id] = entry
                if view.personal:
                    personal.add(entry.record.id)
        return list(pooled.values()), personal

    async def _rank(
        self, query: str, live: Sequence[IndexedMemory], *, searching: bool = True
    ) -> _Ranking:
        """The live entries ranked for `query`: by keyword alone while there is no query
        vector, else the keyword and vector rankings fused. `searching` (a search, not a
        message read for auto-inject): the days the query names match the memories saved
        on them, and characters shared with a query word find memories too."""
        today = self.clock().astimezone(self.zone).date() if searching else None
        analysed = query_module.analyse(query, today)
        query_vector = await self._vectors.embed_quietly(query, "query")
        if query_vector is None:
            keyword = keyword_ranking(analysed, live, self.zone, characters_find=searching)
            matched = {entry.record.id: 1.0 for entry, _ in keyword}
            return _Ranking(keyword, matched, {}, [])
        keyword, coverage = _keyword_ranking_with_coverage(
            query, analysed, live, self.zone, characters_find=searching
        )
        vector = vector_ranking(query_vector, live)
        by_id = {entry.record.id: entry for entry in live}
        fused = fuse_rankings(
            [(entry.record.id, score) for entry, score in keyword],
            [(entry.record.id, similarity) for entry, similarity in vector],
            coverage,
        )
        return _Ranking(
            fused=[(by_id[memory_id], score) for memory_id, score in fused],
            coverage=coverage,
            similarity={entry.record.id: similarity for entry, similarity in vector},
            query_vector=query_vector,
        )

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
    ) -> SaveOutcome:
        """Save one memory through every rule; never raises for bad content. `private`: a
        personal memory told in its owner's private chat (see personal.py)."""
        prepared = self._prepare_content(content)
        if isinstance(prepared, SaveOutcome):
            return prepared
        text, truncated = prepared
        tag_problem = tags_problem(tags) or injection_reason_for_memory(text, tags or ())
        if tag_problem is not None:
            return SaveOutcome("refused", reason=tag_problem)
        normalized = normalize(text)
        gist = Gist.of(normalized, clean_user_id(user_id))
        embedding: list[float] | None = None
        if self.embedder.enabled:
            # The lock is not held while the embedding server answers; the rules are checked
            # before the call too, so that a duplicate costs no request.
            refusal = self._save_refusal(
                await self._index.get(scope), normalized, gist, self.max_entries_for(scope)
            )
            if refusal is not None:
                return refusal
            embedding = await self._vectors.embed_quietly(text)
        async with self._index.writing(scope) as loaded:
            refusal = self._save_refusal(loaded, normalized, gist, self.max_entries_for(scope))
            if refusal is not None:
                return refusal
            tokens = segmenter.token_set(text)
            subject = people_of(text, clean_user_id(user_id))
            similar = [
                e.record
                for e in loaded.live()
                if segmenter.dice(tokens, e.content_tokens) >= NEAR_DUPLICATE_DICE
                and not different_people(subject, people_of(e.record.content, e.record.user_id))
            ]
            now = self._now_text()
            record = MemoryRecord(
                id=new_id(loaded.ids_in_use(), personal=is_personal_scope(scope)),
                content=text,
                normalized=normalized,
                tags=prepare_tags(tags, mask=self.mask_pii),
                user_id=clean_user_id(user_id),
                embedding=embedding,
                evidence=list(evidence),
                source=source,
                created_at=now,
                updated_at=now,
                private=private,
            )
            await self.store.insert(scope, record)
            loaded.entries[record.id] = IndexedMemory.of(record)
        self._vectors.note_stored(embedding)
        return SaveOutcome("saved", memory=record, similar=similar[:3], truncated=truncated)

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
        key = id_key(memory_id)
        prepared = None if isinstance(content, Missing) else self._prepare_content(content)
        embedding: list[float] | None = None
        if isinstance(prepared, tuple):
            # Embedded before taking the lock, and only when the text really changes.
            current = (await self._index.get(scope)).entries.get(key)
            if current is not None and current.record.content != prepared[0]:
                embedding = await self._vectors.embed_quietly(prepared[0])
        async with self._index.writing(scope) as loaded:
            entry = loaded.entries.get(key)
            if entry is None or entry.record.deleted:
                return UpdateOutcome("not_found")
            if entry.record.private and not include_private:
                return UpdateOutcome("not_found")
            record = entry.record
            changes: dict[str, object] = {}
            truncated = False
            if isinstance(prepared, SaveOutcome):
                status = "empty" if prepared.status == "empty" else "refused"
                return UpdateOutcome(status, memory=record, reason=prepared.reason)
            if prepared is not None:
                text, truncated = prepared
                normalized = normalize(text)
                if normalized != record.normalized:
                    subject = record.user_id if isinstance(user_id, Missing) else user_id
                    gist = Gist.of(normalized, clean_user_id(subject))
                    if loaded.tombstone_for(normalized, gist) is not None:
                        return UpdateOutcome("tombstoned", memory=record)
                    other = loaded.find_live_by_normalized(normalized)
                    if other is not None and other.record.id != record.id:
                        return UpdateOutcome("duplicate", memory=other.record)
                # A case- or width-only edit keeps the normalised form (no dedupe question)
                # but is still the wording asked for.
                if text != record.content:
                    changes.update(content=text, normalized=normalized, embedding=embedding)
            if not isinstance(tags, Missing):
                tag_problem = tags_problem(tags)
                if tag_problem is not None:
                    return UpdateOutcome("refused", memory=record, reason=tag_problem)
                changes["tags"] = prepare_tags(tags, mask=self.mask_pii)
            if not isinstance(user_id, Missing):
                changes["user_id"] = clean_user_id(user_id)
            # Content and tags may each pass alone and steer together on one line.
            new_tags = changes.get("tags", record.tags)
            split_problem = injection_reason_for_memory(
                str(changes.get("content", record.content)),
                new_tags if isinstance(new_tags, list) else record.tags,
            )
            if split_problem is not None:
                return UpdateOutcome("refused", memory=record, reason=split_problem)
            changes = {k: v for k, v in changes.items() if getattr(record, k) != v}
            changed = bool(changes)
            evidence = list(dict.fromkeys([*record.evidence, *add_evidence]))
            if evidence != record.evidence:
                changes["evidence"] = evidence
            if not changes:
                return UpdateOutcome("updated", memory=record, changed=False)
            updated = replace(record, **changes, updated_at=self._now_text())  # type: ignore[arg-type]
            await self.store.update(scope, updated)
            loaded.entries[updated.id] = IndexedMemory.of(updated)
        if "content" in changes:
            self._vectors.note_stored(updated.embedding)
        return UpdateOutcome("updated", memory=updated, truncated=truncated, changed=changed)

    async def forget(
        self, scope: str, memory_id: str, *, by_person: bool, include_private: bool = True
    ) -> MemoryRecord | None:
        """Delete one memory. A person's deletion leaves a tombstone: the same content is
        refused from then on, whoever tries to save it. A private memory is not found
        unless `include_private`."""
        view = MemoryView(scope, include_private)
        deleted = await self._delete(view, [memory_id], by_person=by_person)
        return deleted[0] if deleted else None

    async def clear(self, scope: str, *, include_private: bool = True) -> int:
        """A person deletes every memory of the scope (all tombstoned); private ones only
        if `include_private`."""
        view = MemoryView(scope, include_private)
        ids = [e.record.id for e in await self._visible(view)]
        return len(await self._delete(view, ids, by_person=True))

    async def set_private(self, scope: str, memory_id: str, private: bool) -> MemoryRecord | None:
        """Make a live memory private or public (its owner's choice); None when there is no
        live memory with that id."""
        async with self._index.writing(scope) as loaded:
            entry = loaded.entries.get(id_key(memory_id))
            if entry is None or entry.record.deleted:
                return None
            if entry.record.private == private:
                return entry.record
            changed = replace(entry.record, private=private, updated_at=self._now_text())
            await self.store.set_private(scope, changed.id, private, updated_at=changed.updated_at)
            # The text is the same: its search terms and guard verdict stay.
            entry.record = changed
        return changed

    async def restore(
        self, scope: str, memory_id: str, *, include_private: bool = True
    ) -> MemoryRecord | None:
        """Undo a deletion: lift the tombstone and bring the entry back (None when there is
        no deleted memory with that id, or it was purged, or it is private and not
        `include_private`). Raises MemoryFull when the scope has no room for it."""
        async with self._index.writing(scope) as loaded:
            entry = loaded.entries.get(id_key(memory_id))
            if entry is None or not entry.record.deleted:
                return None
            record = entry.record
            if record.private and not include_private:
                return None
            cap = self.max_entries_for(scope)
            if len(loaded.live()) >= cap and not loaded.find_live_by_normalized(record.normalized):
                raise MemoryFull(cap)
            twin = loaded.find_live_by_normalized(record.normalized)
            if twin is not None:
                # The same content was saved again meanwhile: lift the tombstone, keep one copy.
                await self.store.lift_tombstone(scope, record.normalized)
                loaded.tombstones.pop(record.normalized, None)
                return twin.record
            if not await self.store.restore(scope, record.id, record.normalized):
                loaded.entries.pop(record.id, None)  # purged after this index was loaded
                return None
            restored = replace(record, deleted_at=None, updated_at=self._now_text())
            loaded.entries[record.id] = IndexedMemory.of(restored)
            loaded.tombstones.pop(record.normalized, None)
        return restored

    async def was_purged(self, scope: str, memory_id: str) -> bool:
        """Whether a person deleted this memory so long ago that only its tombstone is left."""
        loaded = await self._index.get(scope)
        key = id_key(memory_id)
        if key in loaded.entries:
            return False
        return any(t.memory_id == key for t in loaded.tombstones.values())

    async def purge_deleted(self, now: datetime | None = None) -> int:
        """Delete for good the memories deleted more than `PURGE_DELETED_AFTER_DAYS` ago, in
        every scope; their tombstones stay. Returns how many were purged."""
        moment = now or datetime.now(timezone.utc)
        cutoff = utc_text(moment - timedelta(days=PURGE_DELETED_AFTER_DAYS))
        purged = await self.store.purge_deleted(cutoff)
        self._index.drop(purged)
        if purged:
            logger.info(
                "memory purge removed %d memories deleted over %d days ago",
                len(purged),
                PURGE_DELETED_AFTER_DAYS,
            )
        return len(purged)

    async def backfill_embeddings(self, batch_size: int = 32) -> int:
        """Compute vectors for memories stored without one (saved before embeddings were
        configured, or while the server was down), until none is left or the embedding
        server fails: keyword search keeps working meanwhile, and the next successful
        embedding call starts the backfill again."""
        return await self._vectors.backfill(batch_size)

    async def close(self) -> None:
        """Stop a backfill started after the embedding server recovered: it may have many
        batches to go, and whatever it has not filled is filled after the next start."""
        await self._vectors.close()

    def _prepare_content(self, content: str) -> tuple[str, bool] | SaveOutcome:
        raw = encodable(str(content or ""))
        text = fold_whitespace(raw)
        if not text:
            return SaveOutcome("empty", reason="内容为空")
        # Checked before folding: a heading like "### System" is only one at a line start.
        reason = injection_reason(raw)
        if reason is not None:
            return SaveOutcome("refused", reason=reason)
        if self.mask_pii:
            text = mask_pii(text)
        truncated = len(text) > MAX_CONTENT_CHARS
        return (text[:MAX_CONTENT_CHARS], truncated)

    def _save_refusal(
        self, loaded: LoadedScope, normalized: str, gist: Gist, cap: int
    ) -> SaveOutcome | None:
        """Why this content (its normalised form and gist) may not be saved now to the
        scope, which holds at most `cap` memories (None if it may)."""
        tombstone = loaded.tombstone_for(normalized, gist)
        if tombstone is not None:
            return SaveOutcome("tombstoned", memory=None, reason=tombstone.memory_id)
        existing = loaded.find_live_by_normalized(normalized)
        if existing is not None:
            return SaveOutcome("duplicate", memory=existing.record)
        if len(loaded.live()) >= cap:
            return SaveOutcome("full")
        return None

    async def _delete(
        self, view: MemoryView, memory_ids: Sequence[str], *, by_person: bool
    ) -> list[MemoryRecord]:
        scope = view.scope
        async with self._index.writing(scope) as loaded:
            targets = []
            for raw_id in memory_ids:
                entry = loaded.entries.get(id_key(raw_id))
                if entry is not None and not entry.record.deleted and view.shows(entry.record):
                    targets.append(entry.record)
            if not targets:
                return []
            await self.store.mark_deleted(scope, [r.id for r in targets], tombstone=by_person)
            now = self._now_text()
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


@dataclass(frozen=True, slots=True)
class _Ranking:
    """One query's ranking of a scope (best first), and by memory id: each keyword match's
    coverage (see fusion.py; 1.0 without vectors) and each cosine (memories with a vector
    of the query's model only)."""

    fused: list[tuple[IndexedMemory, float]]
    coverage: dict[str, float]
    similarity: dict[str, float]
    query_vector: list[float]


def _keyword_ranking_with_coverage(
    text: str,
    query: Query,
    live: Sequence[IndexedMemory],
    zone: tzinfo,
    *,
    characters_find: bool,
) -> tuple[list[tuple[IndexedMemory, float]], dict[str, float]]:
    """The keyword ranking, and each match's coverage: its score over the score of the
    query itself ranked as one more text of the scope, saved on the first day it names (the
    most a memory can match it; tags weigh more, so a tag match may reach it: capped at
    1)."""
    saved = ""
    if query.periods:
        noon = datetime.combine(query.periods[0].first, time(12), zone)
        saved = utc_text(noon)
    probe = IndexedMemory.of(MemoryRecord(id="", content=text, normalized="", created_at=saved))
    ranked = keyword_ranking(query, [*live, probe], zone, characters_find=characters_find)
    most = next((score for entry, score in ranked if entry is probe), 0.0)
    keyword = [(entry, score) for entry, score in ranked if entry is not probe]
    coverage = {
        entry.record.id: min(1.0, score / most) if most > 0 else 1.0 for entry, score in keyword
    }
    return keyword, coverage


def _best_shown(
    ranked: Sequence[tuple[IndexedMemory, float]],
    limit: int,
    *,
    safe_only: bool,
    personal: Container[str] = (),
) -> list[SearchHit]:
    """The first `limit` of a best-first ranking, without unsafe entries if `safe_only`
    (checked only as far down as needed); hits whose id is in `personal` marked so."""
    shown = (
        SearchHit(entry.record, score, entry.record.id in personal)
        for entry, score in ranked
        if not safe_only or entry.safe
    )
    return list(itertools.islice(shown, limit))
