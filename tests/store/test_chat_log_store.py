"""The chat log's store on both databases: rows removed by retention or refused leave the
search and stop weighing in its ranking, rows logged without their terms are indexed once,
and on PostgreSQL several processes writing at once keep the index's counts exact."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.backend import Backend
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow

KEY = "g:1"
OLD = "2026-01-01T00:00:00.000000Z"
CUTOFF = "2026-06-01T00:00:00.000000Z"
NOW = "2026-11-30T00:00:00.000000Z"


def row(text: str, *, at: str = NOW, key: str = KEY, name: str = "小明") -> ChatRow:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

    return ChatRow(key, at, "user", text, "2001", name)


async def found(store: ChatLogStore, query: str) -> list[str]:
    return [found_row.text for found_row in await store.search(KEY, query, 20)]


async def test_rows_older_than_the_cutoff_leave_the_log_and_its_search(
    any_chat_store: ChatLogStore,
) -> None:
    await any_chat_store.insert_many([row("老火锅", at=OLD), row("新火锅")])

    removed = await any_chat_store.delete_older_than(CUTOFF)

    assert removed == 1
    assert await found(any_chat_store, "火锅") == ["新火锅"]
    assert [r.text for r in await any_chat_store.recent(KEY, 10)] == ["新火锅"]


async def test_a_refused_row_is_never_found_again(any_chat_store: ChatLogStore) -> None:
    refused, kept = row("违规的火锅"), row("普通的火锅")
    await any_chat_store.insert_many([refused, kept])

    await any_chat_store.mark_refused([refused])

    assert await found(any_chat_store, "火锅") == ["普通的火锅"]
    assert [r.refused for r in await any_chat_store.recent(KEY, 10)] == [True, False]


async def test_removed_rows_no_longer_weigh_in_the_ranking(any_chat_store: ChatLogStore) -> None:
    """bm25() counts every indexed row (its N, the terms' rows, the average length): once
    rows are gone, the ranking is exactly what it was before they came."""
    await any_chat_store.insert_many(
        [row("周末吃火锅"), row("火锅火锅火锅"), row("周末去公园", name="阿强")]
    )
    before = await any_chat_store.index.ranking(KEY, "阿强 周末 火锅", 10)
    await any_chat_store.insert_many(
        [row(f"周末的火锅很长很长的一句话 {n}", at=OLD) for n in range(30)]
        + [row("refused 火锅", at=OLD), row("别的群的火锅", at=OLD, key="g:2")]
    )
    await any_chat_store.mark_refused([row("refused 火锅", at=OLD)])

    await any_chat_store.delete_older_than(CUTOFF)

    assert await any_chat_store.index.ranking(KEY, "阿强 周末 火锅", 10) == before
    assert len(before.scored) == 3


async def test_a_ranking_carries_how_many_rows_hold_each_term_of_the_query(
    any_chat_store: ChatLogStore,
) -> None:
    """What recall weighs the terms by comes with the ranking: no second look-up."""
    # given rows holding 火锅 twice and 周末 once, and none holding 电影
    await any_chat_store.insert_many([row("火锅"), row("周末 火锅"), row("公园")])

    # when a query of the three is ranked
    ranking = await any_chat_store.index.ranking(KEY, "周末 火锅 电影", 10)

    # then the ranking carries the query's terms and the rows holding each, as counted
    assert {"周末", "火锅", "电影"} <= set(ranking.terms)
    assert ranking.term_counts == await any_chat_store.index.term_rows(KEY, ranking.terms)
    assert (ranking.term_counts["火锅"], ranking.term_counts["周末"]) == (2, 1)
    assert "电影" not in ranking.term_counts


async def test_a_recall_reads_its_ranking_rows_and_log_span_in_one_database_call(
    any_chat_store: ChatLogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall runs on every addressed turn: each hand-over to the database's thread costs
    the event loop a wake-up, so what it reads is read in one."""
    # given rows of two chats, some holding the query's words
    await any_chat_store.insert_many(
        [row("周末 火锅"), row("火锅"), row("公园"), row("别的群的火锅", key="g:2")]
    )
    ranking = await any_chat_store.index.ranking(KEY, "周末 火锅 电影", 10)
    rows = await any_chat_store.rows_by_id([row_id for row_id, _ in ranking.scored])
    logged = await any_chat_store.index.logged_rows()
    calls: list[str] = []
    database = any_chat_store.database
    for name in ("read", "read_all", "write", "write_one"):
        method = getattr(database, name)

        def counted(*args, method=method, name=name):
            calls.append(name)
            return method(*args)

        monkeypatch.setattr(database, name, counted)

    # when the rows of the same query are read for a recall
    ranked = await any_chat_store.ranked_rows(KEY, "周末 火锅 电影", 10)

    # then they are the ranking's, as a search reads them, in one call on the database
    assert (ranked.ranking, ranked.rows, ranked.logged_rows) == (ranking, rows, logged)
    assert [r.text for r in ranked.rows] == ["周末 火锅", "火锅"]
    assert calls == ["read_all"]


async def test_a_log_written_a_row_at_a_time_keeps_its_sqlite_index_in_few_pieces(
    chat_store: ChatLogStore,
) -> None:
    """FTS5 merges its segments on its own only after 64 pages are written: a log flushed
    a few rows at a time would pile up a dozen one-page segments, every term of every
    search looked up in each (a recall ~0.5 ms slower). Each write merges some."""
    # given a chat logged one row per write, as a quiet chat's flushes write it
    for n in range(30):
        await chat_store.insert_many([row(f"周末的火锅 第{n}句")])

    # then the index is a few pages, not a page for each write (17 without the merging)
    ((pages,),) = await chat_store.database.read("SELECT COUNT(*) FROM chat_log_fts_data")
    assert pages <= 8
    # and every row is still found
    assert len(await chat_store.search(KEY, "火锅", 50)) == 30


async def test_a_word_of_thousands_of_letters_is_logged_and_found(
    any_chat_store: ChatLogStore,
) -> None:
    letters = random.Random(5)
    # Longer than a PostgreSQL index key may be, even compressed.
    word = "".join(letters.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4000))

    await any_chat_store.insert_many([row(f"{word} 火锅"), row("普通的一句")])

    assert await found(any_chat_store, word) == [f"{word} 火锅"]
    assert await found(any_chat_store, "普通") == ["普通的一句"]


