"""The write side of memories: saving and changing one through every rule (normalise,
guard, mask, dedupe, tombstones, cap), and making one private or public. Deleting and
restoring are in deletions.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from .. import texts
from ..guard import injection_reason, injection_reason_for_memory, mask_pii
from ..store import MemoryRecord, MemoryStore, Provenance, utc_text
from ..text import encodable, is_question
from .gist import Gist
from .index import IndexedMemory, LoadedScope, ScopeIndex
from .overlap import adds_nothing, near_duplicates, parts_quoted_by
from .personal import is_personal_scope
from .rules import (
    MAX_CONTENT_CHARS,
    Missing,
    clean_user_id,
    fold_whitespace,
    id_key,
    new_id,
    normalize,
    prepare_tags,
    tags_problem,
)
from .shared_guard import CheckQuestion, SharedScopeGuard, last_note
from .vectors import MemoryVectors

Source = Literal["tool", "command", "extract", "review"]


@dataclass(frozen=True, slots=True)
class WriteContext:
    """What a write works on: the store, the scopes' index and vectors, whether personal
    data is masked, and the clock that stamps it."""

    store: MemoryStore
    index: ScopeIndex
    vectors: MemoryVectors
    mask_pii: bool
    clock: Callable[[], datetime]
    guard: SharedScopeGuard = field(default_factory=SharedScopeGuard)

    def now_text(self) -> str:
        """The clock's now, as stored."""
        return utc_text(self.clock())


@dataclass(slots=True)
class SaveOutcome:
    """What a save did; `status` says which branch the rules took."""

    status: Literal["saved", "duplicate", "tombstoned", "refused", "full", "empty"]
    memory: MemoryRecord | None = None
    similar: list[MemoryRecord] = field(default_factory=list)
    truncated: bool = False
    reason: str = ""
    # A note a member's turn saved whose model check runs after the turn (shared_guard.py).
    later: CheckQuestion | None = None


@dataclass(slots=True)
class UpdateOutcome:
    """What an update did; `status` says which branch the rules took."""

    status: Literal["updated", "not_found", "refused", "tombstoned", "duplicate", "empty"]
    memory: MemoryRecord | None = None
    truncated: bool = False
    reason: str = ""
    # False when content, tags and user_id were already as asked (evidence may still grow).
    changed: bool = True


async def save(
    ctx: WriteContext,
    scope: str,
    content: str,
    *,
    cap: int,
    tags: Sequence[object] | None,
    user_id: str | None,
    source: Source,
    evidence: Sequence[int],
    private: bool,
    provenance: Provenance,
) -> SaveOutcome:
    """Save one memory through every rule to a scope holding at most `cap`; never raises."""
    prepared = prepare_content(content, mask=ctx.mask_pii)
    if isinstance(prepared, SaveOutcome):
        return prepared
    text, truncated = prepared
    problem = await _steering_problem(
        ctx, scope, text, tags or (), private=private, author_id=provenance.author_id, source=source
    )
    if isinstance(problem, str):
        return SaveOutcome("refused", reason=problem)
    normalized = normalize(text)
    gist = Gist.of(normalized, clean_user_id(user_id))
    embedding = await _embedding_unless_refused(ctx, scope, text, normalized, gist, cap)
    if isinstance(embedding, SaveOutcome):
        return embedding
    async with ctx.index.writing(scope) as loaded:
        if (refusal := save_refusal(loaded, normalized, gist, cap)) is not None:
            return refusal
        similar = near_duplicates(loaded, text, user_id)
        if (same := adds_nothing(loaded, similar, text, source)) is not None:
            return SaveOutcome("duplicate", memory=same)
        now = ctx.now_text()
        record = MemoryRecord(
            id=new_id(loaded.ids_in_use(), personal=is_personal_scope(scope)),
            content=text,
            normalized=normalized,
            tags=prepare_tags(tags, mask=ctx.mask_pii),
            user_id=clean_user_id(user_id),
            embedding=embedding,
            evidence=list(evidence),
            source=source,
            created_at=now,
            updated_at=now,
            private=private,
            provenance=provenance,
        )
        stored = await ctx.store.insert(scope, record, cap=cap)
        if stored != "inserted":
            # Another process wrote to the scope meanwhile (PostgreSQL): the database's
            # rules held; this index is reloaded on the next read.
            ctx.index.forget(scope)
            return SaveOutcome(stored)
        loaded.entries[record.id] = IndexedMemory.of(record)
        await _retire_parts(ctx, scope, loaded, text, source)
    ctx.vectors.note_stored(embedding)
    shown = [e.record for e in similar[:3]]
    return SaveOutcome("saved", memory=record, similar=shown, truncated=truncated, later=problem)


