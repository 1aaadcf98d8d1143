"""OpenAI-compatible `/embeddings` client (optional semantic search for memories)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import httpx

from .errors import BODY_EXCERPT_CHARS, LLMError
from .llm import Endpoint

EMBEDDING_TIMEOUT_SECONDS = 15.0
PAUSE_INITIAL_SECONDS = 60.0
PAUSE_MAX_SECONDS = 600.0


class EmbeddingClient:
    """Turns texts into vectors; any failure raises LLMError so callers can fall back.

    After a failure the client pauses (60 s, doubling up to 10 min while failures go on) and
    fails at once meanwhile: a down or hanging server must not cost every turn a timeout."""

    enabled = True

    def __init__(
        self,
        http: httpx.AsyncClient,
        endpoint: Endpoint,
        *,
        timeout_seconds: float = EMBEDDING_TIMEOUT_SECONDS,
        pause_initial_seconds: float = PAUSE_INITIAL_SECONDS,
        pause_max_seconds: float = PAUSE_MAX_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.http = http
        self.endpoint = endpoint
        self.timeout_seconds = timeout_seconds
        self.pause_initial_seconds = pause_initial_seconds
        self.pause_max_seconds = pause_max_seconds
        self.clock = clock
        self._pause_seconds = 0.0  # the current pause; 0 while the server answers
        self._paused_until = 0.0

    @property
    def paused(self) -> bool:
        """Whether calls are skipped because the server failed recently."""
        return self.clock() < self._paused_until

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, from the `/embeddings` endpoint."""
        if not texts:
            return []
        if self.paused:
            remaining = self._paused_until - self.clock()
            raise LLMError("paused", f"embeddings: paused for {remaining:.0f} s after a failure")
        try:
            vectors = await self._request(texts)
        except LLMError:
            self._pause()
            raise
        self._pause_seconds = 0.0
        return vectors

    def _pause(self) -> None:
        """Pause after a failure; each failure in a row doubles the pause, up to the max."""
        doubled = self._pause_seconds * 2 if self._pause_seconds else self.pause_initial_seconds
        self._pause_seconds = min(doubled, self.pause_max_seconds)
        self._paused_until = self.clock() + self._pause_seconds

    async def _request(self, texts: Sequence[str]) -> list[list[float]]:
        headers = (
            {"Authorization": f"Bearer {self.endpoint.api_key}"} if self.endpoint.api_key else {}
        )
        url = self.endpoint.api_base.rstrip("/") + "/embeddings"
        try:
            response = await self.http.post(
                url,
                json={"model": self.endpoint.model, "input": list(texts)},
                headers=headers,
                timeout=self.timeout_seconds,
            )
        except httpx.HTTPError as exc:
            raise LLMError("unreachable", f"embeddings: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise LLMError("http", response.text[:BODY_EXCERPT_CHARS], response.status_code)
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise LLMError(
                "garbage", f"embeddings: {response.text[:BODY_EXCERPT_CHARS]!r}"
            ) from exc
        if len(vectors) != len(texts) or any(not v for v in vectors):
            raise LLMError("garbage", "embeddings: wrong number of vectors")
        return vectors


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity (0 for mismatched or zero vectors)."""
    if len(a) != len(b) or not a:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class NoEmbeddings:
    """No embedding model configured: memories are found by their words alone."""

    enabled = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Always fails, as a client that is off."""
        raise LLMError("off", "no embedding model is configured")


Embedder = EmbeddingClient | NoEmbeddings
