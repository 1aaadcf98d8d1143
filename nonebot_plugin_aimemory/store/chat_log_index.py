"""The chat log's full-text index: searches of a session's rows ranked by FTS5's bm25() over
each row's search terms (jieba words and bigrams, `text.segmenter`; FTS5's own tokenizer does
not split Chinese), and the re-indexing of rows an older release logged. On SQLite the index
is FTS5 (sqlite/chat_log_fts5.py), on PostgreSQL term arrays ranked the same way in SQL
(postgres/chat_log_terms_index.py): the backend hands over its own (`Postings`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from ..text import query
from .backend import Backend
from .chat_log_feedback import FEEDBACK_BUDGET_ROWS, feedback_matches
from .chat_log_ranking import (
    KeywordRanking,
    PeriodBoost,
    Postings,
    TermMatch,
    bm25_idf,
    rarest_within,
    row_terms,
)
from .connection import Connection

__all__ = ["ChatLogIndex", "KeywordRanking", "PeriodBoost", "row_terms"]

# FTS5's bm25() costs a few microseconds a row (about 3 us measured here, where the match
# itself costs a tenth of that): scoring at most about this many rows keeps a search over
# 100 000 rows within its 20 ms.
CANDIDATE_ROWS = 2000
# Scored rows kept of a first ranking that feedback terms add to (when fewer are asked for):
# a row below them counts by the added words alone; the hybrid search fuses this many.
# Each kept row costs Python time: all 2 000 made a search over 100 000 rows 3 ms slower.
# Without feedback only the first `limit` are read: the best `limit` of several matches are
# among each one's best `limit` (a row's score is its best match's).
SCORED_ROWS_KEPT = 200
# Old rows are re-indexed this many at a time (jieba takes ~0.2 ms a row, off the loop).
REINDEX_BATCH_ROWS = 500


@dataclass(frozen=True, slots=True)
class _FirstRanking:
    """A ranking as one call on the database reads it: the terms' matches (best first),
    how many rows hold each term scored and each term, and each period's newest rows."""

    matches: list[tuple[int, float]]
    term_rows: tuple[int, ...]
    counts: dict[str, int]
    newest: list[list[int]]

    def ranking(
        self,
        terms: Sequence[str],
        boosts: Sequence[PeriodBoost],
        scores: dict[int, float],
        limit: int,
    ) -> KeywordRanking:
        """The best `limit` of `scores` (the matches, with any feedback added) and of the
        periods' newest rows, which score their period's boost unless matched."""
        for ids, boost in zip(self.newest, boosts, strict=True):
            for row_id in ids:
                scores.setdefault(row_id, boost.score)
        best = sorted(scores, key=lambda row_id: (scores[row_id], row_id), reverse=True)
        return KeywordRanking(
            [(row_id, scores[row_id]) for row_id in best[:limit]],
            list(boosts),
            self.term_rows,
            tuple(terms),
            self.counts,
        )


