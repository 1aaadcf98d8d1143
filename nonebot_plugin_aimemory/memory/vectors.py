"""Optional embeddings of memories: the vector of a text (or none while the server is
down), the semantic part of a search score, and the backfill of memories stored without
a vector, started again whenever the embedding server answers after an outage."""

from __future__ import annotations

import logging
from dataclasses import replace

from ..engine.background import Background
from ..engine.embeddings import Embedder, cosine
from ..engine.errors import LLMError
from ..store.memory_store import MemoryStore
from .index import ScopeIndex

logger = logging.getLogger("nonebot_plugin_aimemory")

SEMANTIC_FLOOR = 0.35


def semantic_score(query_vector: list[float], embedding: list[float]) -> float:
    """How much closer than `SEMANTIC_FLOOR` the two vectors are, scaled to 0..1."""
    similarity = cosine(query_vector, embedding)
    if similarity <= SEMANTIC_FLOOR:
        return 0.0
    return (similarity - SEMANTIC_FLOOR) / (1 - SEMANTIC_FLOOR)


class MemoryVectors:
    """Computes and stores the vectors of memories; keyword search never waits for them."""

    def __init__(self, store: MemoryStore, index: ScopeIndex, embedder: Embedder) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        # Set when a memory was stored without a vector while embeddings are configured: the
        # next successful embedding call starts a backfill for it.
        self._vectors_missing = False
        self._backfilling = False
        self._background = Background("embedding backfill")

    async def embed_quietly(self, text: str) -> list[float] | None:
        """The vector of `text`, or None when embeddings are off or the server fails."""
        if not self.embedder.enabled:
            return None
        try:
            vector = (await self.embedder.embed([text]))[0]
        except LLMError as exc:
            if exc.kind == "paused":
                logger.debug("embedding paused, keyword search only: %s", exc)
            else:
                logger.info("embedding unavailable, keyword search only: %s", exc)
            return None
        self._resume_backfill()
        return vector

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
                            vectors = await self.embedder.embed([text for _, text in batch])
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
            return await self.backfill()
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
