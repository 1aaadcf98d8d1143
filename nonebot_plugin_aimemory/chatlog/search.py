"""What `search_current_chat` finds: a session's rows by keyword (store/chat_log_index.py),
and with row vectors on, the keyword and vector rankings fused by their normalised scores
as memories are (text/fusion.py), so neither a paraphrase nor an exact name is lost to the
other signal.

Only the session's rows are ranked on either side. A keyword match the vector scan did not
reach (older than the rows it reads, or not embedded yet) ranks by keyword alone. The
keyword side is read deeper than the rows shown: a match the vectors agree with may come
from below the first page, and the weakest of its matches is what the keyword scores are
placed against. Both sides read the question as the model asked it; the keyword
side adds the words of its best rows (store/chat_log_feedback.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..store import SCORED_ROWS_KEPT, ChatLogStore, ChatRow, KeywordRanking
from ..text import fuse_rankings
from .vectors import RowVectors

# Keyword matches fused with the vector ranking: as many as the index keeps of a ranking.
FUSED_KEYWORD_ROWS = SCORED_ROWS_KEPT


async def search_rows(
    store: ChatLogStore,
    vectors: RowVectors,
    session_key: str,
    text: str,
    limit: int,
    periods: Sequence[tuple[str, str]] = (),
) -> list[ChatRow]:
    """The session's rows best matching `text`, best first; rows said within `periods`
    (UTC [start, end) texts) rank higher. By keyword alone while row vectors are off or the
    query cannot be embedded; a query of only stopwords finds nothing either way."""
    if not vectors.enabled:
        return await store.search(session_key, text, limit, periods=periods, feedback=True)
    depth = max(limit, FUSED_KEYWORD_ROWS)
    # The query's vector is asked for while its keywords are ranked (the embedding server
    # answers over the network, the database in its own thread): the search waits for the
    # slower of the two, not for both.
    embedding = asyncio.ensure_future(vectors.query_vector(text))
    try:
        keyword = await store.index.ranking(session_key, text, depth, periods, feedback=True)
    except BaseException:
        embedding.cancel()
        raise
    if not keyword.term_rows and not keyword.periods:
        embedding.cancel()
        return []  # nothing but stopwords: nothing to look for, by words or by meaning
    query_vector = await embedding
    if query_vector is None:
        ids = [row_id for row_id, _ in keyword.scored]
    else:
        ranked = await vectors.ranking(session_key, query_vector, keyword.periods)
        coverage = await _coverage(store, keyword)
        ids = [row_id for row_id, _ in fuse_rankings(keyword.scored, ranked, coverage)]
    return await _shown_rows(store, vectors, session_key, ids, limit)


async def _shown_rows(
    store: ChatLogStore, vectors: RowVectors, session_key: str, ids: Sequence[int], limit: int
) -> list[ChatRow]:
    """The first `limit` rows of `ids` that are still there, of this session, and not
    refused. The vectors are ranked from memory (row_matrices.py), which may still hold a
    row removed or refused since: it is skipped, the next one shown, and the vectors told."""
    shown: list[ChatRow] = []
    start = 0
    while len(shown) < limit and start < len(ids):
        wanted = ids[start : start + limit - len(shown)]
        start += len(wanted)
        rows = await store.rows_by_id(wanted)
        # Both rankings read this session only; checked again, as it must never fail.
        good = [row for row in rows if row.session_key == session_key and not row.refused]
        shown += good
        if len(good) < len(wanted):
            vectors.forget(session_key, set(wanted) - {row.id for row in good})
    return shown


async def _coverage(store: ChatLogStore, keyword: KeywordRanking) -> dict[int, float]:
    """Each keyword match's share of a full match of the query (see text/fusion.py)."""
    full = keyword.full_match_score(await store.index.logged_rows())
    return {row_id: min(1.0, score / full) if full > 0 else 1.0 for row_id, score in keyword.scored}