async def _retire_parts(
    ctx: WriteContext, scope: str, loaded: LoadedScope, text: str, source: Source
) -> None:
    """Delete the background notes `parts_quoted_by` names; without a tombstone: nobody
    asked to forget them."""
    parts = parts_quoted_by(loaded, text, source)
    if not parts:
        return
    await ctx.store.mark_deleted(scope, [record.id for record in parts], tombstone=False)
    now = ctx.now_text()
    for record in parts:
        gone = replace(record, deleted_at=now, updated_at=now)
        loaded.entries[record.id] = IndexedMemory.of(gone)


async def _embedding_unless_refused(
    ctx: WriteContext, scope: str, text: str, normalized: str, gist: Gist, cap: int
) -> list[float] | SaveOutcome | None:
    """The text's embedding (None without an embedder), or why it may not be saved: the
    lock is not held while the embedding server answers, so the rules are checked before
    the call too, and a duplicate costs no request."""
    if not ctx.vectors.embedder.enabled:
        return None
    refusal = save_refusal(await ctx.index.get(scope), normalized, gist, cap)
    return refusal if refusal is not None else await ctx.vectors.embed_quietly(text)


async def _steering_problem(
    ctx: WriteContext,
    scope: str,
    text: str,
    tags: Sequence[object],
    *,
    private: bool,
    author_id: str | None,
    source: Source,
) -> str | CheckQuestion | None:
    """Why a new memory that `author_id` has saved steers the bot: by the rules (its tags,
    its line), then, for a scope other people are shown, read after the scope's last note
    and by the model check; or that check, to run after the member's turn that saves it
    (source "tool") where the guard says so."""
    problem = tags_problem(tags) or injection_reason_for_memory(text, tags)
    if problem is not None:
        return problem
    earlier = last_note(await ctx.index.get(scope), ctx.clock())
    return await ctx.guard.refusal_or_later(
        scope,
        text,
        tags,
        private=private,
        earlier=earlier,
        author_id=author_id,
        in_turn=source == "tool",
    )


def prepare_content(content: str, *, mask: bool) -> tuple[str, bool] | SaveOutcome:
    """The content as it would be stored (folded, masked if `mask`, cut to
    MAX_CONTENT_CHARS) and whether it was cut, or why it may not be stored at all."""
    raw = encodable(str(content or ""))
    text = fold_whitespace(raw)
    if not text:
        return SaveOutcome("empty", reason="内容为空")
    # Checked before folding: a heading like "### System" is only one at a line start.
    reason = injection_reason(raw)
    if reason is not None:
        return SaveOutcome("refused", reason=reason)
    if is_question(text):
        return SaveOutcome("refused", reason=texts.QUESTION_NOT_SAVED)
    if mask:
        text = mask_pii(text)
    truncated = len(text) > MAX_CONTENT_CHARS
    return (text[:MAX_CONTENT_CHARS], truncated)


def save_refusal(loaded: LoadedScope, normalized: str, gist: Gist, cap: int) -> SaveOutcome | None:
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


