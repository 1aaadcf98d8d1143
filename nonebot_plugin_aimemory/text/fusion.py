"""Hybrid ranking, shared by memory and chat-log search: the keyword ranking and the vector
ranking fused by a convex combination of their scores, each normalised to 0..1 over its
own ranking (min-max): half the keyword score's place between the query's weakest and best
match, half the cosine's. Bruch, Gai & Ingber (ACM TOIS 2023, "An Analysis of Fusion
Functions for Hybrid Retrieval") found this both better than reciprocal rank fusion and
robust to the weight; measured here it was too.

Why scores and not ranks: reciprocal rank fusion, which this replaced, gives the tenth of
fifty keyword matches nearly the vote of the first, however far apart their scores are. In
a long chat where many lines share a question's words (LoCoMo: a few people, hundreds of
lines about the same things), the keyword ranking's clear winner was outvoted by lines the
vectors liked a little more, and the hybrid search found the evidence in its top 10 less
often than keyword search alone (R@10 51 against 61). A normalised score keeps a clear
winner clear on either side. Its known weakness, a gap among the weakest matches stretched
to the whole scale, is why each side is normalised over every item it scored, down to its
weakest match, not over the first few.

One refinement, kept from the rank fusion before: a keyword match counts at most its
coverage, the share of the query's keyword weight it matches (its score over the score of
the query itself). Twelve lines sharing one common word of a ten-word question are all the
best keyword match when nothing matches more, and would each get the whole keyword half;
capped by coverage they get a tenth of it, and the line the vectors rank first wins.
Measured on the bench's four sets (offline, before it was built), the cap changed R@10 by
0.3 points at most.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)

# The keyword side's share of the fused score; the vector side has the rest. Equal, as in
# Bruch et al.'s default: neither signal is known to be the better one on every kind of
# question (names and numbers favour keywords, paraphrases vectors), and 0.4 to 0.6 gave
# the same figures within a point on the retrieval bench's sets.
KEYWORD_SHARE = 0.5


def fuse_rankings(
    keyword: Sequence[tuple[T, float]],
    vector: Sequence[tuple[T, float]],
    coverage: Mapping[T, float],
) -> list[tuple[T, float]]:
    """Items of either ranking (each with its score, higher better), best first by fused
    score; a keyword match's normalised score is capped by its `coverage` (0..1, 1 when
    missing).

    The vector ranking holds every item that has a vector, matched by keyword or not (dense
    recall); an item only it holds gets no keyword share. An item of the keyword ranking
    without a vector (saved while the embedding server was down) is placed by the vectors
    where the keywords placed it: it ranks by keyword, as if the vectors agreed."""
    keyword_places = normalised(keyword)
    vector_scores = normalised(vector)
    fused: dict[T, float] = {}
    for item, place in keyword_places.items():
        keyword_score = min(place, coverage.get(item, 1.0))
        vector_score = vector_scores.get(item, place)  # no vector: the keyword's place
        fused[item] = KEYWORD_SHARE * keyword_score + (1 - KEYWORD_SHARE) * vector_score
    for item, score in vector_scores.items():
        if item not in fused:
            fused[item] = (1 - KEYWORD_SHARE) * score
    # Stable: equal fused scores keep keyword order, then vector order.
    return sorted(fused.items(), key=lambda pair: pair[1], reverse=True)


def normalised(ranking: Sequence[tuple[T, float]]) -> dict[T, float]:
    """Each item's score placed between the ranking's lowest (0) and highest (1), in the
    ranking's order; all 1 when they are equal (one item, or a tie of all). An item listed
    twice keeps its first score."""
    if not ranking:
        return {}
    scores = [score for _, score in ranking]
    low, high = min(scores), max(scores)
    spread = high - low
    placed: dict[T, float] = {}
    for item, score in ranking:
        placed.setdefault(item, (score - low) / spread if spread > 0 else 1.0)
    return placed
