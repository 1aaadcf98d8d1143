"""The chat log ranks alike on both databases: SQLite's FTS5 bm25() and the PostgreSQL term
arrays scored in SQL give the same rows the same scores, to the bit, so the same ranked ids
(ties newest first on both), over several sessions of Chinese and English chat, with rows
removed by retention and refused after they were indexed, with periods named, and with
every way a search chooses what to score (all terms, the rarest only, rows holding several
together)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_index import KeywordRanking
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow

SESSIONS = ("g:111", "g:222", "p:10001", "g:333")
SPEAKERS = (("2001", "小明"), ("2002", "阿强"), ("2003", "Alice"), ("2004", "王老师"))
START = datetime(2026, 11, 20, 8, tzinfo=timezone.utc)
CHINESE_SUBJECTS = ("我们", "小明", "阿强", "老王", "大家", "你")
CHINESE_VERBS = ("去", "想", "喜欢", "讨论", "说起", "又提到")
CHINESE_OBJECTS = (
    "吃火锅",
    "海底捞",
    "看电影",
    "爬山",
    "打篮球",
    "樱花",
    "会议纪要",
    "绿禾公园",
    "周末计划",
    "奶茶",
    "新番",
    "考试",
    "作业",
    "火锅店",
)
CHINESE_TAILS = ("吧", "了", "吗？", "，真不错", "！", "，下次再说", "，火锅火锅")
ENGLISH_WORDS = (
    "movie",
    "movies",
    "station",
    "park",
    "football",
    "pizza",
    "homework",
    "party",
    "meeting",
    "cats",
    "dog",
    "weekend",
    "photos",
    "share",
    "list",
    "talked",
    "talking",
)
ENGLISH_FRAMES = (
    "let's {0} the {1} tonight",
    "I'll share the {0} {1} with you",
    "did you see the {0}? the {1} was great",
    "{0} {0} {1}, again",
    "remember the {0} near the {1}",
)
QUERIES = (
    "火锅",
    "上次那家海底捞的火锅好吃吗",
    "周末去哪里玩",
    "阿强 火锅",
    "绿禾公园的樱花开了吗",
    "会议纪要发了吗",
    "奶茶 新番 考试 作业",
    "Which movies did you share with me?",
    "Alice football",
    "cats and dogs at the park",
    "homework party meeting weekend",
    "小明说的电影",
    "王老师",
)


def chat_line(rng: random.Random) -> str:
    """A line of chat: Chinese, English, or both."""
    chinese = (
        rng.choice(CHINESE_SUBJECTS)
        + rng.choice(CHINESE_VERBS)
        + rng.choice(CHINESE_OBJECTS)
        + rng.choice(CHINESE_TAILS)
    )
    english = rng.choice(ENGLISH_FRAMES).format(
        rng.choice(ENGLISH_WORDS), rng.choice(ENGLISH_WORDS)
    )
    return rng.choice((chinese, english, f"{chinese} {english}", chinese * rng.randint(1, 3)))


def generated_rows(count: int, seed: int) -> list[ChatRow]:
    """`count` rows over the sessions, in time order, people's and the bot's, some refused."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_text

    rng = random.Random(seed)
    rows = []
    for n in range(count):
        moment = utc_text(START + timedelta(minutes=29 * n))
        speaker_id, name = rng.choice(SPEAKERS)
        role = "assistant" if rng.random() < 0.2 else "user"
        rows.append(
            ChatRow(
                rng.choice(SESSIONS),
                moment,
                role,
                chat_line(rng),
                None if role == "assistant" else speaker_id,
                None if role == "assistant" else name,
                refused=rng.random() < 0.03,
            )
        )
    return rows


def day(offset: int) -> tuple[str, str]:
    """The UTC day `offset` days after the first row's, as a period."""
    from nonebot_plugin_aimemory.store.times import utc_text

    first = START.replace(hour=0) + timedelta(days=offset)
    return (utc_text(first), utc_text(first + timedelta(days=1)))


@pytest.fixture
async def both_stores(tmp_path, postgres_url: str) -> AsyncIterator[list[ChatLogStore]]:
    """The same chat log on a SQLite file and on a PostgreSQL database: the same rows
    written in the same batches (so the same ids), then a retention cut and refusals."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase
    from nonebot_plugin_aimemory.store.sqlite.database import Database
    from nonebot_plugin_aimemory.store.times import utc_text

    stores = [
        ChatLogStore(await Database.open(tmp_path / "parity.db")),
        ChatLogStore(await PostgresDatabase.open(postgres_url)),
    ]
    rows = generated_rows(600, seed=20261130)
    refused_later = [row for row in rows[300:600:37] if not row.refused]
    try:
        for store in stores:
            for start in range(0, len(rows), 70):
                await store.insert_many(rows[start : start + 70])
            await store.delete_older_than(utc_text(START + timedelta(hours=20)))
            await store.mark_refused(refused_later)
        yield stores
    finally:
        for store in stores:
            await store.database.close()


async def rankings(
    store: ChatLogStore, periods: list[tuple[str, str]], *, feedback: bool = False
) -> list[tuple[str, str, KeywordRanking]]:
    return [
        (key, text, await store.index.ranking(key, text, 15, periods, feedback=feedback))
        for key in SESSIONS
        for text in QUERIES
    ]


@pytest.mark.parametrize("feedback", [False, True])
@pytest.mark.parametrize("candidate_rows", [2000, 40, 6])
@pytest.mark.parametrize("days_named", [(), (3,), (2, 8)])
async def test_both_databases_rank_the_same_rows_with_the_same_scores(
    both_stores: list[ChatLogStore],
    monkeypatch: pytest.MonkeyPatch,
    candidate_rows: int,
    days_named: tuple[int, ...],
    feedback: bool,
) -> None:
    from nonebot_plugin_aimemory.store import chat_log_index

    monkeypatch.setattr(chat_log_index, "CANDIDATE_ROWS", candidate_rows)
    sqlite, postgresql = both_stores
    periods = [day(offset) for offset in days_named]

    on_sqlite = await rankings(sqlite, periods, feedback=feedback)
    on_postgresql = await rankings(postgresql, periods, feedback=feedback)

    assert on_postgresql == on_sqlite
    assert sum(len(ranking.scored) for _, _, ranking in on_sqlite) > 300
    if feedback:  # the feedback terms were scored, on both
        assert on_sqlite != await rankings(sqlite, periods)
    assert await postgresql.index.logged_rows() == await sqlite.index.logged_rows()


async def test_the_parity_data_hold_ties_and_every_session(
    both_stores: list[ChatLogStore],
) -> None:
    """The data behind the parity test are not trivial: every session has matches, and
    equal scores occur, which both order newest first."""
    sqlite, _ = both_stores

    ranked = await rankings(sqlite, [])

    assert {key for key, _, ranking in ranked if ranking.scored} == set(SESSIONS)
    for _, _, ranking in ranked:
        pairs = ranking.scored
        assert pairs == sorted(pairs, key=lambda pair: (pair[1], pair[0]), reverse=True)
    assert any(
        len({score for _, score in ranking.scored}) < len(ranking.scored)
        for _, _, ranking in ranked
    )
