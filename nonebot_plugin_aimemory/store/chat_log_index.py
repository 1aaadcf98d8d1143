"""The chat log's full-text index: FTS5 over each row's search terms (jieba words and
bigrams, `text.segmenter`; FTS5's own tokenizer does not split Chinese), every term prefixed
with its session so that a search reads only its own session's postings, ranked by FTS5's
bm25(). The index is contentless; the terms it was given are kept in `chat_log_terms`, to
take a row out of it again."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..text import query, segmenter
from ..text.encodable import encodable
from .connection import Backend, Connection

# bm25() weights of the index's columns: who spoke counts half as much as what was said, so
# a name in a query ranks that person's rows first among rows with the same words, without
# turning every row of theirs into a strong match.
SPEAKER_WEIGHT = 0.5
TEXT_WEIGHT = 1.0
# FTS5's bm25() costs a few microseconds a row (about 3 us measured here, where the match
# itself costs a tenth of that): scoring at most about this many rows keeps a search over
# 100 000 rows within its 20 ms.
CANDIDATE_ROWS = 2000
# Old rows are re-indexed this many at a time (jieba takes ~0.2 ms a row, off the loop).
REINDEX_BATCH_ROWS = 500
# Ids per `IN (...)` of one statement: SQLite before 3.32 allows 999 variables in all.
MAX_IDS_PER_STATEMENT = 500


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
class KeywordRanking:
    """A query's keyword ranking of one session: row ids with their scores, best first;
    the periods it names that have rows of the session; and how many rows hold each term
    that was scored, which is what a full match is worth (see `full_match_score`)."""

    scored: list[tuple[int, float]]
    periods: list[PeriodBoost]
    term_rows: tuple[int, ...] = ()

    def full_match_score(self, logged_rows: int) -> float:
        """The score of a row of average length holding each scored term once, said in the
        best-scoring period named: what bm25() gives a match of the whole query (with
        `logged_rows`, the N of its idf), against which a match's coverage is measured
        (memory/fusion.py)."""
        idf = sum(bm25_idf(logged_rows, rows) for rows in self.term_rows)
        return idf + max((boost.score for boost in self.periods), default=0.0)


def bm25_idf(logged_rows: int, holding_rows: int) -> float:
    """FTS5's idf of a term held by `holding_rows` of `logged_rows`, with its floor."""
    idf = math.log((logged_rows - holding_rows + 0.5) / (holding_rows + 0.5))
    return max(idf, FTS5_MIN_IDF)


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


