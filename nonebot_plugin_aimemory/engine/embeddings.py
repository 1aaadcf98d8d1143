"""OpenAI-compatible `/embeddings` client (optional semantic search for memories), and how
a query is told from a stored text for models trained with role prefixes."""

from __future__ import annotations

import json
import math
import operator
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import httpx

from .errors import BODY_EXCERPT_CHARS, LLMError
from .llm import Endpoint
from .shared_http import MAX_RESPONSE_BYTES, CappedAnswer, SharedHttp, TransportFailure
from .usage import NO_METER, Usage, UsageMeter

EMBEDDING_TIMEOUT_SECONDS = 15.0
PAUSE_INITIAL_SECONDS = 60.0
PAUSE_MAX_SECONDS = 600.0
# A request whose connection broke off (a kept-alive HTTP/2 connection the server dropped,
# say) is sent once more, on a fresh one, before the failure pauses embeddings.
TRANSPORT_ATTEMPTS = 2
# What a text is to the model: what is searched for, or what is stored and found.
TextRole = Literal["query", "passage"]
# The instruction the e5 "-instruct" models' cards give for retrieval (queries only).
E5_INSTRUCT_QUERY_PREFIX = (
    "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "
)
# Model families whose cards require role prefixes, matched on the model name (any vendor
# path before it): the multilingual-e5 / e5 models ("query: " / "passage: "; bare text works
# but ranks worse), their instruct variants, and nomic-embed-text.
_KNOWN_PREFIXES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"(?:^|[/_-])e5[_-].*instruct", re.IGNORECASE), E5_INSTRUCT_QUERY_PREFIX, ""),
    (re.compile(r"(?:^|[/_-])e5(?:[_-]|$)", re.IGNORECASE), "query: ", "passage: "),
    (re.compile(r"nomic-embed-text", re.IGNORECASE), "search_query: ", "search_document: "),
)


@dataclass(frozen=True, slots=True)
class EmbeddingRoles:
    """How the model is told a query from a stored text: a prefix in the text, the
    request's `input_type` (servers that add the model's prefixes themselves), or nothing."""

    query_prefix: str = ""
    passage_prefix: str = ""
    input_type: bool = False

    @classmethod
    def from_setting(cls, setting: str, model: str) -> EmbeddingRoles:
        """`aimemory_embedding_prefixes`: "auto" (by the model's name), "none",
        "input_type", or "<query prefix>|<passage prefix>"; ValueError for anything else."""
        keyword = setting.strip().lower()
        if keyword == "auto":
            return cls.for_model(model)
        if keyword == "none":
            return cls()
        if keyword == "input_type":
            return cls(input_type=True)
        if "|" not in setting:
            raise ValueError('must be auto, none, input_type or "<query prefix>|<passage prefix>"')
        query_prefix, _, passage_prefix = setting.partition("|")
        return cls(query_prefix, passage_prefix)

    @classmethod
    def for_model(cls, model: str) -> EmbeddingRoles:
        """The prefixes a known model family needs; none for any other model."""
        for pattern, query_prefix, passage_prefix in _KNOWN_PREFIXES:
            if pattern.search(model):
                return cls(query_prefix, passage_prefix)
        return cls()

    def texts(self, texts: Sequence[str], role: TextRole) -> list[str]:
        """The texts as sent for this role."""
        prefix = self.query_prefix if role == "query" else self.passage_prefix
        return [prefix + text for text in texts]

    def request_fields(self, role: TextRole) -> dict[str, str]:
        """Fields the request carries beyond model and input."""
        return {"input_type": role} if self.input_type else {}

    @property
    def convention(self) -> str:
        """These roles as recorded beside each vector they made: a vector made with other
        prefixes is another vector, even of the same model."""
        if self.input_type:
            return "input_type"
        if not (self.query_prefix or self.passage_prefix):
            return "none"
        return "prefixes " + json.dumps(
            [self.query_prefix, self.passage_prefix], ensure_ascii=False
        )


@dataclass(frozen=True, slots=True)
class VectorMaker:
    """What makes the vectors compared with a query: the model and its roles' convention,
    recorded beside each stored vector. A vector of another maker (the model or the prefix
    setting changed since) is not compared and is made again in the background."""

    model: str
    convention: str


