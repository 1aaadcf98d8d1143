"""One scope's memories as the panel shows and changes them: every read and write goes
through MemoryService, so through the same rules as the tools and commands (the guard,
masking, the cap, tombstones, near-duplicate hints). A page's memories are where its
window keeps them (`memories_of`): an account's page shows, and changes, the memories the
accounts share. A memory of another scope is not found here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import texts
from ...memory import MemoryFull, MemoryService, SaveOutcome, UpdateOutcome, memory_key_for
from ...store import Provenance
from ..scopes import Scope
from .errors import PanelError, bad_request, not_found, refusal
from .memory_bodies import MemoryCreate, MemoryPatch

if TYPE_CHECKING:
    from ...runtime import Runtime
    from ...store import MemoryRecord

MEMORY_SEARCH_LIMIT = 50
_BY_PANEL = Provenance("panel")


def memory_service(runtime: Runtime) -> MemoryService | None:
    """The memory service; None without a database (memory is off)."""
    service = getattr(runtime.memory, "service", None)
    return service if isinstance(service, MemoryService) else None


def memories_of(runtime: Runtime, scope: Scope) -> Scope:
    """Where the memories `scope`'s page shows live: where its window saves them, the
    chat's shared by the accounts unless `aimemory_accounts_share_memory` is off."""
    place = memory_key_for(shared=runtime.config.aimemory_accounts_share_memory)
    return Scope.parse(place(scope.key))


def require_service(runtime: Runtime) -> MemoryService:
    """The memory service, or 409 when memory is off."""
    service = memory_service(runtime)
    if service is None:
        raise refusal(409, "unavailable", texts.MEMORY_UNAVAILABLE_PANEL)
    return service


def memory_json(record: MemoryRecord) -> dict[str, Any]:
    """A memory as the API shows it (its vector and normalised form stay inside)."""
    shown: dict[str, Any] = {
        "id": record.id,
        "content": record.content,
        "tags": list(record.tags),
        "user_id": record.user_id,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "source": record.source,
        "private": record.private,
        "provenance": provenance_json(record.provenance),
    }
    if record.deleted_at is not None:
        shown["deleted_at"] = record.deleted_at
    return shown


def provenance_json(provenance: Provenance) -> dict[str, Any]:
    """Where a memory came from, as the API shows it (None for what is unknown), with the
    short text the page shows (`小明(20001) 说`; '' when unknown)."""
    said_by, told_by = provenance.said_by, provenance.told_by
    return {
        "origin": provenance.origin,
        "said_by": None if said_by is None else {"user_id": said_by.user_id, "name": said_by.name},
        "told_by": None if told_by is None else {"user_id": told_by.user_id, "name": told_by.name},
        "chat": provenance.chat,
        "text": texts.provenance_summary(provenance),
    }


async def existing_memory(service: MemoryService, scope: Scope, memory_id: str) -> MemoryRecord:
    """The live memory `memory_id` of this scope, or 404."""
    record = await service.get(scope.key, memory_id)
    if record is None:
        raise not_found(memory_id)
    return record


async def list_memories(service: MemoryService, scope: Scope, query: str | None) -> list[dict]:
    """Live memories, newest first; with `query`, the best matches first."""
    if query and query.strip():
        hits = await service.search(scope.key, query, MEMORY_SEARCH_LIMIT)
        return [memory_json(hit.memory) for hit in hits]
    return [memory_json(record) for record in await service.list(scope.key)]


async def create_memory(service: MemoryService, scope: Scope, body: MemoryCreate) -> dict[str, Any]:
    """Save through every rule; the saved memory with near-duplicate hints, or why not."""
    # The operator is nobody the chat knows: said by no one, added by the panel.
    outcome = await service.save(
        scope.key, body.content, tags=body.tags, source="command", provenance=_BY_PANEL
    )
    if outcome.status == "saved" and outcome.memory is not None:
        return {
            **memory_json(outcome.memory),
            "similar": [memory_json(r) for r in outcome.similar],
            "truncated": outcome.truncated,
        }
    raise _save_refusal(outcome)


async def update_memory(
    service: MemoryService, scope: Scope, memory_id: str, body: MemoryPatch
) -> dict[str, Any]:
    """Change content, tags (and a personal memory's privacy) through the rules."""
    if body.given("private") and not scope.is_personal:
        raise bad_request(texts.PANEL_PRIVATE_ONLY)
    outcome = await service.update(
        scope.key, memory_id, content=body.new_content, tags=body.new_tags
    )
    if outcome.status != "updated" or outcome.memory is None:
        raise _update_refusal(outcome, memory_id)
    record = outcome.memory
    if body.given("private"):
        changed = await service.set_private(scope.key, memory_id, body.private)
        if changed is None:
            raise not_found(memory_id)
        record = changed
    return {**memory_json(record), "truncated": outcome.truncated}


async def delete_memory(service: MemoryService, scope: Scope, memory_id: str) -> dict:
    """A person's deletion: the memory goes, its tombstone stays (restorable)."""
    deleted = await service.forget(scope.key, memory_id, by_person=True)
    if deleted is None:
        raise not_found(memory_id)
    return memory_json(deleted)


async def restore_memory(service: MemoryService, scope: Scope, memory_id: str) -> dict:
    """Undo a deletion (refused when the scope is full)."""
    try:
        restored = await service.restore(scope.key, memory_id)
    except MemoryFull:
        reason = texts.panel_memory_full(service.max_entries_for(scope.key))
        raise refusal(409, "full", reason) from None
    if restored is None:
        raise not_found(memory_id)
    return memory_json(restored)


async def tombstones(service: MemoryService, scope: Scope) -> list[dict[str, Any]]:
    """Deleted memories (restorable while kept) and tombstones of purged ones: what a
    save of the same content would be refused for."""
    records = await service.store.load_scope(scope.key)
    stones = await service.store.load_tombstone_records(scope.key)
    deleted = {r.id: r for r in records if r.deleted}
    shown: list[dict[str, Any]] = [
        {**memory_json(record), "restorable": True}
        for record in sorted(deleted.values(), key=lambda r: r.deleted_at or "", reverse=True)
    ]
    shown.extend(
        {
            "id": stone.memory_id,
            "content": stone.normalized,
            "user_id": stone.user_id,
            "restorable": False,
        }
        for stone in stones
        if stone.memory_id not in deleted
    )
    return shown


def _save_refusal(outcome: SaveOutcome) -> PanelError:
    """Why a save did not happen, as the tools and commands would say it."""
    body: dict[str, Any] = {"error": outcome.status, "reason": texts.panel_save_refused(outcome)}
    if outcome.memory is not None:
        body["memory"] = memory_json(outcome.memory)
    status = 422 if outcome.status in ("refused", "empty") else 409
    return PanelError(status, body)


def _update_refusal(outcome: UpdateOutcome, memory_id: str) -> PanelError:
    if outcome.status == "not_found":
        return not_found(memory_id)
    body: dict[str, Any] = {
        "error": outcome.status,
        "reason": texts.panel_update_refused(outcome.status, outcome.reason),
    }
    if outcome.status == "duplicate" and outcome.memory is not None:
        body["memory"] = memory_json(outcome.memory)
    status = 422 if outcome.status in ("refused", "empty") else 409
    return PanelError(status, body)