class ChatLogIndex:
    """Searches of the index, and the re-indexing of rows an older release logged."""

    def __init__(self, database: Backend) -> None:
        self.database = database
        self._complete = False
        self._catching_up = asyncio.Lock()

    async def ranked(
        self, session_key: str, text: str, limit: int, periods: Sequence[tuple[str, str]] = ()
    ) -> list[int]:
        """Ids of the session's rows best matching `text`, best first (ties: newest first), by
        FTS5's bm25() over the query's content terms (any of them), a row said within one of
        `periods` (UTC [start, end) texts) scoring as if it also matched one more term, as
        specific as the period is (see `_period_boosts`). A query of only stopwords finds
        nothing; one of only a period, that period's newest rows."""
        ranking = await self.ranking(session_key, text, limit, periods)
        return [row_id for row_id, _ in ranking.scored]

    async def ranking(
        self, session_key: str, text: str, limit: int, periods: Sequence[tuple[str, str]] = ()
    ) -> KeywordRanking:
        """What `ranked` ranks, with the scores, the periods and the terms' row counts."""
        await self.catch_up()
        terms = query.analyse(text).terms
        boosts = await self._period_boosts(session_key, periods)
        scores: dict[int, float] = {}
        term_rows: tuple[int, ...] = ()
        if terms:
            matches, term_rows = await self._ranked_matches(session_key, terms, boosts, limit)
            scores.update(matches)
        for boost in boosts:
            for row_id in await self._newest_within(session_key, boost, limit):
                scores.setdefault(row_id, boost.score)
        best = sorted(scores, key=lambda row_id: (scores[row_id], row_id), reverse=True)
        return KeywordRanking(
            [(row_id, scores[row_id]) for row_id in best[:limit]], boosts, term_rows
        )

    async def logged_rows(self) -> int:
        """How many rows the log spans (every session's: bm25()'s N, as `_period_boosts`
        counts it), from the two ends of the id index."""
        rows = await self.database.read(
            "SELECT COALESCE((SELECT MAX(id) FROM chat_log) - (SELECT MIN(id) FROM chat_log) "
            "+ 1, 0)"
        )
        return int(rows[0][0])

    async def _ranked_matches(
        self, session_key: str, terms: Sequence[str], boosts: Sequence[PeriodBoost], limit: int
    ) -> tuple[list[tuple[int, float]], tuple[int, ...]]:
        """The best `limit` matches of `terms` with their scores (bm25() is negative: the
        score is its opposite, plus the boost of a row's period), and how many rows hold
        each term scored. When the terms' rows would be too many to score, the commonest
        terms are left out (`rarest_within`), or, when even the rarest is too common, the
        rows holding several of them are the ones scored (`_common_terms_match`)."""
        prefix = term_prefix(session_key)
        prefixed = [prefix + term for term in terms]
        counts = await self._document_counts(prefixed)
        scored = rarest_within(counts, prefixed, CANDIDATE_ROWS)
        expressions = [match_expression(scored)]
        if counts.get(scored[0], 0) > CANDIDATE_ROWS and len(prefixed) > 1:
            expressions, scored = await self._common_terms_match(counts, prefixed, limit)
        best: dict[int, float] = {}
        for expression in expressions:
            for row_id, score in await self._scored(expression, boosts, limit):
                best[row_id] = max(score, best.get(row_id, score))
        matches = sorted(best.items(), key=lambda item: (item[1], item[0]), reverse=True)
        return matches[:limit], tuple(counts.get(term, 0) for term in scored)

    async def _scored(
        self, expression: str, boosts: Sequence[PeriodBoost], limit: int
    ) -> list[tuple[int, float]]:
        """The best `limit` rows of an FTS5 `expression` with their scores."""
        boosted = "".join(" WHEN rowid BETWEEN ? AND ? THEN ?" for _ in boosts)
        period_score = f" + CASE{boosted} ELSE 0 END" if boosts else ""
        ranked = await self.database.read(
            f"SELECT rowid, -bm25(chat_log_fts, {SPEAKER_WEIGHT}, {TEXT_WEIGHT}){period_score} "
            "AS score FROM chat_log_fts WHERE chat_log_fts MATCH ? "
            "ORDER BY score DESC, rowid DESC LIMIT ?",
            (
                *(value for b in boosts for value in (b.first_id, b.last_id, b.score)),
                expression,
                limit,
            ),
        )
        return [(int(row_id), float(score)) for row_id, score in ranked]

    async def _common_terms_match(
        self, counts: dict[str, int], terms: Sequence[str], limit: int
    ) -> tuple[list[str], list[str]]:
        """The FTS5 expressions to score, and their terms, for a query whose every term the
        session holds in thousands of rows ("which movies did you share", in a long chat
        about films): bm25() would score them all, ~3 us a row. Rows holding the rarest
        terms together score highest under bm25() in all but freak cases, so those are
        scored: the two rarest, then three, while more rows than can be scored in time
        hold them. Should fewer than `limit` rows hold even the two rarest, those rows are
        scored and the rest comes from the rarest term's rows, all of them."""
        ordered = sorted(terms, key=lambda term: counts.get(term, 0))
        rarest = quoted(ordered[0])
        chosen = ([rarest], ordered[:1])
        for width in range(2, len(ordered) + 1):
            together = " AND ".join(map(quoted, ordered[:width]))
            ((held,),) = await self.database.read(
                "SELECT COUNT(*) FROM chat_log_fts WHERE chat_log_fts MATCH ?", (together,)
            )
            if held < limit:
                if width == 2:
                    return [together, rarest], ordered[:2]
                break
            chosen = ([together], ordered[:width])
            if held <= CANDIDATE_ROWS:
                return chosen
        return chosen

    async def _document_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many indexed rows hold each term (the session's own: terms carry it)."""
        placeholders = ", ".join("?" for _ in terms)
        rows = await self.database.read(
            f"SELECT term, doc FROM chat_log_fts_vocab WHERE term IN ({placeholders})", terms
        )
        return {str(term): int(count) for term, count in rows}

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

    async def _newest_within(self, session_key: str, boost: PeriodBoost, limit: int) -> list[int]:
        rows = await self.database.read(
            "SELECT id FROM chat_log WHERE session_key = ? AND refused = 0 "
            "AND id BETWEEN ? AND ? ORDER BY id DESC LIMIT ?",
            (session_key, boost.first_id, boost.last_id, limit),
        )
        return [int(row[0]) for row in rows]

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

        def work(connection: Connection) -> None:
            if not rows:
                connection.execute("DELETE FROM chat_log_reindex")
                return
            # Rows refused or removed since they were read are left out.
            still_there = {
                int(row_id)
                for (row_id,) in connection.execute(
                    f"SELECT id FROM chat_log WHERE refused = 0 AND id IN "
                    f"({', '.join('?' for _ in ids)})",
                    ids,
                )
            }
            index_rows(
                connection,
                [
                    (row_id, *terms_of_row)
                    for row_id, terms_of_row in zip(ids, terms, strict=True)
                    if row_id in still_there
                ],
            )
            connection.execute("UPDATE chat_log_reindex SET below_id = ?", (ids[-1],))

        await self.database.write(work)


def index_rows(connection: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index (id, speaker terms, text terms) rows of chat_log: the terms are kept, and the
    index given them with their session's prefix."""
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


def unindex_rows(connection: Connection, where: str, params: Sequence[object]) -> None:
    """Take the rows `where` selects (over chat_log_terms t joined to chat_log c) out of the
    index: a contentless index forgets a row when told exactly the texts it was given."""
    selected = f"FROM chat_log_terms t JOIN chat_log c ON c.id = t.id WHERE {where}"
    connection.execute(
        "INSERT INTO chat_log_fts (chat_log_fts, rowid, speaker, tokens) "
        f"SELECT 'delete', {_INDEXED_VALUES} {selected}",
        params,
    )
    connection.execute(f"DELETE FROM chat_log_terms WHERE id IN (SELECT t.id {selected})", params)
