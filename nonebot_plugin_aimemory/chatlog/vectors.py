"""Optional vectors of chat-log rows (`aimemory_chat_log_embeddings`): rows are embedded in
the background after the flush that wrote them, many to a request, never on a reply's path;
rows left without a vector (the server was down, the bot stopped first, the key was just
turned on) are filled in newest first, at start and whenever the server answers again; and
a search ranks a session's rows by their cosine to the query.

A search ranks every row of its session by exact cosine with numpy, over the session's
vectors held in memory (row_matrices.py: read once, then only what was embedded since;
64 MiB for all sessions, a longer chat's oldest rows left to keyword search). numpy is
imported by the first search, so a bot without chat-log vectors never loads it.

On PostgreSQL with pgvector (there, or created when the role may: store/postgres/pgvector.py)
the database ranks the session's rows itself, every one of them, by exact cosine (`<=>`):
the rows of the named periods first, then the rest, `RANKED_ROWS` in all, as in memory.
Rows stored before pgvector was there (or copied from SQLite) get their pgvector vector
from their packed bytes in the background, at start; a session with rows still waiting
for it is ranked in memory meanwhile, so no row is missed. Without pgvector
(Debian's stock server, or no permission), one log line says so and the ranking in memory
is used.

A group chat's row is embedded as its speaker's name and its text. Each vector is
recorded with its maker (model, prefix convention and that form of the row). After a change
of any, the rows are embedded again in the background, newest first, with progress in the
log; meanwhile a search compares only vectors of the current maker, and rows without one
rank by keyword alone."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ..engine import Background, Embedder, EmbeddingClient, LLMError, VectorMaker
from ..store import ChatLogVectorStore, ChatRow, PeriodBoost, Unembedded, VectorColumn
from .embedded_rows import embeddable, embedded_row, embedded_text, row_maker
from .vector_progress import BackfillProgress, FillProgress

if TYPE_CHECKING:
    from .row_matrices import RowMatrices

logger = logging.getLogger("nonebot_plugin_aimemory")

# Texts per embedding request: one request per flush or backfill step, not one per row.
EMBED_BATCH_ROWS = 64
# Rows written while the worker is busy wait here; beyond this many (a server that hangs
# while a busy group chats) they are left to the backfill.
MAX_PENDING_ROWS = 5000
# Rows of the vector ranking a search fuses with the keyword one: its scores are normalised
# over them (text/fusion.py). As deep as the scan it replaced (the newest 2 000 rows and
# the 1 500 older ones closest by sign sketch, at 384 dimensions), so the fusion weighs
# alike; pgvector's ranking holds as many.
RANKED_ROWS = 3500
# Packed vectors copied into pgvector's column per step of that background work.
FILL_BATCH_ROWS = 500
# Added to the cosine of a row said in a period the query names: more than any two cosines
# differ by (they lie in -1..1), so those rows rank ahead by score as a keyword match of the
# period does, and the rest keep their order below them.
PERIOD_LIFT = 2.0


class ChatLogVectors:
    """Embeds the chat log's rows in the background and ranks a session's rows by vector."""

    enabled = True

    def __init__(self, store: ChatLogVectorStore, embedder: Embedder, maker: VectorMaker) -> None:
        self.store = store
        self.embedder = embedder
        self.maker = maker
        self._pending: list[Unembedded] = []
        # Rows may lack a vector (a new start, a failed request, rows dropped): the worker
        # looks for them once the pending rows are done, newest first below `_below_id`.
        self._missing = True
        self._below_id: int | None = None
        # On pgvector, vectors may lack their copy in its column: the worker fills them in
        # first (no embedding request needed); a search finding some sets it again.
        self._unfilled = True
        self._worker: asyncio.Task[None] | None = None
        self._background = Background("chat log vectors")
        self._closed = False
        self._progress = BackfillProgress(maker)
        self._filling = FillProgress()
        # The sessions' vectors in memory, once a search needs them (numpy is loaded then).
        self._matrices: RowMatrices | None = None

    def start(self) -> None:
        """Fill in, in the background, the vectors rows are missing."""
        self._closed = False
        self._missing, self._below_id, self._unfilled = True, None, True
        self._wake()

    async def close(self) -> None:
        """Stop embedding: what is not done is found again by the next start's backfill."""
        self._closed = True
        await self._background.close(cancel=True)
        self._pending.clear()
        self._matrices = None

    def written(self, rows: Sequence[ChatRow]) -> None:
        """Rows just written (with their ids): embed them in the background (never awaits)."""
        fresh = [
            Unembedded(row.id, row.session_key, row.text, row.role, row.speaker_name)
            for row in rows
            if embeddable(row)
        ]
        if not fresh or self._closed:
            return  # (after close: the next start's backfill finds them)
        room = MAX_PENDING_ROWS - len(self._pending)
        if room < len(fresh):
            logger.info("chat-log vectors: %d rows left to the backfill", len(fresh) - room)
            self._missing, self._below_id = True, None
        self._pending += fresh[: max(room, 0)]
        self._wake()

    async def settle(self) -> None:
        """Wait until the background work is done: every row has a vector, or the server
        failed (for benches and tests)."""
        while self._worker is not None and not self._worker.done():
            await asyncio.wait({self._worker})

    async def backfill(self) -> None:
        """Look for rows without a vector now (rows written around the writer, as benches
        do) and wait until they have one, or the server fails."""
        self._missing, self._below_id = True, None
        self._wake()
        await self.settle()

    async def query_vector(self, text: str) -> list[float] | None:
        """The vector of a search's query, or None (logged) when the server fails: the
        search then ranks by keyword alone."""
        try:
            (vector,) = await self.embedder.embed([embedded_text(text)], "query")
        except LLMError as exc:
            level = logging.DEBUG if exc.kind == "paused" else logging.INFO
            logger.log(level, "chat-log search by keyword only, embedding failed: %s", exc)
            return None
        self._wake()  # the server answers: rows it missed can be embedded now
        return vector

    async def ranking(
        self, session_key: str, query_vector: Sequence[float], periods: Sequence[PeriodBoost]
    ) -> list[tuple[int, float]]:
        """The session's rows (ids) by cosine to `query_vector`, best first: rows of the
        periods in `periods` ahead of the rest (their cosines lifted by `PERIOD_LIFT`), as a
        keyword match scores more for being said then: the closest `RANKED_ROWS` of the
        session's rows by exact cosine, ranked by pgvector where the database has it,
        otherwise in memory."""
        column = await self._ranking_column(session_key, query_vector)
        if column is not None:
            return await self._database_ranking(column, session_key, query_vector, periods)
        matrices = await self._row_matrices()
        spans = [(boost.first_id, boost.last_id) for boost in periods]
        in_period, others = await matrices.ranking(session_key, query_vector, spans, RANKED_ROWS)
        return [*_lifted(in_period), *others]

    @property
    def held_bytes(self) -> int:
        """The memory the sessions' vectors held for searches take (for benches)."""
        return self._matrices.nbytes if self._matrices is not None else 0

    def forget(self, session_key: str, row_ids: Collection[int]) -> None:
        """Rows a search ranked that are gone or refused since their vectors were read:
        never ranked again."""
        if self._matrices is not None:
            self._matrices.forget(session_key, row_ids)

    async def _row_matrices(self) -> RowMatrices:
        """The sessions' vectors in memory; the first call imports numpy, off the event
        loop (0.1 to 0.4 s, and 14 MiB)."""
        if self._matrices is not None:
            return self._matrices
        module = await asyncio.to_thread(importlib.import_module, ".row_matrices", __package__)
        # (Another search may have made them while this one waited for the import.)
        matrices: RowMatrices = self._matrices or module.RowMatrices(self.store, self.maker)
        self._matrices = matrices
        return matrices

    async def _ranking_column(
        self, session_key: str, query_vector: Sequence[float]
    ) -> VectorColumn | None:
        """pgvector's column when it ranks this search: it is used here, takes a vector
        this long, and every vector of the session has its copy there (the missing ones
        are filled in the background, woken now in case they were copied in since)."""
        column = self.store.vector_column
        if column is None or not column.fits(query_vector):
            return None
        if await column.unfilled(session_key, self.maker):
            self._unfilled = True
            self._wake()
            return None
        return column

    async def _database_ranking(
        self,
        column: VectorColumn,
        session_key: str,
        query_vector: Sequence[float],
        periods: Sequence[PeriodBoost],
    ) -> list[tuple[int, float]]:
        """pgvector's ranking of the session's rows: the closest of the periods first, then
        the closest of the others, `RANKED_ROWS` in all."""
        spans = [(boost.first_id, boost.last_id) for boost in periods]
        in_period: list[tuple[int, float]] = []
        if spans:
            in_period = await column.nearest(
                session_key, self.maker, query_vector, RANKED_ROWS, within=spans
            )
        others = await column.nearest(
            session_key, self.maker, query_vector, RANKED_ROWS - len(in_period), outside=spans
        )
        return [*_lifted(in_period), *others]

    async def _fill_step(self) -> None:
        """Copy one batch of packed vectors into pgvector's column (none is needed without
        pgvector); done when none is left."""
        column = self.store.vector_column
        if column is None:
            self._unfilled = False
            return
        if not self._filling.counted:
            self._filling.begin(await column.unfilled_count(self.maker))
        found = await column.fill(self.maker, FILL_BATCH_ROWS)
        self._filling.done(found)
        if not found:
            self._unfilled = False

    def _wake(self) -> None:
        if self._closed or (self._worker is not None and not self._worker.done()):
            return
        if self._pending or self._missing or self._unfilled:
            self._worker = self._background.spawn(self._work(), name="embed rows")

    async def _work(self) -> None:
        """Embed the pending rows, fill in pgvector's copies, then look for rows without a
        vector, one batch at a time, until all are done or the server fails."""
        try:
            await self.store.use_vector_column()  # (looked at once, by the first worker)
            await self._embed_until_done()
        except BaseException:
            # Cancelled at shutdown, or the database failed: the batch in hand is lost.
            self._missing, self._below_id, self._unfilled = True, None, True
            raise

    async def _embed_until_done(self) -> None:
        while True:
            resume_below: int | None = None  # where the backfill goes on after this batch
            if not self._pending and self._unfilled:
                await self._fill_step()
                continue
            if not self._pending:
                if not self._missing:
                    return
                if self._below_id is None:
                    await self._progress.begin(self.store)
                found = await self.store.unembedded(self.maker, EMBED_BATCH_ROWS, self._below_id)
                if not found:
                    self._missing, self._below_id = False, None
                    self._progress.end()
                    continue  # rows written during that look (no new worker was started)
                # Rows flushed during that look are pending already: embedded once, there.
                pending = {row.id for row in self._pending}
                batch = [row for row in found if row.id not in pending]
                resume_below = found[-1].id
                if not batch:
                    self._below_id = resume_below
                    continue
            else:
                batch, self._pending = (
                    self._pending[:EMBED_BATCH_ROWS],
                    self._pending[EMBED_BATCH_ROWS:],
                )
            try:
                vectors = await self.embedder.embed([embedded_row(row) for row in batch])
            except LLMError as exc:
                level = logging.DEBUG if exc.kind == "paused" else logging.INFO
                logger.log(level, "chat-log rows left without vectors for now: %s", exc)
                # Found again by the backfill, from the newest row down, once the server
                # answers (the next flush or search that embeds something).
                self._pending.clear()
                self._missing, self._below_id = True, None
                return
            await self.store.put(
                self.maker, [(row.id, v) for row, v in zip(batch, vectors, strict=True)]
            )
            if self._matrices is not None:
                self._matrices.stored([(row.id, row.session_key) for row in batch])
            if resume_below is not None:
                self._below_id = resume_below
                self._progress.done(len(batch))


