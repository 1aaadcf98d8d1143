"""The retrieval bench's textbook baselines: Okapi BM25 (k1 1.2, b 0.75, Lucene's idf) over
jieba's search-mode words or lower-cased English words; dense cosine of an `/embeddings`
endpoint's vectors (`input_type` marks query and passage); RRF (k 60) of the two."""

from __future__ import annotations

import logging
import math
import operator
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import httpx

BM25_K1, BM25_B = 1.2, 0.75
RRF_K = 60
EMBED_BATCH_TEXTS = 32
EMBED_TIMEOUT_SECONDS = 300.0
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
