"""Hybrid ranking, shared by memory and chat-log search: the keyword ranking and the vector
ranking fused by rank (reciprocal rank fusion, Cormack, Clarke & Büttcher, SIGIR 2009).
Positions count, not scores, so neither a BM25 score nor a cosine, each on a scale of its
own, can drown the other: a strong keyword match stays near the top whatever the vectors
say, and so does a strong vector match whatever the keywords say.

One refinement: a keyword match votes in proportion to its coverage, the share of the
query's keyword weight it matches (its score over the score of the query itself). Plain RRF
lets every memory sharing one common word with a long question outvote the memory the
vectors rank first; scaled by coverage, a match on all the query's terms votes fully and a
match on one word of ten votes a tenth.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)

# Cormack et al.'s constant: it damps the difference between the first few ranks, so one
# list's rank 1 does not outweigh an item both lists put near the top.
RRF_K = 60
# Equal votes, as in plain RRF: neither signal is known to be the better one on every kind
# of memory (names and numbers favour keywords, paraphrases vectors).
KEYWORD_WEIGHT = 1.0
VECTOR_WEIGHT = 1.0


def fuse_rankings(
    keyword: Sequence[tuple[T, float]],
    vector: Sequence[tuple[T, float]],
    coverage: Mapping[T, float],
) -> list[tuple[T, float]]:
    """Items of either ranking (each best first, with its score), best first by fused score;
    `coverage` (0..1, 1 when missing) scales each keyword match's vote.

    The vector ranking holds every item that has a vector, matched by keyword or not (dense
    recall). An item of the keyword ranking without a vector (saved while the embedding
    server was down) is placed in the vector ranking where the keyword ranking put it: it
    ranks by keyword, as if the vectors agreed."""
    keyword_ranks = competition_ranks(keyword)
    vector_ranks = competition_ranks(vector)
    fused: dict[T, float] = {}
    for item, rank in keyword_ranks.items():
        share = coverage.get(item, 1.0)
        vector_vote = (
            VECTOR_WEIGHT / (RRF_K + vector_ranks[item])
            if item in vector_ranks
            else share * VECTOR_WEIGHT / (RRF_K + rank)
        )
        fused[item] = share * KEYWORD_WEIGHT / (RRF_K + rank) + vector_vote
    for item, rank in vector_ranks.items():
        if item not in fused:
            fused[item] = VECTOR_WEIGHT / (RRF_K + rank)
    # Stable: equal fused scores keep keyword order, then vector order.
    return sorted(fused.items(), key=lambda pair: pair[1], reverse=True)


def competition_ranks(ranking: Sequence[tuple[T, float]]) -> dict[T, int]:
    """1-based ranks of a best-first ranking, equal scores sharing the better rank ("1224"):
    a tie in one signal is no order, and must not become one in the fused ranking."""
    ranks: dict[T, int] = {}
    previous: float | None = None
    rank = 0
    for position, (item, score) in enumerate(ranking, start=1):
        if score != previous:
            rank, previous = position, score
        ranks.setdefault(item, rank)
    return ranks