class ChatLogIndex:
    """Searches of the index, and the re-indexing of rows an older release logged."""

    def __init__(self, database: Backend) -> None:
        self.database = database
        self.postings: Postings = database.chat_log_postings()
        self._complete = False
        self._catching_up = asyncio.Lock()

    async def ranking(
        self,
        session_key: str,
        text: str,
        limit: int,
        periods: Sequence[tuple[str, str]] = (),
        *,
        feedback: bool = False,
    ) -> KeywordRanking:
        """The session's rows best matching `text`, best first (ties: newest first), with
        their scores, the periods and the terms' row counts: FTS5's bm25() over the query's
        content terms (any of them), a row said within one of `periods` (UTC [start, end)
        texts) scoring as if it also matched one more term, as specific as the period is
        (see `_period_boosts`). A query of only stopwords finds nothing; one of only a
        period, that period's newest rows. With `feedback` (the model's searches, not a
        person's), the words of the best rows are added to the query
        (chat_log_feedback.py): rows holding none of the query's words may be found."""
        await self.catch_up()
        terms = query.analyse(text).terms
        boosts = await self._period_boosts(session_key, periods)
        if not terms and not boosts:
            return KeywordRanking([], boosts, (), terms, {})
        depth = max(limit, SCORED_ROWS_KEPT) if feedback else limit
        first = await self.database.read_all(
            lambda connection: self._first_ranking(
                connection, session_key, terms, boosts, limit, depth
            )
        )
        scores = dict(first.matches)
        if feedback and terms:
            await self._add_feedback(session_key, terms, first.matches, boosts, scores)
        return first.ranking(terms, boosts, scores, limit)

    async def query_terms(self, text: str) -> tuple[str, ...]:
        """The content terms `ranking` looks `text` up by (for `ranked_on`), once the rows
        an older release logged are indexed."""
        await self.catch_up()
        return query.analyse(text).terms

    def ranked_on(
        self, connection: Connection, session_key: str, terms: Sequence[str], limit: int
    ) -> KeywordRanking:
        """`ranking` of `terms` without periods or feedback, read on `connection`: part of
        a caller's one call on the database (`Backend.read_all`)."""
        if not terms:
            return KeywordRanking([], [], (), tuple(terms), {})
        first = self._first_ranking(connection, session_key, terms, (), limit, limit)
        return first.ranking(terms, (), dict(first.matches), limit)

    def _first_ranking(
        self,
        connection: Connection,
        session_key: str,
        terms: Sequence[str],
        boosts: Sequence[PeriodBoost],
        limit: int,
        depth: int,
    ) -> _FirstRanking:
        """What a ranking reads of the index, before any feedback: the terms' best `depth`
        matches and their row counts, and each period's newest `limit` rows."""
        counts: dict[str, int] = {}
        matches: list[tuple[int, float]] = []
        term_rows: tuple[int, ...] = ()
        if terms:
            counts = self._term_rows_on(connection, session_key, terms)
            matches, term_rows = self._ranked_matches(
                connection, session_key, terms, counts, boosts, limit, depth
            )
        newest = [_newest_within(connection, session_key, boost, limit) for boost in boosts]
        return _FirstRanking(matches, term_rows, counts, newest)

    async def _add_feedback(
        self,
        session_key: str,
        terms: Sequence[str],
        matches: Sequence[tuple[int, float]],
        boosts: Sequence[PeriodBoost],
        scores: dict[int, float],
    ) -> None:
        """Add to `scores` what the feedback terms of the first ranking `matches` score
        (chat_log_feedback.py); a row they alone find gets its period's boost too."""
        prefix = self.postings.prefix(session_key)
        feedback = await feedback_matches(
            self.database,
            self.postings,
            prefix,
            [prefix + term for term in terms],
            matches,
            await self.logged_rows(),
            FEEDBACK_BUDGET_ROWS,
        )
        found_each = await self.database.read_all(
            lambda connection: self.postings.scored_each(connection, feedback, FEEDBACK_BUDGET_ROWS)
        )
        for found in found_each:
            for row_id, score in found:
                base = scores.get(row_id)
                scores[row_id] = (_boost_of(row_id, boosts) if base is None else base) + score

    async def term_rows(self, session_key: str, terms: Sequence[str]) -> dict[str, int]:
        """How many of the session's rows hold each of `terms` (those no row holds left out)."""
        await self.catch_up()
        return await self.database.read_all(
            lambda connection: self._term_rows_on(connection, session_key, terms)
        )

    def _term_rows_on(
        self, connection: Connection, session_key: str, terms: Sequence[str]
    ) -> dict[str, int]:
        prefix = self.postings.prefix(session_key)
        counts = self.postings.document_counts(connection, [prefix + term for term in terms])
        return {term: counts[prefix + term] for term in terms if counts.get(prefix + term)}

    async def logged_rows(self) -> int:
        """How many rows the log spans (every session's: bm25()'s N, as `_period_boosts`
        counts it), from the two ends of the id index."""
        return await self.database.read_all(logged_rows_on)

    def index_rows(self, connection: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        """Index (id, speaker terms, text terms) rows of chat_log, in the caller's
        transaction."""
        self.postings.index_rows(connection, rows)

    def unindex_rows(self, connection: Connection, where: str, params: Sequence[object]) -> None:
        """Take the rows `where` selects (over chat_log_terms t joined to chat_log c) out of
        the index, in the caller's transaction."""
        self.postings.unindex_rows(connection, where, params)

    def _ranked_matches(
        self,
        connection: Connection,
        session_key: str,
        terms: Sequence[str],
        term_rows: dict[str, int],
        boosts: Sequence[PeriodBoost],
        limit: int,
        depth: int,
    ) -> tuple[list[tuple[int, float]], tuple[int, ...]]:
        """The best `depth` matches of `terms`, best first, with their scores (bm25() is
        negative: the score is its opposite, plus the boost of a row's period), and how
        many rows hold each term scored. When the terms' rows would be too
        many to score, the commonest terms are left out (`rarest_within`), or, when even
        the rarest is too common, the rows holding several of them are the ones scored
        (`_common_terms_match`). `term_rows`: how many of the session's rows hold each term."""
        prefix = self.postings.prefix(session_key)
        prefixed = [prefix + term for term in terms]
        counts = {prefix + term: rows for term, rows in term_rows.items()}
        scored = rarest_within(counts, prefixed, CANDIDATE_ROWS)
        matches = [TermMatch(tuple(scored))]
        if counts.get(scored[0], 0) > CANDIDATE_ROWS and len(prefixed) > 1:
            matches, scored = self._common_terms_match(connection, counts, prefixed, limit)
        best: dict[int, float] = {}
        for match in matches:
            for row_id, score in self.postings.scored(connection, match, boosts, depth):
                best[row_id] = max(score, best.get(row_id, score))
        ranked = sorted(best.items(), key=lambda item: (item[1], item[0]), reverse=True)
        return ranked, tuple(counts.get(term, 0) for term in scored)

    def _common_terms_match(
        self, connection: Connection, counts: dict[str, int], terms: Sequence[str], limit: int
    ) -> tuple[list[TermMatch], list[str]]:
        """The matches to score, and their terms, for a query whose every term the session
        holds in thousands of rows ("which movies did you share", in a long chat about
        films): bm25() would score them all, ~3 us a row. Rows holding the rarest terms
        together score highest under bm25() in all but freak cases, so those are scored:
        the two rarest, then three, while more rows than can be scored in time hold them.
        Should fewer than `limit` rows hold even the two rarest, those rows are scored and
        the rest comes from the rarest term's rows, all of them."""
        ordered = sorted(terms, key=lambda term: counts.get(term, 0))
        rarest = TermMatch((ordered[0],))
        chosen = ([rarest], ordered[:1])
        for width in range(2, len(ordered) + 1):
            together = TermMatch(tuple(ordered[:width]), every=True)
            held = self.postings.holding(connection, together)
            if held < limit:
                if width == 2:
                    return [together, rarest], ordered[:2]
                break
            chosen = ([together], ordered[:width])
            if held <= CANDIDATE_ROWS:
                return chosen
        return chosen

    async def _period_boosts(
        self, session_key: str, periods: Sequence[tuple[str, str]]
    ) -> list[PeriodBoost]:
        """Each period with rows of the session: its first and last row id (ids grow with
        time within a session) and its boost, the idf bm25() would give a term held by the
        period's rows: ln((N - n + 0.5) / (n + 0.5)), N the rows of the log (as FTS5 counts
        them, every session's), n the period's. A day of a long log counts as much as a
        rare word, a month of a short one as little as a common word."""
        boosts = []
        for start, end in periods:
            # MIN and MAX of a rowid apart: one query asking for both would scan the table.
            ((first, last, count, logged),) = await self.database.read(
                "SELECT MIN(id), MAX(id), COUNT(*), "
                "(SELECT MAX(id) FROM chat_log) - (SELECT MIN(id) FROM chat_log) + 1 "
                "FROM chat_log WHERE session_key = ? AND created_at >= ? AND created_at < ?",
                (session_key, start, end),
            )
            if count:
                boosts.append(PeriodBoost(int(first), int(last), bm25_idf(logged, count)))
        return boosts

    async def catch_up(self) -> None:
        """Index the rows an older release logged (the migration that changed the search
        terms left them to re-index: jieba is Python), newest first, in batches; a no-op
        once done."""
        if self._complete:
            return
        async with self._catching_up:
            while not self._complete:
                await self._reindex_batch()

    async def _reindex_batch(self) -> None:
        marker = await self.database.read("SELECT below_id FROM chat_log_reindex")
        if not marker:
            self._complete = True
            return
        (below_id,) = marker[0]
        rows = await self.database.read(
            "SELECT id, role, speaker_name, text FROM chat_log WHERE id < ? AND refused = 0 "
            "ORDER BY id DESC LIMIT ?",
            (below_id, REINDEX_BATCH_ROWS),
        )
        ids = [int(row[0]) for row in rows]
        terms = await asyncio.to_thread(
            lambda: [row_terms(str(role), speaker, str(text)) for _, role, speaker, text in rows]
        )
        await self.database.write(
            lambda connection: self._reindex(
                connection, below_id, list(zip(ids, terms, strict=True))
            )
        )

    def _reindex(
        self, connection: Connection, below_id: int, rows: list[tuple[int, tuple[str, str]]]
    ) -> None:
        """Index `rows`, the batch read below `below_id`, and move the marker past them;
        nothing if another process has moved it meanwhile (it indexed them)."""
        self.postings.lock(connection)
        marker = connection.execute("SELECT below_id FROM chat_log_reindex").fetchone()
        if marker is None or int(marker[0]) != int(below_id):
            return
        if not rows:
            connection.execute("DELETE FROM chat_log_reindex")
            return
        ids = [row_id for row_id, _ in rows]
        # Rows refused or removed since they were read are left out, and rows indexed
        # already (a copy into PostgreSQL sets the marker again over a live log).
        still_there = {
            int(row_id)
            for (row_id,) in connection.execute(
                f"SELECT id FROM chat_log c WHERE refused = 0 AND id IN "
                f"({', '.join('?' for _ in ids)}) "
                "AND NOT EXISTS (SELECT 1 FROM chat_log_terms t WHERE t.id = c.id)",
                ids,
            )
        }
        self.postings.index_rows(
            connection, [(row_id, *terms) for row_id, terms in rows if row_id in still_there]
        )
        connection.execute("UPDATE chat_log_reindex SET below_id = ?", (ids[-1],))


def logged_rows_on(connection: Connection) -> int:
    """`ChatLogIndex.logged_rows`, read on `connection`."""
    (rows,) = connection.execute(
        "SELECT COALESCE((SELECT MAX(id) FROM chat_log) - (SELECT MIN(id) FROM chat_log) + 1, 0)"
    ).fetchone()
    return int(rows)


def _newest_within(
    connection: Connection, session_key: str, boost: PeriodBoost, limit: int
) -> list[int]:
    rows = connection.execute(
        "SELECT id FROM chat_log WHERE session_key = ? AND refused = 0 "
        "AND id BETWEEN ? AND ? ORDER BY id DESC LIMIT ?",
        (session_key, boost.first_id, boost.last_id, limit),
    )
    return [int(row[0]) for row in rows]


def _boost_of(row_id: int, boosts: Sequence[PeriodBoost]) -> float:
    """What being said in a named period adds to a row's score (the first period holding
    it, as the index's CASE takes it)."""
    return next((b.score for b in boosts if b.first_id <= row_id <= b.last_id), 0.0)
