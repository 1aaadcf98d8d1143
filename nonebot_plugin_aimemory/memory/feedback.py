"""Pseudo-relevance feedback for the model's memory searches, as the chat log's
(store/chat_log_feedback.py): the best few memories of the keyword ranking lend the rarest
content words the query did not hold, each weighing at most `FEEDBACK_WEIGHT` of a query
word, and the scope is scored again with them. Only the model's `memory_search` does this:
a person's search (`~记忆 搜索`, the panel) finds what holds their words, and the memories
injected on their own are found by the message's words alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..store.chat_log_feedback import FEEDBACK_ROWS, FEEDBACK_TERMS, FEEDBACK_WEIGHT
from ..text import query as query_module
from .keywords import weighted_term_scores, word_scores

if TYPE_CHECKING:
    from .index import IndexedMemory

Ranked = list[tuple["IndexedMemory", float]]


def with_feedback(asked: Sequence[str], ranked: Ranked, entries: Sequence[IndexedMemory]) -> Ranked:
    """`ranked` (the keyword ranking of `entries` for the query terms `asked`, best first)
    with what the feedback words of its best memories add, best first again (ties newest
    first). A memory they alone find joins the ranking."""
    added = _feedback_words(asked, ranked, entries)
    if not added:
        return ranked
    scores = {entry.record.id: score for entry, score in ranked}
    by_id = {entry.record.id: entry for entry in entries}
    for memory_id, extra in weighted_term_scores(entries, added).items():
        scores[memory_id] = scores.get(memory_id, 0.0) + extra
    order = sorted(scores, key=lambda i: (scores[i], by_id[i].record.updated_at), reverse=True)
    return [(by_id[memory_id], scores[memory_id]) for memory_id in order]


def _feedback_words(
    asked: Sequence[str], ranked: Ranked, entries: Sequence[IndexedMemory]
) -> dict[str, float]:
    """The added words and their weights: the best memories' content words the query did
    not ask for and other memories hold, by their summed share of the best score times
    their idf, the strongest weighing `FEEDBACK_WEIGHT`."""
    best = [(entry, score) for entry, score in ranked[:FEEDBACK_ROWS] if score > 0]
    if not best:
        return {}
    known = set(asked)
    shares: dict[str, float] = {}
    held_by: dict[str, int] = {}
    for entry, score in best:
        for term in query_module.analyse(entry.record.content).terms:
            if term not in known:
                shares[term] = shares.get(term, 0.0) + score / best[0][1]
                held_by[term] = held_by.get(term, 0) + 1
    if not shares:
        return {}
    idf, holding = word_scores(entries, frozenset(shares))
    weights = {t: s * idf[t] for t, s in shares.items() if holding.get(t, 0) > held_by[t]}
    chosen = sorted(weights, key=lambda term: (-weights[term], term))[:FEEDBACK_TERMS]
    if not chosen or weights[chosen[0]] <= 0:
        return {}
    strongest = weights[chosen[0]]
    return {term: FEEDBACK_WEIGHT * weights[term] / strongest for term in chosen}
