"""The chat log's full-text index on SQLite: FTS5 over each row's search terms, every term
prefixed with its session so that a search reads only its own session's postings, ranked by
FTS5's bm25(); contentless, the terms it was given kept in `chat_log_terms`, to take a row
out of it again (store/chat_log_index.py searches it; postgres/chat_log_terms_index.py is
PostgreSQL's)."""

from __future__ import annotations

from collections.abc import Sequence

from ..chat_log_ranking import SPEAKER_WEIGHT, TEXT_WEIGHT, PeriodBoost, TermMatch
from ..connection import Connection

# Ids per `IN (...)` of one statement: SQLite before 3.32 allows 999 variables in all.
MAX_IDS_PER_STATEMENT = 500
# Leaf pages an index write merges at most, beyond its own rows. FTS5 merges on its own only
# once 64 pages have been written since (automerge): a log flushed every second, a few rows
# at a time, piles up to 15 one-page segments, and a search looks up each term in each of
# them. Merging as it writes keeps them to a few: measured over 4 000 rows written 20 at a
# time, a recall's look-ups 2.2 -> 1.6 ms, a row's indexing 25.5 -> 28 us. Positive only:
# a negative merge (every segment, whatever its level) corrupted an index on SQLite 3.40.1.
MERGE_PAGES_PER_WRITE = 64


def session_token(session_key: str) -> str:
    """The session as one alphanumeric FTS token (`g:123` -> `s673a313233`)."""
    return "s" + session_key.encode().hex()


def term_prefix(session_key: str) -> str:
    """What every indexed term of the session starts with: its token and an `x`, which no
    hex digit is, so one session's terms can never be another's."""
    return session_token(session_key) + "x"


# The same prefix computed in SQL from chat_log.session_key (kept equal to term_prefix), and
# a space-joined term list with it before every term: the index is given, and later asked to
# forget, exactly these texts.
_SQL_PREFIX = "('s' || lower(hex(c.session_key)) || 'x')"


def _prefixed(column: str) -> str:
    return (
        f"CASE WHEN {column} = '' THEN '' "
        f"ELSE {_SQL_PREFIX} || replace({column}, ' ', ' ' || {_SQL_PREFIX}) END"
    )


_INDEXED_VALUES = f"t.id, {_prefixed('t.speaker')}, {_prefixed('t.tokens')}"


def quoted(term: str) -> str:
    """`term` as an FTS5 string (quotes doubled): `*`, `NEAR`, `OR`, `-`, `(` in it are
    just characters."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 query for rows holding any of `terms`."""
    return " OR ".join(map(quoted, terms))


def fts5_expression(match: TermMatch) -> str:
    """`match` as an FTS5 query: its phrases in its order, joined by OR (AND, `every`)."""
    return (" AND " if match.every else " OR ").join(map(quoted, match.terms))


