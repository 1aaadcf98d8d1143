"""Scoped long-term memory: the rules every write goes through (normalise, guard, mask,
dedupe, tombstones, cap) and keyword/semantic search. A scope is `g:<group>` or
`f:<user>`; nothing here ever reads or writes outside the scope it is given."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import re
import secrets
import unicodedata
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Literal

from ..engine.embeddings import EmbeddingClient, cosine
from ..engine.llm import LLMError
from ..store.database import utc_now_text
from ..store.memory_store import MemoryRecord, MemoryStore
from ..text import segmenter
from .guard import injection_reason, mask_pii

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_CONTENT_CHARS = 2000
MAX_TAGS = 8
MAX_TAG_CHARS = 20
NEAR_DUPLICATE_DICE = 0.55
SEMANTIC_FLOOR = 0.35
TAG_HIT_WEIGHT = 2.0
ID_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
ID_LENGTH = 4
MAX_CACHED_SCOPES = 64
Source = Literal["tool", "command", "extract", "review"]


class MemoryFull(Exception):
    """The scope already holds `max_entries` memories."""


class Missing:
    """Marks an update field the caller did not give (keep the stored value)."""


MISSING = Missing()


def fold_whitespace(text: str) -> str:
    """Collapse runs of whitespace into single spaces and trim the ends."""
    return " ".join(text.split())


def normalize(text: str) -> str:
    """The form compared for exact duplicates and tombstones."""
    return fold_whitespace(unicodedata.normalize("NFKC", text)).casefold()


def clean_tags(tags: Sequence[object] | None) -> list[str]:
    """Tags as distinct, trimmed, length-capped strings, at most `MAX_TAGS`."""
    result: list[str] = []
    for tag in tags or ():
        text = fold_whitespace(str(tag))[:MAX_TAG_CHARS]
        if text and text not in result:
            result.append(text)
    return result[:MAX_TAGS]


@dataclass(slots=True)
class _Entry:
    """A memory with its search tokens, as kept in a scope's in-memory index."""

    record: MemoryRecord
    content_tokens: frozenset[str]
    tag_tokens: frozenset[str]
    _safe: bool | None = None

    @classmethod
    def of(cls, record: MemoryRecord) -> _Entry:
        """Index a record: token sets of its content and of its tags."""
        tag_tokens = {t.lower() for t in record.tags}
        for tag in record.tags:
            tag_tokens |= segmenter.token_set(tag)
        return cls(record, segmenter.token_set(record.content), frozenset(tag_tokens))

    @property
    def safe(self) -> bool:
        """Whether the memory may be shown to the model (checked once: entries are
        re-indexed whenever their record changes)."""
        if self._safe is None:
            self._safe = is_safe_to_show(self.record)
        return self._safe


@dataclass(slots=True)
class _Scope:
    entries: dict[str, _Entry]
    tombstones: dict[str, str]

    def live(self) -> list[_Entry]:
        """Entries not deleted."""
        return [e for e in self.entries.values() if not e.record.deleted]

    def find_live_by_normalized(self, normalized: str) -> _Entry | None:
        """The live entry with this normalised content, if any."""
        for entry in self.entries.values():
            if not entry.record.deleted and entry.record.normalized == normalized:
                return entry
        return None


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
    """A search result with its relevance score."""

    memory: MemoryRecord
    score: float


