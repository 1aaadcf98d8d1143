"""Vectors of chat-log rows (optional, `aimemory_chat_log_embeddings`): one per row, packed
small, and the cosine of a query to a packed vector computed without unpacking it into
Python floats one by one.

A vector is stored as int8, scaled to its largest component, after the sum of its squared
int8 components (`<I`): 4 + d bytes (388 for a 384-dimensional model, a quarter of float32;
on MemoryBank the dense ranking it gives is that of the float vectors). The cosine comes
from `math.dist`, which runs in C: for unit query q, stored a (components shifted by 128,
so a row's bytes are its coordinates), |a - q|^2 = |a|^2 + |q|^2 - 2 a.q. That is about
three times faster than a Python dot product of unpacked floats, and scanning is what a
search pays for.

Each vector is stored with what made it (the model and its prefix convention) and with its
sketch: the sign of each component in two bits, 96 bytes for 384 dimensions. Hamming
distances between sketches are a coarse cosine (binary quantisation, rescored with the int8
vectors), cheap enough to rank every row of a long chat before reading any vector whole.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ..engine.embeddings import VectorMaker
from .chat_log_terms_index import lock_chat_log
from .connection import Backend, Connection

INT8_MAX = 127
# Stored components are int8 + 128: bytes 0..255, which math.dist reads as coordinates.
OFFSET = 128
_HEADER = struct.Struct("<I")
# Row ids in one `IN (...)` read: below SQLite's old limit of 999 bound parameters.
IDS_PER_READ = 500


def pack_vector(vector: Sequence[float]) -> bytes:
    """`vector` as stored: its squared int8 norm, then one byte per component."""
    largest = max((abs(x) for x in vector), default=0.0)
    scale = INT8_MAX / largest if largest else 0.0
    components = [round(x * scale) for x in vector]
    squared = sum(c * c for c in components)
    return _HEADER.pack(squared) + bytes(c + OFFSET for c in components)


def pack_sketch(vector: Sequence[float]) -> bytes:
    """The signs of `vector`'s int8 components: a bit for each positive one, then a bit for
    each negative one (a zero component sets neither, so sparse vectors compare by what
    they hold), the first component in the lowest bit of each half."""
    largest = max((abs(x) for x in vector), default=0.0)
    scale = INT8_MAX / largest if largest else 0.0
    positive = negative = 0
    for position, component in enumerate(vector):
        quantised = round(component * scale)
        if quantised > 0:
            positive |= 1 << position
        elif quantised < 0:
            negative |= 1 << position
    bits = positive | negative << len(vector)
    return bits.to_bytes((2 * len(vector) + 7) // 8, "little")


def sketch_bits(sketch: bytes) -> int:
    """A sketch as an integer, for `(a ^ b).bit_count()`: the Hamming distance."""
    return int.from_bytes(sketch, "little")


def unpack_vector(packed: bytes) -> list[float]:
    """A stored vector back as unit-length floats (for tests and inspection)."""
    (squared,) = _HEADER.unpack_from(packed)
    norm = math.sqrt(squared) or 1.0
    return [(byte - OFFSET) / norm for byte in packed[_HEADER.size :]]


@dataclass(frozen=True, slots=True)
class QueryVector:
    """A query's vector, prepared once for the cosine to every stored vector it is
    compared with."""

    shifted: tuple[float, ...]
    squared: float

    @classmethod
    def of(cls, vector: Sequence[float]) -> QueryVector:
        """`vector` (any length, any norm) prepared for `similarity`."""
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        unit = [x / norm for x in vector]
        return cls(tuple(x + OFFSET for x in unit), sum(x * x for x in unit))

    def similarity(self, packed: bytes) -> float:
        """The cosine of this query and a stored vector (0 for one of another length or a
        zero vector)."""
        components = memoryview(packed)[_HEADER.size :]
        if len(components) != len(self.shifted):
            return 0.0
        (squared,) = _HEADER.unpack_from(packed)
        if not squared or not self.squared:
            return 0.0
        distance = math.dist(components.tobytes(), self.shifted)
        dot = (squared + self.squared - distance * distance) / 2
        return dot / math.sqrt(squared * self.squared)


@dataclass(frozen=True, slots=True)
class Unembedded:
    """A row still without a vector of the model: what it says, and where."""

    id: int
    session_key: str
    text: str


class ChatLogVectorStore:
    """SQL for `chat_log_vectors`; reads are bound to one session and one vector maker."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def put(self, maker: VectorMaker, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
        """Store vectors of `maker` by row id, packed, with their sketches, replacing older
        ones; a row removed or refused meanwhile gets none. Returns how many were stored."""
        packed = sorted((row_id, pack_vector(v), pack_sketch(v)) for row_id, v in vectors)

        def work(connection: Connection) -> int:
            if self.database.dialect == "postgresql":
                # As every writer of the log: a retention run deleting these rows' vectors
                # meanwhile would otherwise wait for this one while it waits for that.
                lock_chat_log(connection)
            stored = 0
            # In id order: a b-tree filled in descending order (a backfill goes newest
            # first) is left with half-empty pages, 820 bytes a row instead of 460.
            for row_id, vector, sketch in packed:
                cursor = connection.execute(
                    "INSERT INTO chat_log_vectors "
                    "(row_id, session_key, model, convention, vector, sketch) "
                    "SELECT id, session_key, ?, ?, ?, ? FROM chat_log "
                    "WHERE id = ? AND refused = 0 "
                    "ON CONFLICT (row_id) DO UPDATE SET session_key = excluded.session_key, "
                    "model = excluded.model, convention = excluded.convention, "
                    "vector = excluded.vector, sketch = excluded.sketch",
                    (maker.model, maker.convention, vector, sketch, row_id),
                )
                stored += cursor.rowcount
            return stored

        return await self.database.write(work)

    async def unembedded(
        self, maker: VectorMaker, limit: int, below_id: int | None = None
    ) -> list[Unembedded]:
        """The newest `limit` rows (below `below_id`) that are neither refused nor empty and
        have no vector of `maker`, newest first."""
        below = "AND c.id < ? " if below_id is not None else ""
        rows = await self.database.read(
            "SELECT c.id, c.session_key, c.text FROM chat_log c "
            f"WHERE c.refused = 0 AND trim(c.text) != '' {below}"
            "AND NOT EXISTS (SELECT 1 FROM chat_log_vectors v "
            "WHERE v.row_id = c.id AND v.model = ? AND v.convention = ?) "
            "ORDER BY c.id DESC LIMIT ?",
            (*((below_id,) if below_id is not None else ()), *_made_by(maker), limit),
        )
        return [Unembedded(int(row_id), str(key), str(text)) for row_id, key, text in rows]

    async def unembedded_count(self, maker: VectorMaker) -> int:
        """How many rows that should have a vector of `maker` have none (for the log)."""
        rows = await self.database.read(
            "SELECT COUNT(*) FROM chat_log c WHERE c.refused = 0 AND trim(c.text) != '' "
            "AND NOT EXISTS (SELECT 1 FROM chat_log_vectors v "
            "WHERE v.row_id = c.id AND v.model = ? AND v.convention = ?)",
            _made_by(maker),
        )
        return int(rows[0][0])

    async def newest(
        self,
        session_key: str,
        maker: VectorMaker,
        limit: int,
        *,
        within: tuple[int, int] | None = None,
    ) -> list[tuple[int, bytes]]:
        """The session's newest `limit` vectors of `maker` (only rows with ids in
        `within`, inclusive, if given), newest first, by row id."""
        span = "AND row_id BETWEEN ? AND ? " if within is not None else ""
        rows = await self.database.read(
            "SELECT row_id, vector FROM chat_log_vectors "
            f"WHERE session_key = ? {span}AND model = ? AND convention = ? "
            "ORDER BY row_id DESC LIMIT ?",
            (session_key, *(within or ()), *_made_by(maker), limit),
        )
        return [(int(row_id), bytes(packed)) for row_id, packed in rows]

    async def sketches_below(
        self, session_key: str, maker: VectorMaker, below_id: int
    ) -> list[tuple[int, bytes]]:
        """The sketches of the session's vectors of `maker` on rows older than `below_id`."""
        rows = await self.database.read(
            "SELECT row_id, sketch FROM chat_log_vectors WHERE session_key = ? "
            "AND row_id < ? AND model = ? AND convention = ? AND sketch IS NOT NULL",
            (session_key, below_id, *_made_by(maker)),
        )
        return [(int(row_id), bytes(sketch)) for row_id, sketch in rows]

    async def by_ids(
        self, session_key: str, maker: VectorMaker, row_ids: Sequence[int]
    ) -> list[tuple[int, bytes]]:
        """The session's vectors of `maker` on the rows `row_ids` (any order)."""
        found: list[tuple[int, bytes]] = []
        for start in range(0, len(row_ids), IDS_PER_READ):
            chunk = list(row_ids[start : start + IDS_PER_READ])
            rows = await self.database.read(
                "SELECT row_id, vector FROM chat_log_vectors WHERE session_key = ? "
                f"AND model = ? AND convention = ? AND row_id IN ({', '.join('?' * len(chunk))})",
                (session_key, *_made_by(maker), *chunk),
            )
            found += [(int(row_id), bytes(packed)) for row_id, packed in rows]
        return found

    async def count(self, session_key: str, maker: VectorMaker) -> int:
        """How many rows of the session have a vector of `maker`."""
        rows = await self.database.read(
            "SELECT COUNT(*) FROM chat_log_vectors "
            "WHERE session_key = ? AND model = ? AND convention = ?",
            (session_key, *_made_by(maker)),
        )
        return int(rows[0][0])


def _made_by(maker: VectorMaker) -> tuple[str, str]:
    return (maker.model, maker.convention)


def forget_vectors(connection: Connection, where: str, params: Sequence[object]) -> None:
    """Delete the vectors of the chat_log rows `where` selects, in the caller's
    transaction (before the rows themselves go: retention, refusals)."""
    connection.execute(
        f"DELETE FROM chat_log_vectors WHERE row_id IN (SELECT id FROM chat_log WHERE {where})",
        params,
    )