async def update(
    ctx: WriteContext,
    scope: str,
    memory_id: str,
    *,
    content: str | Missing,
    tags: Sequence[object] | Missing | None,
    user_id: str | Missing | None,
    add_evidence: Sequence[int],
    include_private: bool,
) -> UpdateOutcome:
    """Change a memory; omitted (`Missing`) fields keep their value, empty tags/user_id
    clear them, `add_evidence` grows its evidence."""
    key = id_key(memory_id)
    prepared = None if isinstance(content, Missing) else prepare_content(content, mask=ctx.mask_pii)
    embedding: list[float] | None = None
    if isinstance(prepared, tuple):
        # Embedded before taking the lock, and only when the text really changes.
        current = (await ctx.index.get(scope)).entries.get(key)
        if current is not None and current.record.content != prepared[0]:
            record = current.record
            shown_tags = record.tags if isinstance(tags, Missing) else tags or ()
            refusal = await ctx.guard.refusal(
                scope, prepared[0], shown_tags, private=record.private
            )
            if refusal is not None:
                return UpdateOutcome("refused", memory=record, reason=refusal)
            embedding = await ctx.vectors.embed_quietly(prepared[0])
    async with ctx.index.writing(scope) as loaded:
        entry = loaded.entries.get(key)
        if entry is None or entry.record.deleted:
            return UpdateOutcome("not_found")
        if entry.record.private and not include_private:
            return UpdateOutcome("not_found")
        record = entry.record
        asked = _asked_changes(
            loaded, record, prepared, tags, user_id, embedding=embedding, mask=ctx.mask_pii
        )
        if isinstance(asked, UpdateOutcome):
            return asked
        changes, truncated = asked
        changed = bool(changes)
        evidence = list(dict.fromkeys([*record.evidence, *add_evidence]))
        if evidence != record.evidence:
            changes["evidence"] = evidence
        if not changes:
            return UpdateOutcome("updated", memory=record, changed=False)
        updated = replace(record, **changes, updated_at=ctx.now_text())  # type: ignore[arg-type]
        stored = await ctx.store.update(scope, updated)
        if stored != "updated":
            ctx.index.forget(scope)  # another process's write: see `save`
            return UpdateOutcome("not_found" if stored == "missing" else stored)
        loaded.entries[updated.id] = IndexedMemory.of(updated)
    if "content" in changes:
        ctx.vectors.note_stored(updated.embedding)
    return UpdateOutcome("updated", memory=updated, truncated=truncated, changed=changed)


def _asked_changes(
    loaded: LoadedScope,
    record: MemoryRecord,
    prepared: tuple[str, bool] | SaveOutcome | None,
    tags: Sequence[object] | Missing | None,
    user_id: str | Missing | None,
    *,
    embedding: list[float] | None,
    mask: bool,
) -> tuple[dict[str, object], bool] | UpdateOutcome:
    """The fields of `record` an update really changes (and whether its content was cut),
    or the outcome that refuses it."""
    changes: dict[str, object] = {}
    truncated = False
    if isinstance(prepared, SaveOutcome):
        status = "empty" if prepared.status == "empty" else "refused"
        return UpdateOutcome(status, memory=record, reason=prepared.reason)
    if prepared is not None:
        text, truncated = prepared
        content_changes = _content_changes(loaded, record, text, user_id, embedding)
        if isinstance(content_changes, UpdateOutcome):
            return content_changes
        changes.update(content_changes)
    if not isinstance(tags, Missing):
        tag_problem = tags_problem(tags)
        if tag_problem is not None:
            return UpdateOutcome("refused", memory=record, reason=tag_problem)
        changes["tags"] = prepare_tags(tags, mask=mask)
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
    return {k: v for k, v in changes.items() if getattr(record, k) != v}, truncated


def _content_changes(
    loaded: LoadedScope,
    record: MemoryRecord,
    text: str,
    user_id: str | Missing | None,
    embedding: list[float] | None,
) -> dict[str, object] | UpdateOutcome:
    """The fields a new wording of `record` changes, or the outcome refusing it: a deleted
    fact it restates (tombstoned) or another live memory it repeats (duplicate)."""
    normalized = normalize(text)
    if normalized != record.normalized:
        subject = record.user_id if isinstance(user_id, Missing) else user_id
        gist = Gist.of(normalized, clean_user_id(subject))
        if loaded.tombstone_for(normalized, gist) is not None:
            return UpdateOutcome("tombstoned", memory=record)
        other = loaded.find_live_by_normalized(normalized)
        if other is not None and other.record.id != record.id:
            return UpdateOutcome("duplicate", memory=other.record)
    # A case- or width-only edit keeps the normalised form (no dedupe question) but is
    # still the wording asked for.
    if text != record.content:
        return {"content": text, "normalized": normalized, "embedding": embedding}
    return {}


async def set_private(
    ctx: WriteContext, scope: str, memory_id: str, private: bool
) -> MemoryRecord | None:
    """Make a live memory private or public; None when there is no live memory with that
    id."""
    async with ctx.index.writing(scope) as loaded:
        entry = loaded.entries.get(id_key(memory_id))
        if entry is None or entry.record.deleted:
            return None
        if entry.record.private == private:
            return entry.record
        changed = replace(entry.record, private=private, updated_at=ctx.now_text())
        await ctx.store.set_private(scope, changed.id, private, updated_at=changed.updated_at)
        # The text is the same: its search terms and guard verdict stay.
        entry.record = changed
    return changed
