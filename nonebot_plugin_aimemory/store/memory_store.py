"""Long-term memories and their tombstones; every query is bound to one scope."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from .connection import Backend, Connection
from .database import utc_now_text

_COLUMNS = (
    "id, content, normalized, tags, user_id, embedding, evidence, source, created_at, "
    "updated_at, deleted_at, private"
)


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


def _record(row: Sequence[object]) -> MemoryRecord:
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
    ) = row
    return MemoryRecord(
        id=str(id_),
        content=str(content),
        normalized=str(normalized),
        tags=_json_list(tags),
        user_id=str(user_id) if user_id is not None else None,
        embedding=_json_list(embedding) or None,
        evidence=[int(x) for x in _json_list(evidence) if isinstance(x, int)],
        source=str(source),
        created_at=str(created),
        updated_at=str(updated),
        deleted_at=str(deleted) if deleted is not None else None,
        private=bool(private),
    )


def _json_list(raw: object) -> list:
    if not raw:
        return []
    try:
        value = json.loads(str(raw))
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


class MemoryStore:
    """SQL for the `memories` and `memory_tombstones` tables."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def load_scope(self, scope: str) -> list[MemoryRecord]:
        """Every memory of `scope`, deleted ones included."""
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM memories WHERE scope = ?", (scope,)
        )
        return [_record(row) for row in rows]

    async def load_tombstones(self, scope: str) -> dict[str, str]:
        """normalized content -> id of the memory a person deleted."""
        return {t.normalized: t.memory_id for t in await self.load_tombstone_records(scope)}

    async def load_tombstone_records(self, scope: str) -> list[Tombstone]:
        """Every tombstone of `scope`, with the QQ number its memory was about."""
        rows = await self.database.read(
            "SELECT normalized, memory_id, user_id FROM memory_tombstones WHERE scope = ?",
            (scope,),
        )
        return [
            Tombstone(str(normalized), str(memory_id), str(user_id) if user_id else None)
            for normalized, memory_id, user_id in rows
        ]

    async def insert(self, scope: str, record: MemoryRecord) -> None:
        """Store a new memory in `scope`."""

        def work(connection: Connection) -> None:
            connection.execute(
                f"INSERT INTO memories (scope, {_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (scope, *_values(record)),
            )

        await self.database.write(work)

    async def update(self, scope: str, record: MemoryRecord) -> None:
        """Write back every mutable field of a stored memory."""

        def work(connection: Connection) -> None:
            connection.execute(
                "UPDATE memories SET content = ?, normalized = ?, tags = ?, user_id = ?, "
                "embedding = ?, evidence = ?, updated_at = ?, deleted_at = ?, private = ? "
                "WHERE scope = ? AND id = ?",
                (
                    record.content,
                    record.normalized,
                    _dump(record.tags),
                    record.user_id,
                    _dump(record.embedding) if record.embedding else None,
                    _dump(record.evidence),
                    record.updated_at,
                    record.deleted_at,
                    int(record.private),
                    scope,
                    record.id,
                ),
            )

        await self.database.write(work)

    async def set_private(
        self, scope: str, memory_id: str, private: bool, *, updated_at: str
    ) -> None:
        """Make one memory private (used only in its owner's private chat) or public."""

        def work(connection: Connection) -> None:
            connection.execute(
                "UPDATE memories SET private = ?, updated_at = ? WHERE scope = ? AND id = ?",
                (int(private), updated_at, scope, memory_id),
            )

        await self.database.write(work)

    async def set_embeddings(self, scope: str, vectors: dict[str, list[float]]) -> None:
        """Store embeddings by memory id."""

        def work(connection: Connection) -> None:
            connection.executemany(
                "UPDATE memories SET embedding = ? WHERE scope = ? AND id = ?",
                [(_dump(vector), scope, memory_id) for memory_id, vector in vectors.items()],
            )

        await self.database.write(work)

    async def mark_deleted(self, scope: str, ids: Sequence[str], *, tombstone: bool) -> None:
        """Mark memories deleted; with `tombstone`, also refuse their content from now on."""
        now = utc_now_text()

        def work(connection: Connection) -> None:
            for memory_id in ids:
                connection.execute(
                    "UPDATE memories SET deleted_at = ?, updated_at = ? "
                    "WHERE scope = ? AND id = ? AND deleted_at IS NULL",
                    (now, now, scope, memory_id),
                )
                if tombstone:
                    connection.execute(
                        "INSERT INTO memory_tombstones "
                        "(scope, normalized, memory_id, deleted_at, user_id) "
                        "SELECT scope, normalized, id, ?, user_id FROM memories "
                        "WHERE scope = ? AND id = ? "
                        "ON CONFLICT (scope, normalized) DO UPDATE SET "
                        "memory_id = excluded.memory_id, deleted_at = excluded.deleted_at, "
                        "user_id = excluded.user_id",
                        (now, scope, memory_id),
                    )

        await self.database.write(work)

    async def lift_tombstone(self, scope: str, normalized: str) -> None:
        """Remove the tombstone so this content may be saved again."""

        def work(connection: Connection) -> None:
            connection.execute(
                "DELETE FROM memory_tombstones WHERE scope = ? AND normalized = ?",
                (scope, normalized),
            )

        await self.database.write(work)

    async def missing_embeddings(self, limit: int) -> list[tuple[str, list[tuple[str, str]]]]:
        """Live memories without a vector, grouped by scope: [(scope, [(id, content)])]."""
        rows = await self.database.read(
            "SELECT scope, id, content FROM memories "
            "WHERE embedding IS NULL AND deleted_at IS NULL ORDER BY scope LIMIT ?",
            (limit,),
        )
        grouped: dict[str, list[tuple[str, str]]] = {}
        for scope, memory_id, content in rows:
            grouped.setdefault(str(scope), []).append((str(memory_id), str(content)))
        return list(grouped.items())

    async def restore(self, scope: str, memory_id: str, normalized: str) -> bool:
        """Undelete a memory and lift the tombstone of its content; False (nothing changed)
        when the memory is no longer stored (purged meanwhile)."""
        now = utc_now_text()

        def work(connection: Connection) -> bool:
            cursor = connection.execute(
                "UPDATE memories SET deleted_at = NULL, updated_at = ? WHERE scope = ? AND id = ?",
                (now, scope, memory_id),
            )
            if not cursor.rowcount:
                return False
            connection.execute(
                "DELETE FROM memory_tombstones WHERE scope = ? AND normalized = ?",
                (scope, normalized),
            )
            return True

        return await self.database.write(work)

    async def purge_deleted(self, before: str) -> list[tuple[str, str]]:
        """Delete for good, in every scope, the memories deleted before `before` (vector
        included: it is a column); tombstones stay. Returns (scope, id) of each."""

        def work(connection: Connection) -> list[tuple[str, str]]:
            rows = connection.execute(
                "DELETE FROM memories WHERE deleted_at IS NOT NULL AND deleted_at < ? "
                "RETURNING scope, id",
                (before,),
            ).fetchall()
            return [(str(scope), str(memory_id)) for scope, memory_id in rows]

        return await self.database.write(work)


def _values(record: MemoryRecord) -> tuple[object, ...]:
    return (
        record.id,
        record.content,
        record.normalized,
        _dump(record.tags),
        record.user_id,
        _dump(record.embedding) if record.embedding else None,
        _dump(record.evidence),
        record.source,
        record.created_at,
        record.updated_at,
        record.deleted_at,
        int(record.private),
    )
