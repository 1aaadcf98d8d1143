"""Optional vectors of chat-log rows (`aimemory_chat_log_embeddings`): rows are embedded in
the background after the flush that wrote them, many to a request, never on a reply's path;
rows left without a vector (the server was down, the bot stopped first, the key was just
turned on) are filled in newest first, at start and whenever the server answers again; and
a search ranks a session's rows by their cosine to the query.

A search reads at most `scan_rows` vectors of its session whole (the cosine is Python: 6 to
14 us a row of 384 dimensions on the bench's 2-core machine, idle to busy), the rows of the
periods the query names first, then the newest. Older rows are ranked first by their
sketches (sign bits, a Hamming distance per row: well under a microsecond), and the closest
`DEEP_ROWS` of them are read whole and ranked by cosine with the rest: a question about
something said long ago can still be answered by meaning. No vector is kept in memory
between searches: RAM is what a small VPS lacks.

Each vector is recorded with its maker (model and prefix convention). After a change of
either, the rows are embedded again in the background, newest first, with progress in the
log; meanwhile a search compares only vectors of the current maker, and rows without one
rank by keyword alone."""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Sequence

from ..engine.background import Background
from ..engine.embeddings import Embedder, EmbeddingClient, VectorMaker
from ..engine.errors import LLMError
from ..store.chat_log_index import PeriodBoost
from ..store.chat_log_store import ChatRow
from ..store.chat_log_vectors import (
    ChatLogVectorStore,
    QueryVector,
    Unembedded,
    pack_sketch,
    sketch_bits,
)
from ..text.encodable import encodable

logger = logging.getLogger("nonebot_plugin_aimemory")

# Texts per embedding request: one request per flush or backfill step, not one per row.
EMBED_BATCH_ROWS = 64
# The start of a long message says what it is about, and a model's input has a limit
# (multilingual-e5: 512 tokens); this also bounds the tokens a row can cost.
EMBED_MAX_CHARS = 1000
# Rows written while the worker is busy wait here; beyond this many (a server that hangs
# while a busy group chats) they are left to the backfill.
MAX_PENDING_ROWS = 5000
# Vector components one search may score: 2 000 rows of a 384-dimensional model (500 of a
# 1 536-dimensional one). On the bench's busy 2-core machine that ranking took 28 ms at the
# median (38 ms p99), the whole hybrid search 32 to 43 ms (p99 52 to 66 ms, with the query's
# embedding; bench/retrieval.py's hybrid latency line); 4 000 rows took 70 ms and 160 ms.
SCAN_COMPONENTS = 2000 * 384
# Older rows read whole after their sketches ranked them: binary quantisation loses the
# order among near neighbours, not the neighbourhood, so a few hundred rescored rows hold
# the nearest ones (rescoring is how binary vector search is used, e.g. Cohere's and
# Hugging Face's write-ups on embedding quantisation).
DEEP_ROWS = 500
# A backfill logs its progress every this many rows.
PROGRESS_ROWS = 2000


