"""search_current_chat takes what a model actually sends: a whole question in Chinese or
English, sharing a word or two with what was said; function words alone find nothing; names
jieba does not know are found through bigrams; the days a question names come first; and
the ranking is over every match, however many newer weak ones there are."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest

from tests.chatlog.helpers import GROUP, log_rows, model_calls
from tests.fakes.bots import RecordingBot
from tests.quoted_blocks import chat_rows

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore

CHINA = timezone(timedelta(hours=8))
STATION = "I'll meet you near the station at five"
HOTPOT = "周末我们去海底捞吃火锅吧"


async def search(plugin, keyword: str, **arguments) -> str:
    return await model_calls(
        plugin, RecordingBot(), "search_current_chat", {"keyword": keyword, **arguments}
    )


async def given_rows(store: ChatLogStore, *lines: str, at: datetime | None = None) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text, utc_text

    moment = utc_text(at) if at else utc_now_text()
    await store.insert_many(
        [ChatRow(GROUP, moment, "user", line, "2001", "小明") for line in lines]
    )


async def texts_found(store: ChatLogStore, query: str, limit: int = 20) -> list[str]:
    return [row.text for row in await store.search(GROUP, query, limit)]


# ---------------------------------------------------------------- questions


async def test_an_english_question_sharing_one_word_finds_the_line(plugin) -> None:
    await log_rows(plugin, GROUP, STATION, "the weather is lovely today")

    result = await search(plugin, "Where did we say we would meet at the stations?")

    assert STATION in result
    assert "weather" not in result


async def test_a_chinese_question_sharing_one_word_finds_the_line(plugin) -> None:
    await log_rows(plugin, GROUP, HOTPOT, "明天下午三点在会议室开会")

    result = await search(plugin, "我们之前说的那个火锅是在哪里吃来着？")

    assert HOTPOT in result
    assert "开会" not in result


@pytest.mark.parametrize(
    "keyword", ["的了吗", "what is the", "你还记得吗？", "Do you remember it?"]
)
async def test_a_question_of_only_stopwords_finds_nothing(plugin, keyword: str) -> None:
    await log_rows(plugin, GROUP, HOTPOT, STATION, "我的了吗呢", "what is it")

    result = await search(plugin, keyword)

    assert result.startswith("没有找到")


async def test_a_name_the_dictionary_does_not_know_is_found_through_bigrams(any_chat_store) -> None:
    await given_rows(any_chat_store, "周末去绿禾公园看樱花", "周末去公园散步")

    assert await texts_found(any_chat_store, "绿禾在哪") == ["周末去绿禾公园看樱花"]


async def test_plurals_and_possessives_meet_their_base_word(any_chat_store) -> None:
    await given_rows(any_chat_store, "John's cats were talking", "the dog barked")

    assert await texts_found(any_chat_store, "cat john talked") == ["John's cats were talking"]


async def test_the_best_match_of_a_question_comes_first(any_chat_store) -> None:
    await given_rows(any_chat_store, "我们去吃火锅", "我们去海底捞吃火锅", "海底捞人太多了")

    found = await texts_found(any_chat_store, "上次那家海底捞的火锅好吃吗")

    assert found[0] == "我们去海底捞吃火锅"
    assert sorted(found) == sorted(["我们去吃火锅", "我们去海底捞吃火锅", "海底捞人太多了"])


async def test_a_query_cannot_name_another_sessions_terms(any_chat_store) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    await any_chat_store.insert_many([ChatRow("g:222", utc_now_text(), "user", "火锅", "1", "B")])
    prefix = any_chat_store.index.postings.prefix("g:222")

    assert await texts_found(any_chat_store, prefix + "火锅") == []
    assert await texts_found(any_chat_store, "火锅") == []


async def test_the_speaker_s_name_counts_less_than_the_words(any_chat_store) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    await any_chat_store.insert_many(
        [
            ChatRow(GROUP, utc_now_text(), "user", "今天好累", "2002", "阿强"),
            ChatRow(GROUP, utc_now_text(), "user", "阿强说他想吃火锅", "2001", "小明"),
            ChatRow(GROUP, utc_now_text(), "user", "我想吃火锅", "2002", "阿强"),
        ]
    )

    found = await texts_found(any_chat_store, "阿强 火锅")

    assert set(found[:2]) == {"阿强说他想吃火锅", "我想吃火锅"}
    assert found[2:] == ["今天好累"]


# ---------------------------------------------------------------- ranking over all matches


async def test_an_old_strong_match_beats_3000_newer_weak_ones(any_chat_store) -> None:
    strong = "周末去绿禾公园看樱花，樱花开得正好"
    await given_rows(any_chat_store, strong)
    await given_rows(any_chat_store, *(f"周末愉快，第{i}次" for i in range(3000)))

    found = await texts_found(any_chat_store, "周末看樱花", limit=5)

    assert found[0] == strong


async def test_an_old_row_repeating_the_only_word_beats_3000_newer_passing_mentions(
    any_chat_store,
) -> None:
    focused = "火锅，火锅，还是火锅"
    await given_rows(any_chat_store, focused)
    passing = "周末安排了很多事：看电影、写作业、打扫房间，顺便吃个火锅，再去公园散步"
    await given_rows(any_chat_store, *(f"{passing}{i}" for i in range(3000)))

    assert (await texts_found(any_chat_store, "火锅", limit=5))[0] == focused


async def test_words_holding_too_many_rows_to_score_are_left_out(
    any_chat_store, monkeypatch
) -> None:
    from nonebot_plugin_aimemory.store import chat_log_index

    await given_rows(any_chat_store, "周末 周末 周末", "樱花", "樱花 周末", "周末 公园")
    every_word = await texts_found(any_chat_store, "樱花 周末")
    monkeypatch.setattr(chat_log_index, "CANDIDATE_ROWS", 2)  # "周末" is held by 3 rows

    rarest_only = await texts_found(any_chat_store, "樱花 周末")

    assert every_word[0] == "樱花 周末"
    assert len(every_word) == 4
    assert rarest_only == ["樱花", "樱花 周末"]


# ---------------------------------------------------------------- days


def at_china_noon(days_ago: int) -> datetime:
    today = datetime.now(CHINA).date() - timedelta(days=days_ago)
    return datetime(today.year, today.month, today.day, 12, tzinfo=CHINA)


async def test_a_question_naming_yesterday_finds_yesterday_s_line_first(plugin) -> None:
    from nonebot_plugin_aimemory.store.times import utc_text

    yesterday = "吃了火锅，海底捞的"
    await log_rows(plugin, GROUP, "火锅火锅火锅，最爱吃火锅", created_at=utc_text(at_china_noon(5)))
    await log_rows(plugin, GROUP, yesterday, created_at=utc_text(at_china_noon(1)))
    await log_rows(plugin, GROUP, "今天也想吃火锅", created_at=utc_text(at_china_noon(0)))

    result = await search(plugin, "昨天说的火锅是哪家？")

    assert chat_rows(result)[0].endswith(yesterday)
    assert "最爱吃火锅" in result  # the period ranks first; it filters nothing out


async def test_a_question_about_a_day_lists_that_day_without_shared_words(plugin) -> None:
    from nonebot_plugin_aimemory.store.times import utc_text

    await log_rows(plugin, GROUP, "前天去爬山了", created_at=utc_text(at_china_noon(2)))
    await log_rows(plugin, GROUP, "昨天看了电影", created_at=utc_text(at_china_noon(1)))

    result = await search(plugin, "yesterday: what did we talk about?")

    assert "昨天看了电影" in result
    assert "爬山" not in result


async def test_last_week_ranks_last_week_s_lines_first(plugin) -> None:
    from nonebot_plugin_aimemory.store.times import utc_text

    await log_rows(plugin, GROUP, "这周的会议纪要", created_at=utc_text(at_china_noon(0)))
    last_week = at_china_noon(datetime.now(CHINA).weekday() + 3)
    await log_rows(plugin, GROUP, "上周的会议纪要", created_at=utc_text(last_week))

    result = await search(plugin, "上周的会议纪要")

    assert chat_rows(result)[0].endswith("上周的会议纪要")


async def test_a_date_without_a_year_means_the_last_such_day_with_lines(any_chat_store) -> None:
    from nonebot_plugin_aimemory.chatlog.tools import named_periods

    today = datetime.now(CHINA)
    day = today - timedelta(days=40)
    if (day.month, day.day) == (2, 29):
        day -= timedelta(days=1)
    two_years_ago = day.replace(year=day.year - 2)
    await given_rows(any_chat_store, "那天去了博物馆", at=two_years_ago)
    await given_rows(any_chat_store, "今天去了公园", at=today)

    periods = await named_periods(
        any_chat_store, GROUP, f"{day.month}月{day.day}日去了哪里", CHINA, today
    )
    found = await any_chat_store.search(
        GROUP, f"{day.month}月{day.day}日去了哪里", 5, periods=periods
    )

    assert [row.text for row in found][:1] == ["那天去了博物馆"]


# ---------------------------------------------------------------- upgrades


def write_pre_upgrade_log(path, texts: list[str], *, refused_ids: tuple[int, ...] = ()) -> None:
    """A database as version 10 left it: chat-log rows 1..n of `g:1`, indexed the old way."""
    import sqlite3

    from nonebot_plugin_aimemory.store.sqlite.migrations import MIGRATIONS

    connection = sqlite3.connect(path)
    for version, script in enumerate(MIGRATIONS[:10], start=1):
        connection.executescript(f"{script}\nPRAGMA user_version = {version};")
    connection.executemany(
        "INSERT INTO chat_log (id, session_key, created_at, role, text) "
        "VALUES (?, 'g:1', '2026-11-30T00:00:00.000000Z', 'user', ?)",
        list(enumerate(texts, start=1)),
    )
    connection.executemany(
        "UPDATE chat_log SET refused = 1 WHERE id = ?", [(i,) for i in refused_ids]
    )
    connection.commit()
    connection.close()


async def test_rows_logged_before_the_upgrade_are_found_with_the_new_terms(tmp_path) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    path = tmp_path / "old.db"
    write_pre_upgrade_log(
        path, ["周末去绿禾公园看樱花", "my cats are cute", "refused"], refused_ids=(3,)
    )

    database = await Database.open(path)
    try:
        store = ChatLogStore(database)
        found = [
            r.text for q in ("绿禾", "cat", "refused") for r in await store.search("g:1", q, 5)
        ]
        pending = await database.read("SELECT COUNT(*) FROM chat_log_reindex")
    finally:
        await database.close()

    assert found == ["周末去绿禾公园看樱花", "my cats are cute"]
    assert pending == [(0,)]


async def test_rows_logged_before_the_upgrade_are_indexed_at_startup_without_a_search(
    plugin, tmp_path
) -> None:
    import asyncio

    path = tmp_path / "upgraded.db"
    write_pre_upgrade_log(path, [f"第{i}条旧消息" for i in range(1, 301)])

    runtime = await plugin.restart(aimemory_db_path=str(path))

    for _ in range(200):
        (pending,) = await runtime.database.read("SELECT COUNT(*) FROM chat_log_reindex")
        if pending == (0,):
            break
        await asyncio.sleep(0.02)
    assert pending == (0,)
    indexed = await runtime.database.read("SELECT COUNT(*) FROM chat_log_terms")
    assert indexed[0][0] == 300


async def test_when_every_term_is_common_the_rows_holding_them_together_come_first(
    any_chat_store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More rows hold each word than can be scored in time (a long chat about films):
    the rows holding both are the ones ranked, and they are what bm25() ranks first."""
    from nonebot_plugin_aimemory.store import chat_log_index

    monkeypatch.setattr(chat_log_index, "CANDIDATE_ROWS", 20)
    both = [f"I'll share the movie list number {n} with you" for n in range(12)]
    await given_rows(any_chat_store, *both)
    await given_rows(any_chat_store, *(f"that movie was long, part {n}" for n in range(40)))
    await given_rows(any_chat_store, *(f"please share the photos {n}" for n in range(40)))

    found = await texts_found(any_chat_store, "Which movies did you share with me?", limit=10)

    assert len(found) == 10
    assert set(found) <= set(both)


async def test_when_too_few_rows_hold_the_common_terms_together_all_of_the_rarest_count(
    any_chat_store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nonebot_plugin_aimemory.store import chat_log_index

    monkeypatch.setattr(chat_log_index, "CANDIDATE_ROWS", 20)
    # Other talk, so that neither word is held by half the log (bm25() gives such a word
    # no weight at all).
    await given_rows(any_chat_store, *(f"lunch at the canteen again, day {n}" for n in range(100)))
    await given_rows(any_chat_store, "I'll share the movie list with you")
    await given_rows(any_chat_store, *(f"that movie was long, part {n}" for n in range(40)))
    await given_rows(any_chat_store, *(f"please share the photos {n}" for n in range(30)))

    found = await texts_found(any_chat_store, "Which movies did you share with me?", limit=10)

    assert found[0] == "I'll share the movie list with you"
    assert len(found) == 10  # filled from the rows of the rarer word alone
    assert all("share" in text for text in found)
