"""What a keyword search of the chat log ranks by, whichever database holds the index: the
terms a row is indexed under (`row_terms`), the matches a search scores (`TermMatch`), FTS5's
bm25() (k1, b, its idf and its floor), the periods a query names, and the interface an index
offers (`Postings`: FTS5 in sqlite/chat_log_fts5.py, term arrays in
postgres/chat_log_terms_index.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..text import encodable, segmenter
from .connection import Connection

# bm25() weights of the index's columns: who spoke counts half as much as what was said, so
# a name in a query ranks that person's rows first among rows with the same words, without
# turning every row of theirs into a strong match.
SPEAKER_WEIGHT = 0.5
TEXT_WEIGHT = 1.0
# FTS5's bm25() parameters (fts5_aux.c), which the PostgreSQL index computes with too.
BM25_K1 = 1.2
BM25_B = 0.75
# bm25()'s floor for the idf of a term held by half the rows or more (FTS5's own constant).
FTS5_MIN_IDF = 1e-6


@dataclass(frozen=True, slots=True)
class PeriodBoost:
    """A period named by a query: the session's rows in it (an id span) and what being said
    then adds to a row's score."""

    first_id: int
    last_id: int
    score: float


@dataclass(frozen=True, slots=True)
class TermMatch:
    """The rows holding any of `terms` (all of them, with `every`), each scored by bm25()
    over these terms, summed in this order (FTS5's phrase order: a float sum's bits depend
    on it), times `weight` (below 1 for a term the query did not ask for: a feedback term,
    chat_log_feedback.py)."""

    terms: tuple[str, ...]
    every: bool = False
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class KeywordRanking:
    """A query's keyword ranking of one session: row ids with their scores, best first;
    the periods it names that have rows of the session; how many rows hold each term
    that was scored, which is what a full match is worth (see `full_match_score`); and the
    query's terms with how many rows hold each (a term no row holds left out), read once
    for the ranking and reused by whoever weighs the terms (chatlog/recall.py)."""

    scored: list[tuple[int, float]]
    periods: list[PeriodBoost]
    term_rows: tuple[int, ...] = ()
    terms: tuple[str, ...] = ()
    term_counts: dict[str, int] = field(default_factory=dict)

    def full_match_score(self, logged_rows: int) -> float:
        """The score of a row of average length holding each scored term once, said in the
        best-scoring period named: what bm25() gives a match of the whole query (with
        `logged_rows`, the N of its idf), against which a match's coverage is measured
        (memory/fusion.py)."""
        idf = sum(bm25_idf(logged_rows, rows) for rows in self.term_rows)
        return idf + max((boost.score for boost in self.periods), default=0.0)


class Postings(Protocol):
    """A full-text index of the chat log: where each session's terms are looked up, scored
    and kept up to date. Its look-ups run on the connection a store's work is handed
    (`Backend.read_all`), so that a search costs one call on the database."""

    def prefix(self, session_key: str) -> str:
        """What every indexed term of the session starts with (no other session's can)."""
        ...

    def document_counts(self, connection: Connection, terms: Sequence[str]) -> dict[str, int]:
        """How many indexed rows hold each of `terms` (prefixed) that any row holds."""
        ...

    def holding(self, connection: Connection, match: TermMatch) -> int:
        """How many indexed rows `match` finds."""
        ...

    def scored(
        self,
        connection: Connection,
        match: TermMatch,
        boosts: Sequence[PeriodBoost],
        limit: int,
    ) -> list[tuple[int, float]]:
        """The best `limit` rows of `match`: bm25() plus the boost of the period a row was
        said in, best first, ties newest (highest id) first."""
        ...

    def scored_each(
        self, connection: Connection, matches: Sequence[TermMatch], limit: int
    ) -> list[list[tuple[int, float]]]:
        """`scored` of each match without boosts, in one statement where the database can
        (the feedback terms: a handful of single-term matches)."""
        ...

    def lock(self, connection: Connection) -> None:
        """Wait for every other writer of the index, until this transaction ends."""
        ...

    def index_rows(self, connection: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        """Index (id, speaker terms, text terms) rows of chat_log."""
        ...

    def unindex_rows(self, connection: Connection, where: str, params: Sequence[object]) -> None:
        """Take the rows `where` selects (over chat_log_terms t joined to chat_log c) out."""
        ...


def bm25_idf(logged_rows: int, holding_rows: int) -> float:
    """FTS5's idf of a term held by `holding_rows` of `logged_rows`, with its floor."""
    idf = math.log((logged_rows - holding_rows + 0.5) / (holding_rows + 0.5))
    return max(idf, FTS5_MIN_IDF)


def fts5_idf(indexed_rows: int, holding_rows: int) -> float:
    """The idf exactly as bm25() computes it (fts5Bm25GetData): only one not above zero
    is raised to the floor."""
    idf = math.log((indexed_rows - holding_rows + 0.5) / (holding_rows + 0.5))
    return idf if idf > 0.0 else FTS5_MIN_IDF


def rarest_within(
    document_counts: dict[str, int], terms: Sequence[str], budget_rows: int
) -> list[str]:
    """The terms worth scoring: the rarest whose rows, summed, stay within `budget_rows`
    (at least one term). The rest are held by so many rows that they say little about any
    one (the lowest idf of the query), and every row they would add costs bm25() time:
    like a stopword list that adapts to the session and the question. A term the index
    does not list counts as rare: unknown is not common."""
    ordered = sorted(terms, key=lambda term: document_counts.get(term, 0))
    kept: list[str] = []
    rows = 0
    for term in ordered:
        rows += document_counts.get(term, 0)
        if kept and rows > budget_rows:
            break
        kept.append(term)
    return kept


def row_terms(role: str, speaker_name: str | None, text: str) -> tuple[str, str]:
    """What the index gets of a row: its speaker's name (not the bot's) and its text, as
    space-joined search terms."""
    speaker = speaker_name if role != "assistant" and speaker_name else ""
    return (
        " ".join(segmenter.terms(encodable(speaker))),
        " ".join(segmenter.terms(encodable(text))),
    )
