"""Optional embeddings of memories: the vector of a text (or none while the server is
down), the vector ranking of a scope's memories, the similarity of a query to everyday
sentences (what "unrelated" looks like to this model), and the backfill of memories stored
without a vector, started again whenever the embedding server answers after an outage."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from ..engine import Background, Embedder, LLMError, TextRole, cosine
from ..store import MemoryStore
from .index import IndexedMemory, ScopeIndex
from .relevance import UNRELATED_SENTENCES

logger = logging.getLogger("nonebot_plugin_aimemory")


def vector_ranking(
    query_vector: Sequence[float], entries: Sequence[IndexedMemory]
) -> list[tuple[IndexedMemory, float]]:
    """Every entry with a vector, most similar first, with its cosine similarity. A vector
    of another length (made by another model) is left out, as if it were missing."""
    ranked = [
        (entry, cosine(query_vector, entry.record.embedding))
        for entry in entries
        if entry.record.embedding and len(entry.record.embedding) == len(query_vector)
    ]
    ranked.sort(key=lambda pair: pair[1], reverse=True)
    return ranked


class MemoryVectors:
    """Computes and stores the vectors of memories; keyword search never waits for them."""

    def __init__(self, store: MemoryStore, index: ScopeIndex, embedder: Embedder) -> None:
        self.store = store
        self.index = index
        self._embedder = embedder
        store.maker = embedder.maker
        # Set when a memory was stored without a vector while embeddings are configured: the
        # next successful embedding call starts a backfill for it.
        self._vectors_missing = False
        self._backfilling = False
        self._background = Background("embedding backfill")
        self._unrelated: list[list[float]] | None = None

    @property
    def embedder(self) -> Embedder:
        """The embedding client (NoEmbeddings when none is configured)."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._unrelated = None  # another model: another idea of "unrelated"
        if embedder.maker != self.store.maker:
            # Vectors of the old maker are not compared with the new one's queries: read
            # the scopes again, and let the backfill make them anew.
            self.store.maker = embedder.maker
            self.index.forget_all()
            self._vectors_missing = True

    async def embed_quietly(self, text: str, role: TextRole = "passage") -> list[float] | None:
        """The vector of `text` (stored, or a `query` searched for), or None when embeddings
        are off or the server fails."""
        if not self.embedder.enabled:
            return None
        try:
            vector = (await self.embedder.embed([text], role))[0]
        except LLMError as exc:
            if exc.kind == "paused":
                logger.debug("embedding paused, keyword search only: %s", exc)
            else:
                logger.info("embedding unavailable, keyword search only: %s", exc)
            return None
        self._resume_backfill()
        return vector

    async def unrelated_similarity(self, query_vector: Sequence[float]) -> float | None:
        """How similar the query is to the most similar of a few everyday sentences (see
        relevance.py), or None while those cannot be embedded. Their vectors are computed
        once, in one request, on first use."""
        if self._unrelated is None:
            if not self.embedder.enabled:
                return None
            try:
                self._unrelated = await self.embedder.embed(UNRELATED_SENTENCES, "passage")
            except LLMError as exc:
                logger.debug("everyday sentences not embedded, vectors are no evidence: %s", exc)
                return None
        return max(cosine(query_vector, vector) for vector in self._unrelated)

    def note_stored(self, embedding: list[float] | None) -> None:
        """Remember that a memory was stored without a vector, to backfill it later."""
        if embedding is None and self.embedder.enabled:
            self._vectors_missing = True

    async def backfill(self, batch_size: int = 32) -> int:
        """Compute vectors for memories stored without one, until none is left or the
        embedding server fails; returns how many were filled."""
        if not self.embedder.enabled:
            return 0
        self._backfilling = True
        self._vectors_missing = False
        filled = 0
        try:
            while True:
                missing = await self.store.missing_embeddings(limit=batch_size * 8)
                done_this_round = 0
                for scope, ids_and_texts in missing:
                    for start in range(0, len(ids_and_texts), batch_size):
                        batch = ids_and_texts[start : start + batch_size]
                        try:
                            vectors = await self.embedder.embed(
                                [text for _, text in batch], "passage"
                            )
                        except LLMError as exc:
                            logger.info("embedding backfill stopped: %s", exc)
                            self._vectors_missing = True
                            return filled
                        done_this_round += await self._store_vectors(scope, batch, vectors)
                filled += done_this_round
                if not missing or done_this_round == 0:
                    return filled
        finally:
            self._backfilling = False

    async def close(self) -> None:
        """Cancel a backfill still running: whatever it has not filled is filled after the
        next start."""
        await self._background.close(cancel=True)

    def _resume_backfill(self) -> None:
        """The embedding server answers again: fill in what was stored while it did not."""
        if not self._vectors_missing or self._backfilling:
            return
        self._backfilling = True  # until the task starts: one backfill at a time
        self._background.spawn(self._backfill_in_background())

    async def _backfill_in_background(self) -> int:
        try:
            filled = await self.backfill()
            if filled and self.store.maker is not None:
                maker = self.store.maker
                logger.info(
                    "memory vectors: %d memories embedded with %s (%s)",
                    filled,
                    maker.model,
                    maker.convention,
                )
            return filled
        except Exception:
            # Database closed at shutdown, disk full...: try again after the next success.
            logger.exception("embedding backfill failed; keyword search still works")
            self._vectors_missing = True
            return 0

    async def _store_vectors(
        self, scope: str, batch: list[tuple[str, str]], vectors: list[list[float]]
    ) -> int:
        """Write backfilled vectors, skipping entries whose content changed meanwhile."""
        async with self.index.writing(scope) as loaded:
            fresh: dict[str, list[float]] = {}
            for (memory_id, text), vector in zip(batch, vectors, strict=True):
                entry = loaded.entries.get(memory_id)
                if entry is not None and entry.record.content == text:
                    fresh[memory_id] = vector
                    entry.record = replace(entry.record, embedding=vector)
            if fresh:
                await self.store.set_embeddings(scope, fresh)
        return len(fresh)
