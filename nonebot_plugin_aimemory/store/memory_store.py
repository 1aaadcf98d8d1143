"""Long-term memories and their tombstones; every query is bound to one scope. A write that
must not break the scope's rules whoever else writes (no content twice, none a person
deleted, no more than the cap) checks them in its own transaction, under the scope's lock."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from ..engine import VectorMaker
from .backend import Backend
from .connection import Connection
from .job_locks import Job, claim_job
from .memory_records import MemoryRecord as MemoryRecord
from .memory_records import Tombstone as Tombstone
from .memory_records import json_text, record_from_row
from .provenance import PROVENANCE_COLUMNS
from .times import utc_now_text

_SCOPE_STAMP = (
    "SELECT (SELECT COUNT(*) FROM memories WHERE scope = ?), (SELECT MAX(updated_at) FROM "
    "memories WHERE scope = ?), (SELECT MAX(deleted_at) FROM memories WHERE scope = ?), "
    "(SELECT COUNT(*) FROM memory_tombstones WHERE scope = ?), "
    "(SELECT MAX(deleted_at) FROM memory_tombstones WHERE scope = ?)"
)
InsertResult = Literal["inserted", "duplicate", "tombstoned", "full"]
UpdateResult = Literal["updated", "missing", "duplicate", "tombstoned"]

# The order record_from_row reads them in; the provenance columns (never changed after the
# insert: they say how the memory arrived) last.
_COLUMN_NAMES = (
    *("id", "content", "normalized", "tags", "user_id", "embedding", "evidence", "source"),
    *("created_at", "updated_at", "deleted_at", "private"),
    *("embedding_model", "embedding_convention", *PROVENANCE_COLUMNS),
)
_COLUMNS = ", ".join(_COLUMN_NAMES)
_INSERT = f"INSERT INTO memories (scope, {_COLUMNS}) VALUES (?{', ?' * len(_COLUMN_NAMES)})"


class MemoryStore:
    """SQL for the `memories` and `memory_tombstones` tables."""

    def __init__(self, database: Backend, maker: VectorMaker | None = None) -> None:
        self.database = database
        # What makes the vectors written and read (None: no embedding model configured).
        self.maker = maker

    def _lock(self, connection: Connection, scope: str) -> None:
        """Hold the scope's write lock until the transaction ends (SQLite: held already)."""
        self.database.lock(connection, _SCOPE_LOCK_CLASS, _scope_lock_key(scope))

    def _made_by(self, vector: list[float] | None) -> tuple[str | None, str | None]:
        if vector is None or self.maker is None:
            return (None, None)
        return (self.maker.model, self.maker.convention)

    async def load_scope(self, scope: str) -> list[MemoryRecord]:
        """Every memory of `scope`, deleted ones included."""
        rows = await self.database.read(
            f"SELECT {_COLUMNS} FROM memories WHERE scope = ?", (scope,)
        )
        return [record_from_row(row, self.maker) for row in rows]

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

    async def scope_stamp(self, scope: str) -> tuple[object, ...]:
        """Counts and latest times of `scope`'s memories and tombstones: another process's
        write to the scope shows as a different stamp."""
        rows = await self.database.read(_SCOPE_STAMP, (scope,) * 5)
        return tuple(rows[0])

    async def insert(
        self, scope: str, record: MemoryRecord, *, cap: int | None = None
    ) -> InsertResult:
        """Store a new memory in `scope`, unless its content is tombstoned or live there
        already, or the scope holds `cap` live memories: checked in the same transaction,
        so that concurrent writers (other processes too) never break these rules."""

        def work(connection: Connection) -> InsertResult:
            self._lock(connection, scope)
            refusal = _content_refusal(connection, scope, record.normalized, other_than=None)
            if refusal is not None:
                return refusal
            if cap is not None and _live_count(connection, scope) >= cap:
                return "full"
            connection.execute(
                _INSERT,
                (
                    scope,
                    *_values(record),
                    *self._made_by(record.embedding),
                    *record.provenance.columns(),
                ),
            )
            return "inserted"

        return await self.database.write(work)

    async def update(self, scope: str, record: MemoryRecord) -> UpdateResult:
        """Write back every mutable field of a stored memory, unless it is gone or was
        deleted meanwhile (`missing`: an update never undeletes), or its new content is
        tombstoned or live in another memory of the scope."""

        def work(connection: Connection) -> UpdateResult:
            self._lock(connection, scope)
            stored = connection.execute(
                "SELECT normalized, deleted_at FROM memories WHERE scope = ? AND id = ?",
                (scope, record.id),
            ).fetchone()
            if stored is None or (stored[1] is not None and record.deleted_at is None):
                return "missing"
            if stored[0] != record.normalized:
                refusal = _content_refusal(
                    connection, scope, record.normalized, other_than=record.id
                )
                if refusal is not None:
                    return refusal
            connection.execute(
                "UPDATE memories SET content = ?, normalized = ?, tags = ?, user_id = ?, "
                "embedding = ?, embedding_model = ?, embedding_convention = ?, evidence = ?, "
                "updated_at = ?, deleted_at = ?, private = ? WHERE scope = ? AND id = ?",
                (
                    record.content,
                    record.normalized,
                    json_text(record.tags),
                    record.user_id,
                    json_text(record.embedding) if record.embedding else None,
                    *self._made_by(record.embedding or None),
                    json_text(record.evidence),
                    record.updated_at,
                    record.deleted_at,
                    int(record.private),
                    scope,
                    record.id,
                ),
            )
            return "updated"

        return await self.database.write(work)

    async def set_private(
        self, scope: str, memory_id: str, private: bool, *, updated_at: str
    ) -> None:
        """Make one memory private (used only in its owner's private chat) or public."""

        def work(connection: Connection) -> None:
            self._lock(connection, scope)
            connection.execute(
                "UPDATE memories SET private = ?, updated_at = ? WHERE scope = ? AND id = ?",
                (int(private), updated_at, scope, memory_id),
            )

        await self.database.write(work)

    async def set_embeddings(self, scope: str, vectors: dict[str, list[float]]) -> None:
        """Store embeddings by memory id, as made by the store's maker."""

        def work(connection: Connection) -> None:
            self._lock(connection, scope)
            connection.executemany(
                "UPDATE memories SET embedding = ?, embedding_model = ?, "
                "embedding_convention = ? WHERE scope = ? AND id = ?",
                [
                    (json_text(vector), *self._made_by(vector), scope, memory_id)
                    for memory_id, vector in vectors.items()
                ],
            )

        await self.database.write(work)

    async def mark_deleted(self, scope: str, ids: Sequence[str], *, tombstone: bool) -> None:
        """Mark memories deleted; with `tombstone`, also refuse their content from now on."""
        now = utc_now_text()

        def work(connection: Connection) -> None:
            self._lock(connection, scope)
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

    async def erase_scope(self, scope: str) -> int:
        """Delete every memory of `scope` for good, deleted ones and tombstones included (the
        try page clearing a test chat); how many memories went."""

        def work(connection: Connection) -> int:
            self._lock(connection, scope)
            connection.execute("DELETE FROM memory_tombstones WHERE scope = ?", (scope,))
            return connection.execute("DELETE FROM memories WHERE scope = ?", (scope,)).rowcount

        return await self.database.write(work)

    async def lift_tombstone(self, scope: str, normalized: str) -> None:
        """Remove the tombstone so this content may be saved again."""

        def work(connection: Connection) -> None:
            self._lock(connection, scope)
            _lift_tombstone(connection, scope, normalized)

        await self.database.write(work)

    async def missing_embeddings(self, limit: int) -> list[tuple[str, list[tuple[str, str]]]]:
        """Live memories without a vector of the store's maker (without any vector when no
        maker is set), grouped by scope: [(scope, [(id, content)])]."""
        stale, params = "", ()
        if self.maker is not None:
            stale = (
                " OR embedding_model IS NULL OR embedding_model != ? "
                "OR embedding_convention IS NULL OR embedding_convention != ?"
            )
            params = (self.maker.model, self.maker.convention)
        rows = await self.database.read(
            "SELECT scope, id, content FROM memories "
            f"WHERE deleted_at IS NULL AND (embedding IS NULL{stale}) ORDER BY scope LIMIT ?",
            (*params, limit),
        )
        grouped: dict[str, list[tuple[str, str]]] = {}
        for scope, memory_id, content in rows:
            grouped.setdefault(str(scope), []).append((str(memory_id), str(content)))
        return list(grouped.items())

    async def restore(
        self, scope: str, memory_id: str, normalized: str, *, cap: int | None = None
    ) -> bool:
        """Undelete a memory and lift the tombstone of its content. False when it was not
        undeleted: no longer stored (purged meanwhile), its content live again in another
        memory (the tombstone is lifted all the same), or the scope holds `cap` already."""
        now = utc_now_text()

        def work(connection: Connection) -> bool:
            self._lock(connection, scope)
            if _live_twin(connection, scope, normalized, other_than=memory_id):
                _lift_tombstone(connection, scope, normalized)
                return False
            if cap is not None and _live_count(connection, scope) >= cap:
                return False
            cursor = connection.execute(
                "UPDATE memories SET deleted_at = NULL, updated_at = ? WHERE scope = ? AND id = ?",
                (now, scope, memory_id),
            )
            if not cursor.rowcount:
                return False
            _lift_tombstone(connection, scope, normalized)
            return True

        return await self.database.write(work)

    async def purge_deleted(self, before: str) -> list[tuple[str, str]]:
        """Delete for good, in every scope, the memories deleted before `before` (vector
        included: it is a column); tombstones stay. Returns (scope, id) of each: none when
        another process is doing this very purge (job_locks.py)."""

        def work(connection: Connection) -> list[tuple[str, str]]:
            if not claim_job(self.database, connection, Job.MEMORY_PURGE):
                return []
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
        json_text(record.tags),
        record.user_id,
        json_text(record.embedding) if record.embedding else None,
        json_text(record.evidence),
        record.source,
        record.created_at,
        record.updated_at,
        record.deleted_at,
        int(record.private),
    )