class MemoryService:
    """Long-term memories of every scope, loaded per scope on demand."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        max_entries: int = 200,
        mask_pii: bool = True,
        embedder: EmbeddingClient | None = None,
    ) -> None:
        self.store = store
        self.max_entries = max_entries
        self.mask_pii = mask_pii
        self.embedder = embedder
        self._scopes: OrderedDict[str, _Scope] = OrderedDict()
        self._loading: dict[str, asyncio.Future[_Scope]] = {}
        # Write locks live apart from the cache so that evicting a scope never gives it a
        # second lock; `_lock_users` counts holders and waiters, and a scope with any is
        # never evicted (its writer's index must stay the cached one).
        self._locks: dict[str, asyncio.Lock] = {}
        self._lock_users: Counter[str] = Counter()
        # Set when a memory was stored without a vector while embeddings are configured: the
        # next successful embedding call starts a backfill for it.
        self._vectors_missing = False
        self._backfilling = False
        self._background: set[asyncio.Task[int]] = set()

    # ----------------------------------------------------------------- reading

    async def list(self, scope: str) -> list[MemoryRecord]:
        """Live memories, newest first."""
        loaded = await self._scope(scope)
        records = [e.record for e in loaded.live()]
        return sorted(records, key=lambda r: (r.updated_at, r.id), reverse=True)

    async def count(self, scope: str) -> int:
        """How many live memories the scope holds."""
        return len((await self._scope(scope)).live())

    async def get(self, scope: str, memory_id: str) -> MemoryRecord | None:
        """A live memory by id (`#` and case ignored), or None."""
        entry = (await self._scope(scope)).entries.get(_id_key(memory_id))
        return entry.record if entry is not None and not entry.record.deleted else None

    async def search(
        self, scope: str, query: str | None, limit: int = 10, *, safe_only: bool = False
    ) -> list[SearchHit]:
        """Without a query: everything, newest first. With one: keyword score (tags weigh
        more than content) plus a semantic score when embeddings are configured.
        `safe_only` leaves out memories that fail the injection guard."""
        live = (await self._scope(scope)).live()
        # The guard runs only on entries about to be returned (and once per entry).
        if not query or not query.strip():
            live.sort(key=lambda e: (e.record.updated_at, e.record.id), reverse=True)
            shown = (e for e in live if not safe_only or e.safe)
            return [SearchHit(e.record, 0.0) for e in itertools.islice(shown, limit)]
        if not live:
            return []  # the common case of a new chat: no tokenising, no embedding call
        query_tokens = segmenter.token_set(query)
        query_vector = await self._embed_quietly(query)
        hits: list[SearchHit] = []
        for entry in live:
            score = _keyword_score(query_tokens, entry)
            if query_vector is not None and entry.record.embedding:
                similarity = cosine(query_vector, entry.record.embedding)
                if similarity > SEMANTIC_FLOOR:
                    score += (similarity - SEMANTIC_FLOOR) / (1 - SEMANTIC_FLOOR)
            if score > 0 and (not safe_only or entry.safe):
                hits.append(SearchHit(entry.record, score))
        return heapq.nlargest(limit, hits, key=lambda h: (h.score, h.memory.updated_at))

    async def relevant(self, scope: str, text: str, top_k: int) -> list[MemoryRecord]:
        """The memories most relevant to `text` that are safe to show the model."""
        if not text.strip():
            return []
        return [h.memory for h in await self.search(scope, text, top_k, safe_only=True)]

    # ----------------------------------------------------------------- writing

    async def save(
        self,
        scope: str,
        content: str,
        *,
        tags: Sequence[object] | None = None,
        user_id: str | None = None,
        source: Source = "tool",
        evidence: Sequence[int] = (),
    ) -> SaveOutcome:
        """Save one memory through every rule; never raises for bad content."""
        prepared = self._prepare_content(content)
        if isinstance(prepared, SaveOutcome):
            return prepared
        text, truncated = prepared
        tag_problem = _tags_problem(tags)
        if tag_problem is not None:
            return SaveOutcome("refused", reason=tag_problem)
        normalized = normalize(text)
        embedding: list[float] | None = None
        if self.embedder is not None:
            # The lock is not held while the embedding server answers; the rules are checked
            # before the call too, so that a duplicate costs no request.
            refusal = self._save_refusal(await self._scope(scope), normalized)
            if refusal is not None:
                return refusal
            embedding = await self._embed_quietly(text)
        async with self._writing(scope) as loaded:
            refusal = self._save_refusal(loaded, normalized)
            if refusal is not None:
                return refusal
            tokens = segmenter.token_set(text)
            subject = _people_of(text, clean_user_id(user_id))
            similar = [
                e.record
                for e in loaded.live()
                if segmenter.dice(tokens, e.content_tokens) >= NEAR_DUPLICATE_DICE
                and not _different_people(subject, _people_of(e.record.content, e.record.user_id))
            ]
            now = utc_now_text()
            record = MemoryRecord(
                id=self._new_id(loaded),
                content=text,
                normalized=normalized,
                tags=self._prepare_tags(tags),
                user_id=clean_user_id(user_id),
                embedding=embedding,
                evidence=list(evidence),
                source=source,
                created_at=now,
                updated_at=now,
            )
            await self.store.insert(scope, record)
            loaded.entries[record.id] = _Entry.of(record)
        self._note_vector(embedding)
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
    ) -> UpdateOutcome:
        """Change a memory; omitted fields keep their value, empty tags/user_id clear them.
        `add_evidence` appends chat-log row ids the change was based on."""
        key = _id_key(memory_id)
        prepared = None if isinstance(content, Missing) else self._prepare_content(content)
        embedding: list[float] | None = None
        if isinstance(prepared, tuple):
            # Embedded before taking the lock, and only when the text really changes.
            current = (await self._scope(scope)).entries.get(key)
            if current is not None and current.record.content != prepared[0]:
                embedding = await self._embed_quietly(prepared[0])
        async with self._writing(scope) as loaded:
            entry = loaded.entries.get(key)
            if entry is None or entry.record.deleted:
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
                    if normalized in loaded.tombstones:
                        return UpdateOutcome("tombstoned", memory=record)
                    other = loaded.find_live_by_normalized(normalized)
                    if other is not None and other.record.id != record.id:
                        return UpdateOutcome("duplicate", memory=other.record)
                # A case- or width-only edit keeps the normalised form (no dedupe question)
                # but is still the wording asked for.
                if text != record.content:
                    changes.update(content=text, normalized=normalized, embedding=embedding)
            if not isinstance(tags, Missing):
                tag_problem = _tags_problem(tags)
                if tag_problem is not None:
                    return UpdateOutcome("refused", memory=record, reason=tag_problem)
                changes["tags"] = self._prepare_tags(tags)
            if not isinstance(user_id, Missing):
                changes["user_id"] = clean_user_id(user_id)
            changes = {k: v for k, v in changes.items() if getattr(record, k) != v}
            changed = bool(changes)
            evidence = list(dict.fromkeys([*record.evidence, *add_evidence]))
            if evidence != record.evidence:
                changes["evidence"] = evidence
            if not changes:
                return UpdateOutcome("updated", memory=record, changed=False)
            updated = replace(record, **changes, updated_at=utc_now_text())  # type: ignore[arg-type]
            await self.store.update(scope, updated)
            loaded.entries[updated.id] = _Entry.of(updated)
        if "content" in changes:
            self._note_vector(updated.embedding)
        return UpdateOutcome("updated", memory=updated, truncated=truncated, changed=changed)

    async def forget(self, scope: str, memory_id: str, *, by_person: bool) -> MemoryRecord | None:
        """Delete one memory. A person's deletion leaves a tombstone: the same content is
        refused from then on, whoever tries to save it."""
        deleted = await self._delete(scope, [memory_id], by_person=by_person)
        return deleted[0] if deleted else None

    async def clear(self, scope: str) -> int:
        """A person deletes every memory of the scope (all tombstoned)."""
        loaded = await self._scope(scope)
        ids = [e.record.id for e in loaded.live()]
        return len(await self._delete(scope, ids, by_person=True))

    async def restore(self, scope: str, memory_id: str) -> MemoryRecord | None:
        """Undo a deletion: lift the tombstone and bring the entry back. Raises MemoryFull
        when the scope has no room for it."""
        async with self._writing(scope) as loaded:
            entry = loaded.entries.get(_id_key(memory_id))
            if entry is None or not entry.record.deleted:
                return None
            record = entry.record
            if len(loaded.live()) >= self.max_entries and not loaded.find_live_by_normalized(
                record.normalized
            ):
                raise MemoryFull(self.max_entries)
            twin = loaded.find_live_by_normalized(record.normalized)
            if twin is not None:
                # The same content was saved again meanwhile: lift the tombstone, keep one copy.
                await self.store.lift_tombstone(scope, record.normalized)
                loaded.tombstones.pop(record.normalized, None)
                return twin.record
            await self.store.restore(scope, record.id, record.normalized)
            restored = replace(record, deleted_at=None, updated_at=utc_now_text())
            loaded.entries[record.id] = _Entry.of(restored)
            loaded.tombstones.pop(record.normalized, None)
        return restored

    async def backfill_embeddings(self, batch_size: int = 32) -> int:
        """Compute vectors for memories stored without one (saved before embeddings were
        configured, or while the server was down), until none is left or the embedding
        server fails: keyword search keeps working meanwhile, and the next successful
        embedding call starts the backfill again."""
        if self.embedder is None:
            return 0
        self._backfilling = True
        self._vectors_missing = False
        filled = 0
        try:
            while True:
                missing = await self.store.missing_embeddings(limit=batch_size * 8)
                done_this_round = 0
                for scope, ids_and_texts in missing:
                    for start in range(0, len(ids_and_texts), batch_size):
                        batch = ids_and_texts[start : start + batch_size]
                        try:
                            vectors = await self.embedder.embed([text for _, text in batch])
                        except LLMError as exc:
                            logger.info("embedding backfill stopped: %s", exc)
                            self._vectors_missing = True
                            return filled
                        done_this_round += await self._store_vectors(scope, batch, vectors)
                filled += done_this_round
                if not missing or done_this_round == 0:
                    return filled
        finally:
            self._backfilling = False

    async def close(self) -> None:
        """Stop a backfill started after the embedding server recovered: it may have many
        batches to go, and whatever it has not filled is filled after the next start."""
        for task in self._background:
            task.cancel()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    async def _store_vectors(
        self, scope: str, batch: list[tuple[str, str]], vectors: list[list[float]]
    ) -> int:
        """Write backfilled vectors, skipping entries whose content changed meanwhile."""
        async with self._writing(scope) as loaded:
            fresh: dict[str, list[float]] = {}
            for (memory_id, text), vector in zip(batch, vectors, strict=True):
                entry = loaded.entries.get(memory_id)
                if entry is not None and entry.record.content == text:
                    fresh[memory_id] = vector
                    entry.record = replace(entry.record, embedding=vector)
            if fresh:
                await self.store.set_embeddings(scope, fresh)
        return len(fresh)

    # ----------------------------------------------------------------- internals

    def _prepare_content(self, content: str) -> tuple[str, bool] | SaveOutcome:
        raw = str(content or "")
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

    def _prepare_tags(self, tags: Sequence[object] | None) -> list[str]:
        # Masked before `clean_tags` cuts them short: a cut would leave a partial number.
        if self.mask_pii:
            tags = [mask_pii(fold_whitespace(str(tag))) for tag in tags or ()]
        return clean_tags(tags)

    def _save_refusal(self, loaded: _Scope, normalized: str) -> SaveOutcome | None:
        """Why this content may not be saved to the scope now (None if it may)."""
        if normalized in loaded.tombstones:
            return SaveOutcome("tombstoned", memory=None, reason=loaded.tombstones[normalized])
        existing = loaded.find_live_by_normalized(normalized)
        if existing is not None:
            return SaveOutcome("duplicate", memory=existing.record)
        if len(loaded.live()) >= self.max_entries:
            return SaveOutcome("full")
        return None

    async def _delete(
        self, scope: str, memory_ids: Sequence[str], *, by_person: bool
    ) -> list[MemoryRecord]:
        async with self._writing(scope) as loaded:
            targets = []
            for raw_id in memory_ids:
                entry = loaded.entries.get(_id_key(raw_id))
                if entry is not None and not entry.record.deleted:
                    targets.append(entry.record)
            if not targets:
                return []
            await self.store.mark_deleted(scope, [r.id for r in targets], tombstone=by_person)
            now = utc_now_text()
            deleted = []
            for record in targets:
                gone = replace(record, deleted_at=now, updated_at=now)
                loaded.entries[record.id] = _Entry.of(gone)
                if by_person:
                    loaded.tombstones[record.normalized] = record.id
                deleted.append(gone)
        return deleted

    def _new_id(self, loaded: _Scope) -> str:
        length = ID_LENGTH
        for attempt in range(64):
            if attempt and attempt % 16 == 0:
                length += 1
            candidate = "".join(secrets.choice(ID_ALPHABET) for _ in range(length))
            if candidate not in loaded.entries:
                return candidate
        raise RuntimeError("could not allocate a memory id")

    async def _embed_quietly(self, text: str) -> list[float] | None:
        if self.embedder is None:
            return None
        try:
            vector = (await self.embedder.embed([text]))[0]
        except LLMError as exc:
            if exc.kind == "paused":
                logger.debug("embedding paused, keyword search only: %s", exc)
            else:
                logger.info("embedding unavailable, keyword search only: %s", exc)
            return None
        self._resume_backfill()
        return vector

    def _note_vector(self, embedding: list[float] | None) -> None:
        """Remember that a memory was stored without a vector, to backfill it later."""
        if embedding is None and self.embedder is not None:
            self._vectors_missing = True

    def _resume_backfill(self) -> None:
        """The embedding server answers again: fill in what was stored while it did not."""
        if not self._vectors_missing or self._backfilling:
            return
        self._backfilling = True  # until the task starts: one backfill at a time
        task = asyncio.ensure_future(self._backfill_in_background())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _backfill_in_background(self) -> int:
        try:
            return await self.backfill_embeddings()
        except Exception:
            # Nobody awaits this task: log here (database closed at shutdown, disk full...).
            logger.exception("embedding backfill failed; keyword search still works")
            self._vectors_missing = True
            return 0

    @asynccontextmanager
    async def _writing(self, scope: str) -> AsyncIterator[_Scope]:
        """Hold the scope's write lock and yield its index, loaded (or reloaded) under it."""
        lock = self._locks.get(scope)
        if lock is None:
            lock = self._locks[scope] = asyncio.Lock()
        self._lock_users[scope] += 1
        try:
            async with lock:
                yield await self._scope(scope)
        finally:
            self._lock_users[scope] -= 1
            if not self._lock_users[scope]:
                del self._lock_users[scope]
                del self._locks[scope]

    async def _scope(self, scope: str) -> _Scope:
        cached = self._scopes.get(scope)
        if cached is not None:
            self._scopes.move_to_end(scope)
            return cached
        pending = self._loading.get(scope)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[_Scope] = asyncio.get_running_loop().create_future()
        self._loading[scope] = future
        try:
            records = await self.store.load_scope(scope)
            tombstones = await self.store.load_tombstones(scope)
            # Tokenising thousands of entries takes long enough to stall every chat: off-loop.
            entries = await asyncio.to_thread(lambda: {r.id: _Entry.of(r) for r in records})
            loaded = _Scope(entries, tombstones)
            self._remember_scope(scope, loaded)
            future.set_result(loaded)
            return loaded
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiting callers re-raise it
            raise
        finally:
            del self._loading[scope]

    def _remember_scope(self, scope: str, loaded: _Scope) -> None:
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


