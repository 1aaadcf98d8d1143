"""Pseudo-relevance feedback for the chat log's keyword search, after RM3 (Lavrenko & Croft,
SIGIR 2001; Abdul-Jaleel et al., TREC 2004): the best few rows of the first ranking are
taken as relevant, the rarest content words they hold that the query did not are added to
it with a small weight, and the rows are ranked again.

It answers the questions that name a thing by something else said of it: "那个持续时间是
六天的活动，地点是什么？" finds the row giving the duration, which names the event, and
through the event's name the row giving its place; "what did she paint after the lake
trip" finds the trip, then what was said around it in the trip's words. A row saying the
same as the best one in other words rises too. The query's own terms keep their full
weight, an added word at most `FEEDBACK_WEIGHT` of it.

Measured on three public long-conversation benchmarks before it was built (bench/
retrieval.py's data, offline, the keyword index's terms): MemDaily R@10 +6 points, LoCoMo
+1.3 (multi-hop +1.8), MemoryBank within a point either way. The constants are RM3's usual
shape scaled to chat lines (a line holds a few words, not a document's hundreds)."""

from __future__ import annotations

from collections.abc import Sequence

from ..text import query
from .chat_log_ranking import Postings, TermMatch, bm25_idf
from .connection import Backend

# Rows taken as relevant: the best three (one is too few when the best is a near miss, ten
# too many on a line's scale: the tenth row is seldom about the question).
FEEDBACK_ROWS = 3
# Words added at most, and the weight of the best of them against a query term's 1 (RM3
# gives the original query half the weight and spreads the other half over the added words).
FEEDBACK_TERMS = 10
FEEDBACK_WEIGHT = 0.3
# Rows the added words may bring to score, at most: a word held by hundreds of rows says
# little (its idf is low) and costs bm25() time (about 3 us a row).
FEEDBACK_BUDGET_ROWS = 500


async def feedback_matches(
    database: Backend,
    postings: Postings,
    prefix: str,
    asked: Sequence[str],
    ranked: Sequence[tuple[int, float]],
    logged_rows: int,
    budget_rows: int,
) -> list[TermMatch]:
    """The feedback terms of a first ranking `ranked` (best first) of the session `prefix`
    for the query terms `asked` (prefixed), each a match of its own with its weight: the
    rarest content words of the best rows, weighted by how rare they are and how well
    their rows scored. A word only the feedback rows hold is left out (it finds nothing
    new), and so are the commonest once their rows, summed, pass `budget_rows`."""
    best = [(row_id, score) for row_id, score in ranked[:FEEDBACK_ROWS] if score > 0]
    if not best:
        return []
    texts = await _texts(database, [row_id for row_id, _ in best])
    shares, held_by = _words_of_best(best, texts, prefix, set(asked))
    if not shares:
        return []
    counts = await postings.document_counts(sorted(shares))
    weights = {
        term: share * bm25_idf(logged_rows, counts[term])
        for term, share in shares.items()
        if counts.get(term, 0) > held_by[term]
    }
    chosen = sorted(weights, key=lambda term: (-weights[term], term))[:FEEDBACK_TERMS]
    if not chosen or weights[chosen[0]] <= 0:
        return []
    strongest = weights[chosen[0]]
    matches: list[TermMatch] = []
    rows = 0
    for term in sorted(chosen, key=lambda term: (counts[term], term)):
        rows += counts[term]
        if rows > budget_rows:
            break
        matches.append(TermMatch((term,), weight=FEEDBACK_WEIGHT * weights[term] / strongest))
    return matches


def _words_of_best(
    best: Sequence[tuple[int, float]], texts: dict[int, str], prefix: str, asked: set[str]
) -> tuple[dict[str, float], dict[str, int]]:
    """The content words (prefixed) of the best rows the query did not ask for: each one's
    summed share of the best score, and how many of the rows hold it."""
    top_score = best[0][1]
    shares: dict[str, float] = {}
    held_by: dict[str, int] = {}
    for row_id, score in best:
        for term in query.analyse(texts.get(row_id, "")).terms:
            prefixed = prefix + term
            if prefixed not in asked:
                shares[prefixed] = shares.get(prefixed, 0.0) + score / top_score
                held_by[prefixed] = held_by.get(prefixed, 0) + 1
    return shares, held_by


async def _texts(database: Backend, ids: Sequence[int]) -> dict[int, str]:
    placeholders = ", ".join("?" for _ in ids)
    rows = await database.read(
        f"SELECT id, text FROM chat_log WHERE id IN ({placeholders}) AND refused = 0", ids
    )
    return {int(row_id): str(text) for row_id, text in rows}