def _lifted(in_period: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The rows of the named periods with their cosines lifted by `PERIOD_LIFT`: ahead of
    every other row by score, as the fusion compares scores (text/fusion.py)."""
    return [(row_id, similarity + PERIOD_LIFT) for row_id, similarity in in_period]


class NoChatLogVectors:
    """Chat-log rows get no vectors (the default; or no embedding model): nothing is sent
    to an embedding model, searches rank by keyword."""

    enabled = False

    def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to stop."""

    def written(self, rows: Sequence[ChatRow]) -> None:
        """Nothing to embed."""

    async def settle(self) -> None:
        """Nothing to wait for."""

    async def backfill(self) -> None:
        """Nothing to fill in."""

    async def query_vector(self, text: str) -> list[float] | None:
        """No vector: keyword search."""
        return None

    async def ranking(
        self, session_key: str, query_vector: Sequence[float], periods: Sequence[PeriodBoost]
    ) -> list[tuple[int, float]]:
        """No vectors: an empty ranking."""
        return []

    def forget(self, session_key: str, row_ids: Collection[int]) -> None:
        """Nothing ranked, nothing to forget."""


RowVectors = ChatLogVectors | NoChatLogVectors


def row_vectors(store: ChatLogVectorStore, embedder: Embedder, *, wanted: bool) -> RowVectors:
    """Vectors for chat-log rows when `wanted` (aimemory_chat_log_embeddings) and an
    embedding model is configured; the client is the memories' own, so one outage pauses
    both."""
    if not wanted or not isinstance(embedder, EmbeddingClient):
        return NoChatLogVectors()
    return ChatLogVectors(store, embedder, row_maker(embedder.maker))