async def test_a_message_holding_nul_is_logged_found_and_refused(
    any_chat_store: ChatLogStore,
) -> None:
    """PostgreSQL's text cannot hold NUL: it is kept as U+FFFD there, on SQLite as sent."""
    message = row("火锅\x00店")

    await any_chat_store.insert_many([message, row("火锅")])
    assert sorted(await found(any_chat_store, "店")) in (["火锅\x00店"], ["火锅\ufffd店"])
    await any_chat_store.mark_refused([message])

    assert await found(any_chat_store, "火锅") == ["火锅"]


async def log_unindexed(database: Backend, texts: list[str], first_id: int) -> None:
    """Rows written without their search terms (as a copy into PostgreSQL writes them),
    marked to be indexed from the newest down."""

    def work(connection) -> None:
        connection.executemany(
            "INSERT INTO chat_log (id, session_key, created_at, role, text) "
            "VALUES (?, ?, ?, 'user', ?)",
            [(first_id + n, KEY, NOW, text) for n, text in enumerate(texts)],
        )
        connection.execute("UPDATE chat_log_ids SET last_id = ?", (first_id + len(texts) - 1,))
        connection.execute("DELETE FROM chat_log_reindex")
        connection.execute(
            "INSERT INTO chat_log_reindex (only_row, below_id) VALUES (1, ?)",
            (first_id + len(texts),),
        )

    await database.write(work)


async def test_rows_logged_without_their_terms_are_indexed_once(any_database: Backend) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore

    await log_unindexed(any_database, ["复制来的火锅", "复制来的电影"], first_id=1)
    first = ChatLogStore(any_database)
    assert await found(first, "火锅") == ["复制来的火锅"]
    await first.insert_many([row("新说的火锅")])

    # The marker set again over rows indexed already (a second copy): nothing twice.
    await log_unindexed(any_database, ["再复制的火锅"], first_id=10)
    again = ChatLogStore(any_database)

    assert sorted(await found(again, "火锅")) == sorted(
        ["再复制的火锅", "新说的火锅", "复制来的火锅"]
    )
    assert await any_database.read("SELECT COUNT(*) FROM chat_log_reindex") == [(0,)]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_several_processes_writing_at_once_keep_the_index_counts_exact(
    open_backend, any_database: Backend
) -> None:
    """PostgreSQL's own counts (SQLite's FTS5 keeps its own): three connections insert,
    refuse, expire and embed rows at once; afterwards every count equals a recount."""
    from nonebot_plugin_aimemory.engine.embeddings import VectorMaker
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore

    maker = VectorMaker("m", "none")

    others = [await open_backend(), await open_backend()]
    stores = [ChatLogStore(database) for database in (any_database, *others)]

    async def talk(store: ChatLogStore, who: str) -> None:
        for batch in range(15):
            rows = [
                row(f"{who} 周末吃火锅 第{batch}批 {n}", at=OLD if n % 3 else NOW) for n in range(8)
            ]
            ids = await store.insert_many(rows)
            await store.mark_refused(rows[:1])
            await store.vectors.put(maker, [(row_id, [1.0, 0.5]) for row_id in ids])

    async def expire(store: ChatLogStore) -> None:
        for _ in range(15):
            await store.delete_older_than(CUTOFF)
            await asyncio.sleep(0)

    try:
        await asyncio.gather(talk(stores[0], "甲"), talk(stores[1], "乙"), expire(stores[2]))
        await stores[2].delete_older_than(CUTOFF)
        counts = await any_database.read(
            "SELECT term, holding_rows FROM chat_log_term_rows ORDER BY term"
        )
        recount = await any_database.read(
            "SELECT u.term, COUNT(*) FROM chat_log_terms "
            "CROSS JOIN LATERAL unnest(terms) AS u (term) GROUP BY u.term ORDER BY u.term"
        )
        totals = await any_database.read(
            "SELECT indexed_rows, indexed_tokens FROM chat_log_terms_total"
        )
        retotal = await any_database.read(
            "SELECT COUNT(*), COALESCE(SUM(token_count), 0) FROM chat_log_terms"
        )
        indexed = await any_database.read("SELECT id FROM chat_log_terms ORDER BY id")
        accepted = await any_database.read("SELECT id FROM chat_log WHERE refused = 0 ORDER BY id")
    finally:
        for database in others:
            await database.close()

    assert counts == recount
    assert totals == retotal
    assert indexed == accepted
    # Two writers, 15 batches, each batch's three new rows less the one refused.
    assert len(accepted) == 2 * 15 * 2