class EmbeddingClient:
    """Turns texts into vectors; any failure raises LLMError so callers can fall back.

    After a failure the client pauses (60 s, doubling up to 10 min while failures go on) and
    fails at once meanwhile: a down or hanging server must not cost every turn a timeout.
    Each answered request's usage goes to `meter` under the role "embeddings"; each request
    is bounded by `timeout_seconds` as a whole and its answer by `max_response_bytes`."""

    enabled = True

    def __init__(
        self,
        http: httpx.AsyncClient | SharedHttp,
        endpoint: Endpoint,
        *,
        roles: EmbeddingRoles | None = None,
        timeout_seconds: float = EMBEDDING_TIMEOUT_SECONDS,
        pause_initial_seconds: float = PAUSE_INITIAL_SECONDS,
        pause_max_seconds: float = PAUSE_MAX_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        meter: UsageMeter = NO_METER,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.http = SharedHttp.of(http, timeout_seconds)
        self.max_response_bytes = max_response_bytes
        self.endpoint = endpoint
        self.meter = meter
        self.roles = roles if roles is not None else EmbeddingRoles.for_model(endpoint.model)
        self.timeout_seconds = timeout_seconds
        self.pause_initial_seconds = pause_initial_seconds
        self.pause_max_seconds = pause_max_seconds
        self.clock = clock
        self._pause_seconds = 0.0  # the current pause; 0 while the server answers
        self._paused_until = 0.0

    @property
    def maker(self) -> VectorMaker:
        """What the vectors this client makes are recorded as."""
        return VectorMaker(self.endpoint.model, self.roles.convention)

    @property
    def paused(self) -> bool:
        """Whether calls are skipped because the server failed recently."""
        return self.clock() < self._paused_until

    async def embed(self, texts: Sequence[str], role: TextRole = "passage") -> list[list[float]]:
        """One vector per text, in order, from the `/embeddings` endpoint; `role` says
        whether the texts are searched for (a query) or stored (a passage)."""
        if not texts:
            return []
        if self.paused:
            remaining = self._paused_until - self.clock()
            raise LLMError("paused", f"embeddings: paused for {remaining:.0f} s after a failure")
        try:
            vectors = await self._request(texts, role)
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

    async def _post(self, url: str, content: bytes) -> CappedAnswer:
        """The answer to a POST, sent again after a retryable transport failure."""
        attempt = 1
        while True:
            try:
                return await self.http.post_capped(
                    url,
                    content=content,
                    headers=self.endpoint.json_headers,
                    timeout_seconds=self.timeout_seconds,
                    max_bytes=self.max_response_bytes,
                )
            except TransportFailure as exc:
                if not exc.retryable or attempt >= TRANSPORT_ATTEMPTS:
                    raise LLMError(exc.kind, f"embeddings: {exc}") from exc
            attempt += 1

    async def _request(self, texts: Sequence[str], role: TextRole) -> list[list[float]]:
        url = self.endpoint.api_base.rstrip("/") + "/embeddings"
        body = {
            "model": self.endpoint.model,
            "input": self.roles.texts(texts, role),
            **self.roles.request_fields(role),
        }
        response = await self._post(url, json.dumps(body).encode())
        if response.status_code >= 400:
            raise LLMError("http", response.text[:BODY_EXCERPT_CHARS], response.status_code)
        try:
            payload = response.json()
            data = sorted(payload["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise LLMError(
                "garbage", f"embeddings: {response.text[:BODY_EXCERPT_CHARS]!r}"
            ) from exc
        if len(vectors) != len(texts) or any(not v for v in vectors):
            raise LLMError("garbage", "embeddings: wrong number of vectors")
        self.meter.record("embeddings", embedding_usage(payload.get("usage")))
        return vectors


def embedding_usage(raw: object) -> Usage | None:
    """The `usage.prompt_tokens` of an embeddings answer (`total_tokens` when only that is
    given), or None when it reports none."""
    if not isinstance(raw, dict):
        return None
    tokens = raw.get("prompt_tokens")
    if not isinstance(tokens, int) or tokens <= 0:
        tokens = raw.get("total_tokens")
    return Usage(tokens) if isinstance(tokens, int) and tokens > 0 else None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity (0 for mismatched or zero vectors)."""
    if len(a) != len(b) or not a:
        return 0.0
    # map/hypot run in C: three times faster than generator sums, which matters at 200
    # memories of 384+ dimensions per search.
    norm = math.hypot(*a) * math.hypot(*b)
    return sum(map(operator.mul, a, b)) / norm if norm else 0.0


class NoEmbeddings:
    """No embedding model configured: memories are found by their words alone."""

    enabled = False
    maker = None

    async def embed(self, texts: Sequence[str], role: TextRole = "passage") -> list[list[float]]:
        """Always fails, as a client that is off."""
        raise LLMError("off", "no embedding model is configured")


Embedder = EmbeddingClient | NoEmbeddings
