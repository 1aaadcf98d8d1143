"""The chat log's full-text index on PostgreSQL, which has no FTS5: each row's distinct search
terms (`row_terms`, prefixed with its session) in an array with a GIN index, beside how often
each occurs in the speaker's name and in the text and the row's length in terms; how many
rows hold each term (`chat_log_term_rows`, what fts5vocab tells on SQLite); and the index's
row and term totals (`chat_log_terms_total`, bm25()'s N and average length).

A search ranks in SQL by FTS5's own bm25() (fts5_aux.c) over the same statistics: N and the
average length over every indexed row, each term's rows counted over the whole index (which
the session prefix makes the session's own). The idfs and the average length are computed
here as C computes them, and each float operation of a row's score is done in C's order, so
the same rows give the same scores to the bit, hence the same ranking, ties newest first.

Writers of the index wait for one another on the chat log's id counter row (`lock_chat_log`),
which every insert into the log takes first anyway: no two transactions change the counts at
once, and none takes row locks in another's order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..chat_log_ranking import (
    BM25_B,
    BM25_K1,
    SPEAKER_WEIGHT,
    TEXT_WEIGHT,
    PeriodBoost,
    TermMatch,
    fts5_idf,
)
from ..connection import Connection

# Between a session and a term: no term holds a space, so no session's terms are another's.
SEPARATOR = " "
# A prefixed term is cut to this many characters (at most 2 000 bytes): a GIN key must fit a
# third of a page, and one "word" of thousands of letters would fail the whole batch.
MAX_TERM_CHARS = 500


def _float(value: float) -> str:
    """A constant of the score as SQL: the shortest text of the double reads back as it."""
    return f"CAST({value!r} AS DOUBLE PRECISION)"


# (1 - b) and (k1 + 1) as C computes them, in doubles, before they reach SQL.
_NORM = (
    f"{_float(BM25_K1)} * ({_float(1 - BM25_B)} + {_float(BM25_B)} * t.token_count "
    "/ CAST(? AS DOUBLE PRECISION))"
)
_NUMERATOR = _float(BM25_K1 + 1.0)


def indexed_term(prefixed: str) -> str:
    """A session-prefixed term as the index keeps it (and a query must ask for it)."""
    return prefixed[:MAX_TERM_CHARS]


def lock_chat_log(connection: Connection) -> None:
    """Wait for every other writer of the chat log's index (PostgreSQL), until this
    transaction ends: the id counter's row, which an insert of rows locks first."""
    connection.execute("SELECT last_id FROM chat_log_ids FOR UPDATE")


@dataclass(frozen=True, slots=True)
class IndexedRow:
    """One row as the index keeps it: its distinct terms (first seen first), how often each
    occurs in the speaker's name and in the text, and how many terms the row has."""

    id: int
    terms: list[str]
    speaker_counts: list[int]
    text_counts: list[int]
    token_count: int

    @classmethod
    def of(cls, row_id: int, prefix: str, speaker: str, tokens: str) -> IndexedRow:
        """The row `row_id` of the session `prefix`, with its space-joined terms."""
        columns = (speaker.split(), tokens.split())
        counts: dict[str, list[int]] = {}
        for column, terms in enumerate(columns):
            for term in terms:
                counts.setdefault(indexed_term(prefix + term), [0, 0])[column] += 1
        return cls(
            row_id,
            list(counts),
            [speaker_count for speaker_count, _ in counts.values()],
            [text_count for _, text_count in counts.values()],
            len(columns[0]) + len(columns[1]),
        )


@dataclass(frozen=True, slots=True)
class Statistics:
    """What bm25() reads of the whole index: its rows, their terms, each term's rows."""

    indexed_rows: int
    indexed_tokens: int
    holding_rows: dict[str, int]


