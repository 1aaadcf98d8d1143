"""Pseudo-relevance feedback for the chat log's keyword search (text/feedback.py): the best
rows of the first ranking lend their rarest content words, each a match of its own scored
by the index with its weight.

Measured on three public long-conversation benchmarks before it was built (bench/
retrieval.py's data, offline, the keyword index's terms): MemDaily R@10 +6 points, LoCoMo
+1.3 (multi-hop +1.8), MemoryBank within a point either way."""

from __future__ import annotations

from collections.abc import Sequence

from ..text import FEEDBACK_ROWS, candidate_words, chosen_words, query
from .backend import Backend
from .chat_log_ranking import Postings, TermMatch, bm25_idf

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
    """The feedback words (text/feedback.py) of a first ranking `ranked` (best first) of
    the session `prefix` for the query terms `asked` (prefixed), each a match of its own
    with its weight; the commonest are left out once their rows, summed, pass
    `budget_rows`."""
    best = [(row_id, score) for row_id, score in ranked[:FEEDBACK_ROWS] if score > 0]
    if not best:
        return []
    texts = await _texts(database, [row_id for row_id, _ in best])
    best_terms = [(query.analyse(texts.get(row_id, "")).terms, score) for row_id, score in best]
    shares, held_by = candidate_words(best_terms, set(asked), prefix)
    if not shares:
        return []
    counts = await database.read_all(
        lambda connection: postings.document_counts(connection, sorted(shares))
    )
    chosen = chosen_words(shares, held_by, counts, lambda rows: bm25_idf(logged_rows, rows))
    matches: list[TermMatch] = []
    rows = 0
    for term in sorted(chosen, key=lambda term: (counts[term], term)):
        rows += counts[term]
        if rows > budget_rows:
            break
        matches.append(TermMatch((term,), weight=chosen[term]))
    return matches


async def _texts(database: Backend, ids: Sequence[int]) -> dict[int, str]:
    placeholders = ", ".join("?" for _ in ids)
    rows = await database.read(
        f"SELECT id, text FROM chat_log WHERE id IN ({placeholders}) AND refused = 0", ids
    )
    return {int(row_id): str(text) for row_id, text in rows}