class Fts5Postings:
    """The index on SQLite: FTS5 over session-prefixed terms, ranked by its bm25()."""

    def prefix(self, session_key: str) -> str:
        """The session's FTS token and an `x` (`term_prefix`)."""
        return term_prefix(session_key)

    def document_counts(self, connection: Connection, terms: Sequence[str]) -> dict[str, int]:
        """How many indexed rows hold each term (the session's own: terms carry it)."""
        placeholders = ", ".join("?" for _ in terms)
        rows = connection.execute(
            f"SELECT term, doc FROM chat_log_fts_vocab WHERE term IN ({placeholders})", terms
        )
        return {str(term): int(count) for term, count in rows}

    def holding(self, connection: Connection, match: TermMatch) -> int:
        """How many indexed rows `match` finds."""
        (held,) = connection.execute(
            "SELECT COUNT(*) FROM chat_log_fts WHERE chat_log_fts MATCH ?",
            (fts5_expression(match),),
        ).fetchone()
        return int(held)

    def scored(
        self,
        connection: Connection,
        match: TermMatch,
        boosts: Sequence[PeriodBoost],
        limit: int,
    ) -> list[tuple[int, float]]:
        """The best `limit` rows of `match` with their scores."""
        boosted = "".join(" WHEN rowid BETWEEN ? AND ? THEN ?" for _ in boosts)
        period_score = f" + CASE{boosted} ELSE 0 END" if boosts else ""
        ranked = connection.execute(
            f"SELECT rowid, -bm25(chat_log_fts, {SPEAKER_WEIGHT}, {TEXT_WEIGHT}) * ?"
            f"{period_score} AS score FROM chat_log_fts WHERE chat_log_fts MATCH ? "
            "ORDER BY score DESC, rowid DESC LIMIT ?",
            (
                match.weight,
                *(value for b in boosts for value in (b.first_id, b.last_id, b.score)),
                fts5_expression(match),
                limit,
            ),
        )
        return [(int(row_id), float(score)) for row_id, score in ranked]

    def scored_each(
        self, connection: Connection, matches: Sequence[TermMatch], limit: int
    ) -> list[list[tuple[int, float]]]:
        """Each match's best `limit` rows with their scores, in one statement (a compound
        of one select per match, tagged with its position)."""
        if not matches:
            return []
        arm = (
            f"SELECT * FROM (SELECT ? AS k, rowid AS id, -bm25(chat_log_fts, {SPEAKER_WEIGHT}, "
            f"{TEXT_WEIGHT}) * ? AS score FROM chat_log_fts WHERE chat_log_fts MATCH ? "
            "ORDER BY score DESC, rowid DESC LIMIT ?)"
        )
        rows = connection.execute(
            " UNION ALL ".join(arm for _ in matches),
            [
                value
                for position, match in enumerate(matches)
                for value in (position, match.weight, fts5_expression(match), limit)
            ],
        )
        found: list[list[tuple[int, float]]] = [[] for _ in matches]
        for position, row_id, score in rows:
            found[int(position)].append((int(row_id), float(score)))
        return found

    def lock(self, connection: Connection) -> None:
        """Nothing: a write transaction of the SQLite file (IMMEDIATE) excludes the others."""

    def index_rows(self, connection: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        """See `index_rows`."""
        index_rows(connection, rows)

    def unindex_rows(self, connection: Connection, where: str, params: Sequence[object]) -> None:
        """See `unindex_rows`."""
        unindex_rows(connection, where, params)


def index_rows(connection: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index (id, speaker terms, text terms) rows of chat_log in FTS5: the terms are kept,
    and the index given them with their session's prefix."""
    if not rows:
        return
    connection.executemany(
        "INSERT INTO chat_log_terms (id, speaker, tokens) VALUES (?, ?, ?)", rows
    )
    ids = [row[0] for row in rows]
    for start in range(0, len(ids), MAX_IDS_PER_STATEMENT):
        chunk = ids[start : start + MAX_IDS_PER_STATEMENT]
        placeholders = ", ".join("?" for _ in chunk)
        connection.execute(
            f"INSERT INTO chat_log_fts (rowid, speaker, tokens) SELECT {_INDEXED_VALUES} "
            f"FROM chat_log_terms t JOIN chat_log c ON c.id = t.id WHERE t.id IN ({placeholders})",
            chunk,
        )
    connection.execute(
        "INSERT INTO chat_log_fts (chat_log_fts, rank) VALUES ('merge', ?)",
        (MERGE_PAGES_PER_WRITE,),
    )


def unindex_rows(connection: Connection, where: str, params: Sequence[object]) -> None:
    """Take the rows `where` selects (over chat_log_terms t joined to chat_log c) out of the
    FTS5 index: a contentless index forgets a row when told exactly the texts it was given."""
    selected = f"FROM chat_log_terms t JOIN chat_log c ON c.id = t.id WHERE {where}"
    connection.execute(
        "INSERT INTO chat_log_fts (chat_log_fts, rowid, speaker, tokens) "
        f"SELECT 'delete', {_INDEXED_VALUES} {selected}",
        params,
    )
    connection.execute(f"DELETE FROM chat_log_terms WHERE id IN (SELECT t.id {selected})", params)
