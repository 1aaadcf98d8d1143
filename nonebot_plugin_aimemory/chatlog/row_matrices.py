"""The chat-log vectors of the sessions searched lately, held in memory as int8 matrices
(row_matrix.py) so that a search ranks every row by exact cosine without reading them
from the database: reading 100 000 vectors costs 80 to 100 ms of CPU, ranking them held
7 to 10 ms.

A session's matrix is read once, newest first, in reads of `READ_ROWS`, up to three
quarters of `BUDGET_BYTES` (about 120 000 rows of 384 dimensions; a longer chat's older
rows are ranked by keyword alone, except those of a period the query names). Each search
first reads the rows embedded since (after the newest id held), and those this process
embedded below it (a backfill goes newest first). All sessions' matrices share the budget,
the least recently searched given up first; one not searched for `IDLE_SECONDS` is
dropped, and one held for `REREAD_SECONDS` is read again, which also brings in what
another bot process on the same database embedded among the rows held. A row removed or
refused since it was read is dropped when a search finds it gone (chatlog/search.py).

Not sqlite-vec: many Pythons cannot load SQLite extensions (pyenv's and macOS's builds, this
project's CI), it would keep a second copy of every vector in its own table, and PostgreSQL
without pgvector needs the same ranking; numpy serves both databases alike."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..engine import VectorMaker
from ..store import ChatLogVectorStore
from .row_matrix import ROW_OVERHEAD_BYTES, Ranked, RowMatrix, best, in_spans

# What the matrices of all sessions may take: 64 MiB, about 170 000 rows of 384 dimensions
# (40 000 of 1 536). A search's RAM, not the database's: a small VPS has little of it.
BUDGET_BYTES = 64 * 2**20
# Vectors per database read, as the matrix is read: 1.6 MB of bytes at 384 dimensions.
READ_ROWS = 4096
# A matrix not searched for this long is dropped, its RAM given back; reading it again
# costs the next search 0.3 to 0.7 s at 100 000 rows on the bench's busy 2-core machine.
IDLE_SECONDS = 30 * 60
REREAD_SECONDS = 60 * 60
# Rows embedded below the newest one held, waiting to be read by the next search; past
# this many (a whole backfill), the matrix is read again instead.
MAX_WAITING_ROWS = 20_000

Key = tuple[str, int]  # a session, and the length of the vectors held for it


@dataclass(slots=True)
class _Held:
    """A session's matrix, and what it is missing."""

    matrix: RowMatrix
    read_at: float
    newest_id: int = 0  # rows after it are read by the next search
    floor_id: int | None = None  # rows below it were left out for the budget
    used_at: float = 0.0
    waiting: set[int] = field(default_factory=set)  # embedded here since, below newest_id