_QQ_NUMBER = re.compile(r"[0-9]{1,20}")
_QQ_IN_TEXT = re.compile(r"[(（](\d{5,11})[)）]")


def _people_of(content: str, user_id: str | None) -> frozenset[str]:
    """The QQ numbers a memory is about: its user_id, else the `昵称(QQ号)` in its text."""
    if user_id:
        return frozenset((user_id,))
    return frozenset(_QQ_IN_TEXT.findall(content))


def _different_people(one: frozenset[str], other: frozenset[str]) -> bool:
    """Same-shaped facts about different people ("小明(1)爱吃辣" / "阿强(2)爱吃辣") are not
    duplicates to merge."""
    return bool(one) and bool(other) and not one & other


def _id_key(memory_id: str) -> str:
    """How ids are looked up: `#ab3d`, `AB3D` and ` ab3d ` are the same id."""
    return memory_id.strip().lstrip("#").lower()


def _keyword_score(query_tokens: frozenset[str], entry: _Entry) -> float:
    if not query_tokens:
        return 0.0
    content_hits = len(query_tokens & entry.content_tokens)
    tag_hits = len(query_tokens & entry.tag_tokens)
    return (content_hits + TAG_HIT_WEIGHT * tag_hits) / len(query_tokens)


def clean_user_id(user_id: object) -> str | None:
    """A QQ number (full-width digits accepted), or nothing: free text here would be one
    more way into the prompt."""
    if user_id is None:
        return None
    text = unicodedata.normalize("NFKC", str(user_id)).strip()
    return text if _QQ_NUMBER.fullmatch(text) else None


def _tags_problem(tags: object) -> str | None:
    if isinstance(tags, Missing) or not tags:
        return None
    for tag in tags if isinstance(tags, list | tuple) else [tags]:
        reason = injection_reason(str(tag))
        if reason is not None:
            return f"标签{reason}"
    return None


def is_safe_to_show(record: MemoryRecord) -> bool:
    """Never show the model a memory that looks like steering (in its content or tags)."""
    fields = [record.content, *record.tags, record.user_id or ""]
    return all(injection_reason(text) is None for text in fields)
