"""Hybrid ranking, shared by memory and chat-log search: the keyword ranking and the vector
ranking fused by a convex combination of their scores, each normalised to 0..1 over its
own ranking (min-max): the keyword score's place between the query's weakest and best
match, and the cosine's. Bruch, Gai & Ingber (ACM TOIS 2023, "An Analysis of Fusion
Functions for Hybrid Retrieval") found this better than reciprocal rank fusion.

The two sides' shares follow how sure each is of this query (`confidence`: how far its
best score stands out of its first fifty), not a constant: half and half fell below
keyword search alone when the vectors were weak for a kind of question (e5 over chat lines
without their speaker, asked about people: LoCoMo R@10 61.9 against keywords' 63.6,
offline), and the confidence weighting did not (65.1), while on the four sets with good
vectors it stayed within a point of half and half.

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

# How many of a side's best scores its confidence compares its best with.
CONFIDENCE_DEPTH = 50


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
    keyword_share = keyword_share_of(keyword, vector)
    fused: dict[T, float] = {}
    for item, place in keyword_places.items():
        keyword_score = min(place, coverage.get(item, 1.0))
        vector_score = vector_scores.get(item, place)  # no vector: the keyword's place
        fused[item] = keyword_share * keyword_score + (1 - keyword_share) * vector_score
    for item, score in vector_scores.items():
        if item not in fused:
            fused[item] = (1 - keyword_share) * score
    # Stable: equal fused scores keep keyword order, then vector order.
    return sorted(fused.items(), key=lambda pair: pair[1], reverse=True)


def keyword_share_of(
    keyword: Sequence[tuple[T, float]], vector: Sequence[tuple[T, float]]
) -> float:
    """The keyword side's share of the fused score, the vector side having the rest: each
    side's `confidence` over both (half each when neither stands out)."""
    keyword_confidence, vector_confidence = confidence(keyword), confidence(vector)
    both = keyword_confidence + vector_confidence
    return keyword_confidence / both if both > 0 else 0.5


def confidence(ranking: Sequence[tuple[T, float]]) -> float:
    """How far a ranking's best score stands out of its `CONFIDENCE_DEPTH` best, in the
    ranking's whole spread (0..1): a side that knows the answer has one or a few scores
    well above the rest; a side that does not (vectors of the texts alone asked about a
    person, or words every line holds) has a flat top. A query-performance predictor of
    the kind of Zhou & Croft's weighted information gain (SIGIR 2007). A ranking of one
    stands out fully."""
    scores = sorted((score for _, score in ranking), reverse=True)
    if len(scores) < 2:
        return 1.0 if scores else 0.0
    spread = scores[0] - scores[-1]
    if spread <= 0:
        return 0.0
    best = scores[:CONFIDENCE_DEPTH]
    return (scores[0] - sum(best) / len(best)) / spread


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
