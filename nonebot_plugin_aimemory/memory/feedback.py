"""Pseudo-relevance feedback for the model's memory searches (text/feedback.py), as the chat
log's: the best few memories of the keyword ranking lend the rarest content words the
query did not hold, and the scope is scored again with them. Only the model's
`memory_search` does this: a person's search (`~记忆 搜索`, the panel) finds what holds
their words, and the memories injected on their own are found by the message's words
alone."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..text import FEEDBACK_ROWS, candidate_words, chosen_words
from .keywords import held_terms, weighted_term_scores, word_idf

if TYPE_CHECKING:
    from .index import IndexedMemory

Ranked = list[tuple["IndexedMemory", float]]


def with_feedback(asked: Sequence[str], ranked: Ranked, entries: Sequence[IndexedMemory]) -> Ranked:
    """`ranked` (the keyword ranking of `entries` for the query terms `asked`, best first)
    with what the feedback words of its best memories add, best first again (ties newest
    first). A memory they alone find joins the ranking."""
    best = [(entry.query_terms, score) for entry, score in ranked[:FEEDBACK_ROWS] if score > 0]
    if not best:
        return ranked
    shares, held_by = candidate_words(best, set(asked))
    if not shares:
        return ranked
    # What each entry holds of the candidates, found once: their idf, then the chosen's scores.
    held = held_terms(entries, frozenset(shares))
    holding = Counter(itertools.chain.from_iterable(held))
    added = chosen_words(shares, held_by, holding, lambda count: word_idf(len(entries), count))
    if not added:
        return ranked
    scores = {entry.record.id: score for entry, score in ranked}
    for memory_id, extra in weighted_term_scores(entries, added, held).items():
        scores[memory_id] = scores.get(memory_id, 0.0) + extra
    by_id = {entry.record.id: entry for entry in entries}
    order = sorted(scores, key=lambda i: (scores[i], by_id[i].record.updated_at), reverse=True)
    return [(by_id[memory_id], scores[memory_id]) for memory_id in order]