class RowMatrices:
    """The matrices of one vector maker's rows, by session, within `BUDGET_BYTES`."""

    def __init__(
        self, store: ChatLogVectorStore, maker: VectorMaker, budget_bytes: int | None = None
    ) -> None:
        self.store = store
        self.maker = maker
        self.budget_bytes = BUDGET_BYTES if budget_bytes is None else budget_bytes
        self._held: OrderedDict[Key, _Held] = OrderedDict()
        self._lock = asyncio.Lock()  # one search brings a matrix up to date at a time

    @property
    def nbytes(self) -> int:
        """The memory the matrices take."""
        return sum(held.matrix.nbytes for held in self._held.values())

    async def ranking(
        self,
        session_key: str,
        query: Sequence[float],
        spans: Sequence[tuple[int, int]],
        depth: int,
    ) -> tuple[Ranked, Ranked]:
        """The closest of the session's rows in `spans` (id spans, inclusive), then the
        closest of the others, `depth` in all, each best first with its cosine."""
        async with self._lock:
            held = await self._current(session_key, len(query))
            older = await self._older_in_spans(held, session_key, len(query), spans, depth)
            snapshot = held.matrix.snapshot()
        return await asyncio.to_thread(_ranked, snapshot, older, query, spans, depth)

    def stored(self, rows: Sequence[tuple[int, str]]) -> None:
        """Rows (id, session) whose vectors this process just stored: held matrices read
        the ones below their newest row at the next search (the newer ones, always)."""
        self._drop_stale()
        for key, held in list(self._held.items()):
            below = {
                row_id
                for row_id, session_key in rows
                if session_key == key[0]
                and row_id <= held.newest_id
                and (held.floor_id is None or row_id >= held.floor_id)
            }
            held.waiting |= below
            if len(held.waiting) > MAX_WAITING_ROWS:
                del self._held[key]

    def forget(self, session_key: str, row_ids: Collection[int]) -> None:
        """Rows found removed or refused: never ranked again."""
        for (held_session, _), held in self._held.items():
            if held_session == session_key:
                held.matrix.remove(row_ids)

    def clear(self) -> None:
        """Drop every matrix."""
        self._held.clear()

    async def _current(self, session_key: str, dimensions: int) -> _Held:
        """The session's matrix, read now or brought up to date."""
        self._drop_stale()
        key = (session_key, dimensions)
        held = self._held.get(key)
        if held is not None:
            await self._catch_up(session_key, held)
            if held.matrix.rows > self._most_rows(dimensions):
                held = None  # outgrown: read again, newest first
        if held is None:
            held = await self._read(session_key, dimensions)
        held.used_at = time.monotonic()
        # (Set again: `stored` may have dropped it while this search read the database.)
        self._held[key] = held
        self._held.move_to_end(key)
        self._within_budget()
        return held

    async def _read(self, session_key: str, dimensions: int) -> _Held:
        """Read the session's vectors newest first, up to three quarters of the budget (the
        rest is room to grow)."""
        held = _Held(RowMatrix(dimensions), read_at=time.monotonic())
        most_rows = self._most_rows(dimensions) * 3 // 4
        below: int | None = None
        while True:
            limit = min(READ_ROWS, most_rows - held.matrix.rows)
            found = await self.store.newest(
                session_key, self.maker, limit, below_id=below, dimensions=dimensions
            )
            if not found:
                return held
            held.matrix.add(found)
            held.newest_id = max(held.newest_id, found[0][0])
            below = found[-1][0]
            if len(found) < limit:
                return held
            if held.matrix.rows >= most_rows:
                held.floor_id = below
                return held

    def _most_rows(self, dimensions: int) -> int:
        """How many rows of `dimensions` the budget holds."""
        return self.budget_bytes // (dimensions + ROW_OVERHEAD_BYTES)

    async def _catch_up(self, session_key: str, held: _Held) -> None:
        """Read the rows embedded since the matrix was read or last caught up."""
        dimensions = held.matrix.dimensions
        while True:
            found = await self.store.after(
                session_key, self.maker, dimensions, held.newest_id, READ_ROWS
            )
            if found:
                held.matrix.add(found)
                held.newest_id = found[-1][0]
            if len(found) < READ_ROWS:
                break
        if held.waiting:
            waiting, held.waiting = sorted(held.waiting), set()
            found = await self.store.by_ids(session_key, self.maker, waiting)
            held.matrix.add(found)

    async def _older_in_spans(
        self,
        held: _Held,
        session_key: str,
        dimensions: int,
        spans: Sequence[tuple[int, int]],
        depth: int,
    ) -> list[tuple[int, bytes]]:
        """The newest `depth` rows of each span that lie below the matrix (left out for
        the budget), read to be ranked with the ones held: a question about a day long ago
        can still be answered by meaning."""
        floor = held.floor_id
        if floor is None:
            return []
        found: list[tuple[int, bytes]] = []
        for first, last in spans:
            if first < floor:
                span = (first, min(last, floor - 1))
                found += await self.store.newest(
                    session_key, self.maker, depth, within=span, dimensions=dimensions
                )
        return found

    def _drop_stale(self) -> None:
        """Drop the matrices not searched lately, and those read long ago."""
        now = time.monotonic()
        for key, held in list(self._held.items()):
            if now - held.used_at > IDLE_SECONDS or now - held.read_at > REREAD_SECONDS:
                del self._held[key]

    def _within_budget(self) -> None:
        """Give up the least recently searched matrices until all fit the budget (the one
        just searched stays)."""
        while len(self._held) > 1 and self.nbytes > self.budget_bytes:
            self._held.popitem(last=False)


def _ranked(
    matrix: RowMatrix,
    older: list[tuple[int, bytes]],
    query: Sequence[float],
    spans: Sequence[tuple[int, int]],
    depth: int,
) -> tuple[Ranked, Ranked]:
    """The ranking of `RowMatrices.ranking`, over the rows held and the `older` ones."""
    ids, scores = matrix.scores(query)
    inside = in_spans(ids, spans)
    period_ids, period_scores = ids[inside], scores[inside]
    if older:
        extra = RowMatrix(matrix.dimensions)
        extra.add(older)
        extra_ids, extra_scores = extra.scores(query)
        period_ids = np.concatenate([period_ids, extra_ids])
        period_scores = np.concatenate([period_scores, extra_scores])
    in_period = best(period_ids, period_scores, depth)
    others = best(ids[~inside], scores[~inside], depth - len(in_period))
    return in_period, others
