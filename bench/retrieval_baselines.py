"""The retrieval bench's textbook baselines: Okapi BM25 (k1 1.2, b 0.75, Lucene's idf) over
jieba's search-mode words or lower-cased English words; dense cosine of an `/embeddings`
endpoint's vectors (`input_type` marks query and passage); RRF (k 60) of the two. And a
caching stand-in for that endpoint on 127.0.0.1: vectors from a JSON-lines file by (model,
input_type, text); only unseen texts go to the real endpoint (bench.vector_scale reads it too)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import operator
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx

from tests.panel.browser import serving

BM25_K1, BM25_B = 1.2, 0.75
RRF_K = 60
EMBED_BATCH_TEXTS = 32
EMBED_TIMEOUT_SECONDS = 300.0
CacheKey = tuple[str, str, str]  # model, input_type, text
_WORD = re.compile(r"\w+")
Tokenizer = Callable[[str], list[str]]
# A ranking of fixed documents: the indexes of the best `limit` for a query (all it ranks
# with None).
Rank = Callable[[str, int | None], list[int]]
TextKind = Literal["query", "passage"]


def chinese_tokens(text: str) -> list[str]:
    """jieba's search-mode words of `text`, lower-cased, punctuation and spaces dropped."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return [w for w in (w.strip().lower() for w in jieba.cut_for_search(text)) if _WORD.search(w)]


TOKENIZERS: dict[str, Tokenizer] = {"zh": chinese_tokens, "en": lambda t: _WORD.findall(t.lower())}


def bm25(documents: Sequence[str], tokenize: Tokenizer) -> Rank:
    """Okapi BM25 over `documents`: a query ranks those sharing a term with it."""
    term_counts = [Counter(tokenize(document)) for document in documents]
    lengths = [sum(counts.values()) for counts in term_counts]
    average_length = sum(lengths) / max(1, len(lengths))
    frequencies = Counter(term for counts in term_counts for term in counts)
    n = len(term_counts)
    idf = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in frequencies.items()}

    def rank(query: str, limit: int | None) -> list[int]:
        terms, scores = tokenize(query), {}
        for index, counts in enumerate(term_counts):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[index] / average_length)
            score = sum(
                idf[t] * counts[t] * (BM25_K1 + 1) / (counts[t] + norm)
                for t in terms
                if t in counts
            )
            if score > 0:
                scores[index] = score
        return sorted(scores, key=lambda index: (-scores[index], index))[:limit]

    return rank


@dataclass(frozen=True)
class EmbeddingEndpoint:
    """An OpenAI-compatible `/embeddings` endpoint, asked in batches for unit vectors."""

    http: httpx.AsyncClient
    base_url: str
    model: str

    async def embed(self, texts: Sequence[str], kind: TextKind) -> list[list[float]]:
        """One unit vector per text, embedded as a `kind` (`input_type`)."""
        url, vectors = self.base_url.rstrip("/") + "/embeddings", []
        for start in range(0, len(texts), EMBED_BATCH_TEXTS):
            batch = list(texts[start : start + EMBED_BATCH_TEXTS])
            body = {"model": self.model, "input": batch, "input_type": kind}
            response = await self.http.post(url, json=body, timeout=EMBED_TIMEOUT_SECONDS)
            response.raise_for_status()
            for item in sorted(response.json()["data"], key=lambda item: item["index"]):
                vector = [float(x) for x in item["embedding"]]
                norm = math.sqrt(sum(x * x for x in vector))
                vectors.append([x / norm for x in vector] if norm else vector)
        return vectors


def dense(
    texts: Sequence[str], passages: Mapping[str, list[float]], queries: Mapping[str, list[float]]
) -> Rank:
    """Cosine ranking of `texts` by their unit vectors, for queries embedded beforehand."""
    vectors = [passages[text] for text in texts]

    def rank(query: str, limit: int | None) -> list[int]:
        asked = queries[query]
        scores = [sum(map(operator.mul, vector, asked)) for vector in vectors]
        return sorted(range(len(scores)), key=lambda index: (-scores[index], index))[:limit]

    return rank


def rrf(*rankings: Sequence[int]) -> list[int]:
    """Reciprocal rank fusion of whole rankings (best first): the items of any of them by
    the sum of 1 / (RRF_K + rank) over the lists each is in."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for position, index in enumerate(ranking, start=1):
            scores[index] = scores.get(index, 0.0) + 1 / (RRF_K + position)
    return sorted(scores, key=lambda index: (-scores[index], index))


class EmbeddingCache:
    """Vectors by (model, input_type, text), loaded from and appended to a JSON-lines file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.vectors: dict[CacheKey, list[float]] = {}
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        for line in filter(str.strip, lines):
            with contextlib.suppress(ValueError):  # a line cut short by a run that was stopped
                model, input_type, text, vector = json.loads(line)
                self.vectors[(model, input_type, text)] = vector

    async def embed(self, upstream: httpx.AsyncClient, body: dict[str, Any]) -> list[list[float]]:
        """The vectors of the request's texts, asking `upstream` only for those not cached."""
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        keys = [(str(body.get("model", "")), str(body.get("input_type", "")), t) for t in texts]
        if missing := list(dict.fromkeys(key for key in keys if key not in self.vectors)):
            response = await upstream.post(
                "embeddings", json={**body, "input": [k[2] for k in missing]}
            )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            learned = {
                k: [float(x) for x in d["embedding"]] for k, d in zip(missing, data, strict=True)
            }
            self.vectors |= learned
            await asyncio.to_thread(self.append, learned)
        return [self.vectors[key] for key in keys]

    def append(self, learned: dict[CacheKey, list[float]]) -> None:
        """Add vectors to the file."""
        with self.path.open("a", encoding="utf-8") as file:
            for key, vector in learned.items():
                file.write(json.dumps([*key, vector], ensure_ascii=False) + "\n")


@asynccontextmanager
async def caching_endpoint(upstream_base: str, cache_path: Path) -> AsyncIterator[str]:
    """An API base on 127.0.0.1 serving `/embeddings` through a cache in `cache_path`."""
    from fastapi import Body, FastAPI

    cache, app = await asyncio.to_thread(EmbeddingCache, cache_path), FastAPI()
    base_url = upstream_base.rstrip("/") + "/"
    client = httpx.AsyncClient(base_url=base_url, timeout=EMBED_TIMEOUT_SECONDS, trust_env=False)
    async with client as upstream:

        @app.post("/v1/embeddings")
        async def embeddings(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
            vectors = enumerate(await cache.embed(upstream, body))
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in vectors]
            return {"object": "list", "data": data, "model": body.get("model", "")}

        async with serving(app) as root:
            yield f"{root}/v1"