class TermArrayPostings:
    """The index on PostgreSQL: term arrays ranked by FTS5's bm25(), computed in SQL."""

    def prefix(self, session_key: str) -> str:
        """The session's key and a space."""
        return session_key + SEPARATOR

    def document_counts(self, connection: Connection, terms: Sequence[str]) -> dict[str, int]:
        """How many indexed rows hold each term (the session's own: terms carry it)."""
        return _statistics(connection, terms).holding_rows

    def holding(self, connection: Connection, match: TermMatch) -> int:
        """How many indexed rows `match` finds."""
        operator = "@>" if match.every else "&&"
        (held,) = connection.execute(
            f"SELECT COUNT(*) FROM chat_log_terms WHERE terms {operator} CAST(? AS TEXT[])",
            ([indexed_term(term) for term in match.terms],),
        ).fetchone()
        return int(held)

    def scored(
        self,
        connection: Connection,
        match: TermMatch,
        boosts: Sequence[PeriodBoost],
        limit: int,
    ) -> list[tuple[int, float]]:
        """The best `limit` rows of `match` with their scores, as FTS5 gives them."""
        terms = [indexed_term(term) for term in match.terms]
        statistics = _statistics(connection, terms)
        if not statistics.indexed_tokens:
            return []  # no row holds any term
        idfs = [
            fts5_idf(statistics.indexed_rows, statistics.holding_rows.get(term, 0))
            for term in terms
        ]
        average_length = float(statistics.indexed_tokens) / float(statistics.indexed_rows)
        ranked = connection.execute(
            _scoring_sql(len(terms), len(boosts), every=match.every),
            (
                *idfs,
                match.weight,
                *(value for b in boosts for value in (b.first_id, b.last_id, b.score)),
                *terms,
                average_length,
                terms,
                limit,
            ),
        )
        return [(int(row_id), float(score)) for row_id, score in ranked]

    def scored_each(
        self, connection: Connection, matches: Sequence[TermMatch], limit: int
    ) -> list[list[tuple[int, float]]]:
        """Each match's best `limit` rows with their scores, one statement each."""
        return [self.scored(connection, match, (), limit) for match in matches]

    def lock(self, connection: Connection) -> None:
        """See `lock_chat_log`."""
        lock_chat_log(connection)

    def index_rows(self, connection: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        """Index (id, speaker terms, text terms) rows of chat_log: their arrays, their terms'
        row counts and the totals."""
        if not rows:
            return
        lock_chat_log(connection)
        keys = dict(
            connection.execute(
                "SELECT id, session_key FROM chat_log WHERE id = ANY(CAST(? AS BIGINT[]))",
                ([row_id for row_id, _, _ in rows],),
            ).fetchall()
        )
        entries = [
            IndexedRow.of(row_id, self.prefix(str(keys[row_id])), speaker, tokens)
            for row_id, speaker, tokens in rows
        ]
        connection.executemany(
            "INSERT INTO chat_log_terms (id, terms, speaker_counts, text_counts, token_count) "
            "VALUES (?, CAST(? AS TEXT[]), CAST(? AS INTEGER[]), CAST(? AS INTEGER[]), ?)",
            [(e.id, e.terms, e.speaker_counts, e.text_counts, e.token_count) for e in entries],
        )
        holding = Counter(term for entry in entries for term in entry.terms)
        terms = sorted(holding)
        connection.execute(
            "INSERT INTO chat_log_term_rows (term, holding_rows) SELECT term, n "
            "FROM unnest(CAST(? AS TEXT[]), CAST(? AS BIGINT[])) AS added (term, n) "
            "ON CONFLICT (term) DO UPDATE "
            "SET holding_rows = chat_log_term_rows.holding_rows + excluded.holding_rows",
            (terms, [holding[term] for term in terms]),
        )
        connection.execute(
            "UPDATE chat_log_terms_total SET indexed_rows = indexed_rows + ?, "
            "indexed_tokens = indexed_tokens + ?",
            (len(entries), sum(entry.token_count for entry in entries)),
        )

    def unindex_rows(self, connection: Connection, where: str, params: Sequence[object]) -> None:
        """Take the rows `where` selects (over chat_log_terms t joined to chat_log c) out of
        the index, their terms' row counts and the totals, in one statement."""
        lock_chat_log(connection)
        connection.execute(
            "WITH gone AS (DELETE FROM chat_log_terms t USING chat_log c "
            f"WHERE c.id = t.id AND ({where}) RETURNING t.terms, t.token_count), "
            "held AS (SELECT u.term, COUNT(*) AS n FROM gone "
            "CROSS JOIN LATERAL unnest(gone.terms) AS u (term) GROUP BY u.term), "
            "emptied AS (DELETE FROM chat_log_term_rows r USING held "
            "WHERE r.term = held.term AND r.holding_rows <= held.n), "
            "lowered AS (UPDATE chat_log_term_rows r SET holding_rows = r.holding_rows - held.n "
            "FROM held WHERE r.term = held.term AND r.holding_rows > held.n) "
            "UPDATE chat_log_terms_total SET indexed_rows = indexed_rows - "
            "(SELECT COUNT(*) FROM gone), indexed_tokens = indexed_tokens - "
            "(SELECT COALESCE(SUM(token_count), 0) FROM gone)",
            params,
        )


def _statistics(connection: Connection, terms: Sequence[str]) -> Statistics:
    rows = connection.execute(
        "SELECT NULL, indexed_rows, indexed_tokens FROM chat_log_terms_total "
        "UNION ALL SELECT term, holding_rows, 0 FROM chat_log_term_rows "
        "WHERE term = ANY(CAST(? AS TEXT[]))",
        ([indexed_term(term) for term in terms],),
    ).fetchall()
    totals = [(int(held), int(tokens)) for term, held, tokens in rows if term is None]
    indexed_rows, indexed_tokens = totals[0] if totals else (0, 0)
    holding = {str(term): int(held) for term, held, _ in rows if term is not None}
    return Statistics(indexed_rows, indexed_tokens, holding)


def _scoring_sql(term_count: int, boost_count: int, *, every: bool) -> str:
    """bm25() of the rows holding any (`every`: all) of `term_count` terms, as fts5_aux.c
    computes it: per term, its weighted frequency f (each occurrence adds its column's
    weight) and idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl)), D the row's
    terms; the terms' scores summed in the query's order, times the match's weight; then
    each period's boost. Parameters: the idfs, the weight, the boosts' (first id, last id,
    score), the terms one by one, the average length, the terms as an array, the limit."""
    indexes = range(term_count)
    scores = " + ".join(
        f"CAST(? AS DOUBLE PRECISION) * ((f.f{i} * {_NUMERATOR}) / (f.f{i} + f.norm))"
        for i in indexes
    )
    boosted = "".join(
        " WHEN t.id BETWEEN ? AND ? THEN CAST(? AS DOUBLE PRECISION)" for _ in range(boost_count)
    )
    period_score = f" + CASE{boosted} ELSE 0 END" if boost_count else ""
    positions = ", ".join(f"array_position(t.terms, CAST(? AS TEXT)) AS p{i}" for i in indexes)
    frequencies = ", ".join(
        f"COALESCE({_float(SPEAKER_WEIGHT)} * t.speaker_counts[p.p{i}] "
        f"+ {_float(TEXT_WEIGHT)} * t.text_counts[p.p{i}], 0) AS f{i}"
        for i in indexes
    )
    operator = "@>" if every else "&&"
    return (
        f"SELECT t.id, ({scores}) * CAST(? AS DOUBLE PRECISION){period_score} AS score "
        "FROM chat_log_terms t "
        f"CROSS JOIN LATERAL (SELECT {positions} OFFSET 0) p "
        f"CROSS JOIN LATERAL (SELECT {frequencies}, {_NORM} AS norm OFFSET 0) f "
        f"WHERE t.terms {operator} CAST(? AS TEXT[]) "
        "ORDER BY score DESC, t.id DESC LIMIT ?"
    )
