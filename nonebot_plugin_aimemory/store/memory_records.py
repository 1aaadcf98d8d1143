"""A stored memory and tombstone as the tables hold them, and the conversion of their rows
(tags, evidence and vectors kept as JSON text; a vector is read only when the maker recorded
beside it is the one asked for, so a model or prefix change leaves it to be made again)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..engine import VectorMaker
from .provenance import PROVENANCE_COLUMNS, Provenance


@dataclass(slots=True)
class MemoryRecord:
    """One stored memory as the table holds it."""

    id: str
    content: str
    normalized: str
    tags: list[str] = field(default_factory=list)
    user_id: str | None = None
    embedding: list[float] | None = None
    evidence: list[int] = field(default_factory=list)
    source: str = "tool"
    created_at: str = ""
    updated_at: str = ""
    deleted_at: str | None = None
    # A personal memory told in its owner's private chat: used only there (see
    # memory/personal.py). Chat memories are never private.
    private: bool = False
    # Where it came from (provenance.py); all unknown for memories saved before it was kept.
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def deleted(self) -> bool:
        """Whether the memory was deleted (soft delete: `deleted_at` is set)."""
        return self.deleted_at is not None


@dataclass(frozen=True, slots=True)
class Tombstone:
    """Content a person deleted, refused from then on; it outlives the purged memory."""

    normalized: str
    memory_id: str
    user_id: str | None = None


def record_from_row(row: Sequence[object], maker: VectorMaker | None) -> MemoryRecord:
    """A memory row (its provenance columns last); its vector only if `maker` made it (any
    vector when `maker` is None: no embedding model is configured, so nothing compares it)."""
    first = len(row) - len(PROVENANCE_COLUMNS)
    provenance = Provenance.from_columns(tuple(row[first:]))
    (
        id_,
        content,
        normalized,
        tags,
        user_id,
        embedding,
        evidence,
        source,
        created,
        updated,
        deleted,
        private,
        embedding_model,
        embedding_convention,
    ) = row[:first]
    current = maker is None or (embedding_model, embedding_convention) == (
        maker.model,
        maker.convention,
    )
    return MemoryRecord(
        id=str(id_),
        content=str(content),
        normalized=str(normalized),
        tags=_json_list(tags),
        user_id=str(user_id) if user_id is not None else None,
        embedding=(_json_list(embedding) or None) if current else None,
        evidence=[int(x) for x in _json_list(evidence) if isinstance(x, int)],
        source=str(source),
        created_at=str(created),
        updated_at=str(updated),
        deleted_at=str(deleted) if deleted is not None else None,
        private=bool(private),
        provenance=provenance,
    )


def _json_list(raw: object) -> list:
    if not raw:
        return []
    try:
        value = json.loads(str(raw))
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
