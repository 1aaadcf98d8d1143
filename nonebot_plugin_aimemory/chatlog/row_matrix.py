"""A session's chat-log vectors in memory as an int8 matrix, ranked by exact cosine with
numpy (imported only with chat-log vectors on: chatlog/vectors.py loads this module on the
first search).

The rows are kept as stored (store/packed_vectors.py): int8 components, and the norm their
squared sum gives; a query is scored against a block of `BLOCK_ROWS` rows at a time in a
float32 copy of that block (1.5 MB at 384 dimensions), so no float copy of the whole
matrix is ever made. On the bench's 2-core machine that is 7 to 10 ms of CPU per 100 000
rows of 384 dimensions; blocks of 4 096 rows took 20 times as long (OpenBLAS hands a larger
product to its threads, which then wait for a busy CPU)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..store import HEADER, OFFSET

BLOCK_ROWS = 1024
# What a row costs besides its components: its id (int64) and its inverse norm (float32).
ROW_OVERHEAD_BYTES = 8 + 4
# An id no row has: a removed row's slot, never ranked.
GONE = -1

Ranked = list[tuple[int, float]]


@dataclass(slots=True)
class _Block:
    """Up to `BLOCK_ROWS` rows: ids, int8 components, and 1 / norm (the cosine's divisor)."""

    ids: NDArray[np.int64]
    components: NDArray[np.int8]
    inverse_norms: NDArray[np.float32]
    used: int = 0


@dataclass(slots=True)
class RowMatrix:
    """One session's vectors of one maker and length (`dimensions`), in blocks."""

    dimensions: int
    _blocks: list[_Block] = field(default_factory=list)
    rows: int = 0
    # The lowest and highest id ever added: rows read below or above them (a session read
    # newest first, then its newer rows) need no look for ids already held.
    _low: int = 0
    _high: int = -1

    @property
    def nbytes(self) -> int:
        """The memory its blocks take."""
        return len(self._blocks) * BLOCK_ROWS * (self.dimensions + ROW_OVERHEAD_BYTES)

    def add(self, packed_rows: Sequence[tuple[int, bytes]]) -> None:
        """Add stored vectors by row id. Left out: a vector of another length (made by
        another model or setting), a zero vector (no direction), an id already held."""
        width = HEADER.size + self.dimensions
        fitting = [(row_id, packed) for row_id, packed in packed_rows if len(packed) == width]
        if not fitting:
            return
        ids = np.fromiter((row_id for row_id, _ in fitting), dtype=np.int64, count=len(fitting))
        raw = np.frombuffer(b"".join(packed for _, packed in fitting), dtype=np.uint8)
        raw = raw.reshape(len(fitting), width)
        squared = np.ascontiguousarray(raw[:, : HEADER.size]).view("<u4").ravel()
        keep = squared > 0
        if self._high >= self._low and ids.max() >= self._low and ids.min() <= self._high:
            keep &= ~np.isin(ids, self.ids())
        # Stored bytes are int8 + OFFSET (128): flipping the top bit gives the int8 back.
        components = (raw[keep, HEADER.size :] ^ np.uint8(OFFSET)).view(np.int8)
        inverse = (1.0 / np.sqrt(squared[keep].astype(np.float64))).astype(np.float32)
        self._append(ids[keep], components, inverse)

    def remove(self, row_ids: Collection[int]) -> None:
        """Forget the rows `row_ids` (removed or refused since they were read)."""
        gone = np.fromiter(row_ids, dtype=np.int64, count=len(row_ids))
        for block in self._blocks:
            held = np.isin(block.ids[: block.used], gone)
            block.ids[: block.used][held] = GONE
            self.rows -= int(held.sum())

    def ids(self) -> NDArray[np.int64]:
        """The ids of every slot, `GONE` for a removed row."""
        if not self._blocks:
            return np.empty(0, dtype=np.int64)
        return np.concatenate([block.ids[: block.used] for block in self._blocks])

    def snapshot(self) -> RowMatrix:
        """The rows held now, to score in another thread while rows are added here: a
        block's rows below its `used` count are never written again."""
        blocks = [_Block(b.ids, b.components, b.inverse_norms, b.used) for b in self._blocks]
        return RowMatrix(self.dimensions, blocks, self.rows, self._low, self._high)

    def scores(self, query: Sequence[float]) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Every held row's id and its cosine to `query` (a vector of `dimensions`)."""
        unit = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(unit))
        unit = unit / norm if norm else unit
        scored = np.empty(sum(block.used for block in self._blocks), dtype=np.float32)
        as_float = np.empty((BLOCK_ROWS, self.dimensions), dtype=np.float32)
        start = 0
        for block in self._blocks:
            end = start + block.used
            np.copyto(as_float[: block.used], block.components[: block.used])
            np.matmul(as_float[: block.used], unit, out=scored[start:end])
            scored[start:end] *= block.inverse_norms[: block.used]
            start = end
        ids = self.ids()
        held = ids != GONE
        return ids[held], scored[held]

    def _append(
        self,
        ids: NDArray[np.int64],
        components: NDArray[np.int8],
        inverse_norms: NDArray[np.float32],
    ) -> None:
        done = 0
        while done < len(ids):
            if not self._blocks or self._blocks[-1].used == BLOCK_ROWS:
                self._blocks.append(self._new_block())
            block = self._blocks[-1]
            count = min(BLOCK_ROWS - block.used, len(ids) - done)
            into = slice(block.used, block.used + count)
            block.components[into] = components[done : done + count]
            block.inverse_norms[into] = inverse_norms[done : done + count]
            # The id last: a snapshot taken meanwhile holds only rows written whole.
            block.ids[into] = ids[done : done + count]
            block.used += count
            done += count
        self.rows += len(ids)
        if len(ids):
            low, high = int(ids.min()), int(ids.max())
            self._low = low if self._high < self._low else min(self._low, low)
            self._high = max(self._high, high)

    def _new_block(self) -> _Block:
        return _Block(
            np.full(BLOCK_ROWS, GONE, dtype=np.int64),
            np.zeros((BLOCK_ROWS, self.dimensions), dtype=np.int8),
            np.zeros(BLOCK_ROWS, dtype=np.float32),
        )


def in_spans(ids: NDArray[np.int64], spans: Sequence[tuple[int, int]]) -> NDArray[np.bool_]:
    """Which of `ids` lie in any of `spans` (first and last id, inclusive)."""
    inside = np.zeros(len(ids), dtype=np.bool_)
    for first, last in spans:
        inside |= (ids >= first) & (ids <= last)
    return inside


def best(ids: NDArray[np.int64], scores: NDArray[np.float32], depth: int) -> Ranked:
    """The `depth` highest-scoring rows, best first, equal scores newest first."""
    if depth <= 0 or not len(ids):
        return []
    if len(ids) > depth:
        top = np.argpartition(-scores, depth - 1)[:depth]
        ids, scores = ids[top], scores[top]
    order = np.lexsort((-ids, -scores))
    return list(zip(ids[order].tolist(), scores[order].astype(np.float64).tolist(), strict=True))