def scan_rows(dimensions: int) -> int:
    """How many vectors of `dimensions` one search scans at most."""
    return max(1, SCAN_COMPONENTS // max(1, dimensions))


def embedded_text(text: str) -> str:
    """What is embedded of a row's text (or a query)."""
    return encodable(text)[:EMBED_MAX_CHARS]


def embeddable(row: ChatRow) -> bool:
    """Whether a row gets a vector: not refused (it is never sent to a model again), not
    empty."""
    return row.id > 0 and not row.refused and bool(row.text.strip())


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
        self._worker: asyncio.Task[None] | None = None
        self._background = Background("chat log vectors")
        self._closed = False
        self._progress = _Progress(maker)

    def start(self) -> None:
        """Fill in, in the background, the vectors rows are missing."""
        self._closed = False
        self._missing, self._below_id = True, None
        self._wake()

    async def close(self) -> None:
        """Stop embedding: what is not done is found again by the next start's backfill."""
        self._closed = True
        await self._background.close(cancel=True)
        self._pending.clear()

    def written(self, rows: Sequence[ChatRow]) -> None:
        """Rows just written (with their ids): embed them in the background (never awaits)."""
        fresh = [Unembedded(row.id, row.session_key, row.text) for row in rows if embeddable(row)]
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
        """The session's rows (ids) by cosine to `query_vector`, best first: the newest of
        the periods in `periods` ahead of the rest, as a keyword match scores more for
        being said then; then the newest of all and the older rows closest by sketch."""
        bound = scan_rows(len(query_vector))
        in_period: dict[int, bytes] = {}
        for boost in periods:
            if len(in_period) >= bound:
                break
            span = (boost.first_id, boost.last_id)
            found = await self.store.newest(
                session_key, self.maker, bound - len(in_period), within=span
            )
            in_period.update(found)
        others: dict[int, bytes] = {}
        newest = await self.store.newest(session_key, self.maker, bound)
        if len(in_period) < bound:
            # The newest rows may be in a period already: read enough to fill the bound.
            for row_id, packed in newest:
                if row_id not in in_period and len(in_period) + len(others) < bound:
                    others[row_id] = packed
        if len(newest) == bound:  # older rows exist: their sketches pick the closest
            older = await self._closest_older(session_key, query_vector, newest[-1][0])
            others.update((row_id, packed) for row_id, packed in older if row_id not in in_period)
        query = QueryVector.of(query_vector)
        return await asyncio.to_thread(
            lambda: [*_by_similarity(query, in_period), *_by_similarity(query, others)]
        )

    async def _closest_older(
        self, session_key: str, query_vector: Sequence[float], below_id: int
    ) -> list[tuple[int, bytes]]:
        """The vectors of the `DEEP_ROWS` rows older than `below_id` whose sketches are
        closest to the query's."""
        sketches = await self.store.sketches_below(session_key, self.maker, below_id)
        if not sketches:
            return []
        query = sketch_bits(pack_sketch(query_vector))
        closest = await asyncio.to_thread(_closest_by_sketch, query, sketches, DEEP_ROWS)
        return await self.store.by_ids(session_key, self.maker, closest)

    def _wake(self) -> None:
        if self._closed or (self._worker is not None and not self._worker.done()):
            return
        if self._pending or self._missing:
            self._worker = self._background.spawn(self._work(), name="embed rows")

    async def _work(self) -> None:
        """Embed the pending rows, then look for rows without a vector, one batch at a
        time, until both are done or the server fails."""
        try:
            await self._embed_until_done()
        except BaseException:
            # Cancelled at shutdown, or the database failed: the batch in hand is lost.
            self._missing, self._below_id = True, None
            raise

    async def _embed_until_done(self) -> None:
        while True:
            resume_below: int | None = None  # where the backfill goes on after this batch
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
                vectors = await self.embedder.embed([embedded_text(row.text) for row in batch])
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
            if resume_below is not None:
                self._below_id = resume_below
                self._progress.done(len(batch))


class _Progress:
    """The log lines of a backfill worth reporting (a new model, a long outage): how many
    rows it has to embed, every `PROGRESS_ROWS` done, and its end."""

    def __init__(self, maker: VectorMaker) -> None:
        self.maker = maker
        self.total = 0
        self.embedded = 0
        self._reported = 0

    async def begin(self, store: ChatLogVectorStore) -> None:
        self.total, self.embedded, self._reported = await store.unembedded_count(self.maker), 0, 0
        if self.total >= PROGRESS_ROWS:
            logger.info(
                "chat-log vectors: embedding %d rows with %s (%s), newest first; until then "
                "they are found by keyword",
                self.total,
                self.maker.model,
                self.maker.convention,
            )

    def done(self, rows: int) -> None:
        self.embedded += rows
        if self.total >= PROGRESS_ROWS and self.embedded - self._reported >= PROGRESS_ROWS:
            self._reported = self.embedded
            logger.info("chat-log vectors: %d of %d rows embedded", self.embedded, self.total)

    def end(self) -> None:
        if self.total >= PROGRESS_ROWS:
            logger.info("chat-log vectors: all %d rows embedded", self.embedded)
        self.total = 0


def _closest_by_sketch(query: int, sketches: list[tuple[int, bytes]], count: int) -> list[int]:
    """The ids of the `count` sketches nearest `query` in Hamming distance, nearest first."""
    distances = [
        ((query ^ sketch_bits(sketch)).bit_count(), -row_id) for row_id, sketch in sketches
    ]
    return [-negated for _, negated in heapq.nsmallest(count, distances)]


def _by_similarity(query: QueryVector, vectors: dict[int, bytes]) -> list[tuple[int, float]]:
    scored = [(row_id, query.similarity(packed)) for row_id, packed in vectors.items()]
    scored.sort(key=lambda pair: (pair[1], pair[0]), reverse=True)
    return scored


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


RowVectors = ChatLogVectors | NoChatLogVectors


def row_vectors(store: ChatLogVectorStore, embedder: Embedder, *, wanted: bool) -> RowVectors:
    """Vectors for chat-log rows when `wanted` (aimemory_chat_log_embeddings) and an
    embedding model is configured; the client is the memories' own, so one outage pauses
    both."""
    if not wanted or not isinstance(embedder, EmbeddingClient):
        return NoChatLogVectors()
    return ChatLogVectors(store, embedder, embedder.maker)