# Every write of a scope first takes the scope's lock, so that writers checking its rules
# (a cap is a count, a duplicate an absent row: neither can be locked with FOR UPDATE) go
# one after the other, in every process. SQLite's BEGIN IMMEDIATE already serialises the
# writers of the file; PostgreSQL (READ COMMITTED) takes an advisory lock held until the
# transaction ends, in the two-key space, apart from the schema's one-key lock.
_SCOPE_LOCK_CLASS = 0x6D656D  # "mem"


def _scope_lock_key(scope: str) -> int:
    """A stable signed 32-bit key of the scope (two scopes sharing one only wait longer)."""
    digest = hashlib.blake2b(scope.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


def _content_refusal(
    connection: Connection, scope: str, normalized: str, *, other_than: str | None
) -> Literal["duplicate", "tombstoned"] | None:
    """Why this content may not be stored in the scope now (None if it may)."""
    tombstoned = connection.execute(
        "SELECT 1 FROM memory_tombstones WHERE scope = ? AND normalized = ?",
        (scope, normalized),
    ).fetchone()
    if tombstoned is not None:
        return "tombstoned"
    if _live_twin(connection, scope, normalized, other_than=other_than):
        return "duplicate"
    return None


def _live_twin(
    connection: Connection, scope: str, normalized: str, *, other_than: str | None
) -> bool:
    """Whether a live memory of the scope (not `other_than`) has this content."""
    row = connection.execute(
        "SELECT 1 FROM memories WHERE scope = ? AND normalized = ? AND deleted_at IS NULL "
        "AND id <> ? LIMIT 1",
        (scope, normalized, other_than or ""),
    ).fetchone()
    return row is not None


def _live_count(connection: Connection, scope: str) -> int:
    row = connection.execute(
        "SELECT COUNT(*) FROM memories WHERE scope = ? AND deleted_at IS NULL", (scope,)
    ).fetchone()
    return int(row[0])


def _lift_tombstone(connection: Connection, scope: str, normalized: str) -> None:
    connection.execute(
        "DELETE FROM memory_tombstones WHERE scope = ? AND normalized = ?", (scope, normalized)
    )
