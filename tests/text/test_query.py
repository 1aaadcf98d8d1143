"""How a search reads its query: the content terms of a question in either language (function
words and stopwords dropped, English lightly normalised, numbers kept), bigrams for words
the dictionary does not know, and the days a query names."""

from __future__ import annotations

from datetime import date

import pytest

TODAY = date(2026, 12, 2)  # a Wednesday


def terms(text: str) -> tuple[str, ...]:
    from nonebot_plugin_aimemory.text.query import analyse

    return analyse(text).terms


def periods(text: str, today: date = TODAY) -> list[tuple[date, date]]:
    from nonebot_plugin_aimemory.text.query import analyse

    return [(p.first, p.last) for p in analyse(text, today).periods]


# ---------------------------------------------------------------- terms


def test_an_english_question_keeps_only_its_content_words() -> None:
    assert terms("What did I say about the football match?") == ("say", "football", "match")


def test_a_chinese_question_keeps_only_its_content_words() -> None:
    assert terms("我们之前说的那个火锅店在哪里？") == ("说", "火锅", "火锅店")


@pytest.mark.parametrize(
    "question",
    ["的了吗", "what is the", "Do you remember what it was?", "你还记得吗？", "？！…", "   "],
)
def test_a_question_of_only_function_words_has_no_terms(question: str) -> None:
    assert terms(question) == ()


@pytest.mark.parametrize(
    ("asked", "stored"),
    [
        ("cats", "cat"),
        ("parties", "party"),
        ("movies", "movie"),
        ("boxes", "box"),
        ("John's", "john"),
        ("CAFÉ", "cafe"),
        ("ｆｕｌｌ", "full"),
        ("2nd", "2"),
        ("05", "5"),
    ],
)
def test_english_is_normalised_the_same_way_on_both_sides(asked: str, stored: str) -> None:
    from nonebot_plugin_aimemory.text import segmenter

    assert segmenter.terms(asked) == segmenter.terms(stored)


def test_numbers_and_dates_are_terms() -> None:
    assert terms("2023年5月2日 约了 3 位") == ("2023", "年", "5", "月", "2", "日", "约", "3", "位")


def test_a_name_the_dictionary_does_not_know_is_cut_into_bigrams() -> None:
    from nonebot_plugin_aimemory.text import segmenter

    assert {"绿禾", "禾路"} <= set(segmenter.terms("我住在绿禾路"))


def test_a_bigram_with_a_function_character_is_no_query_term() -> None:
    assert "说的" not in terms("他说的绿禾")
    assert "绿禾" in terms("他说的绿禾")


def test_a_dictionary_word_holding_a_function_character_stays_a_term() -> None:
    assert terms("可爱的和平鸽")[:2] == ("可爱", "和平")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("我对什么食物过敏来着？", ("食物", "过敏")),
        ("他住哪儿来着", ("住",)),
        ("他来了吗？", ("来",)),
    ],
)
def test_a_piece_of_a_function_word_is_no_term(question: str, expected: tuple[str, ...]) -> None:
    # the segmenter also cuts "来着" into "来" and "着"; a "来" of its own is a word
    assert terms(question) == expected


def test_a_question_keeps_its_function_words_apart_as_weak_terms() -> None:
    from nonebot_plugin_aimemory.text.query import analyse

    asked = analyse("你还记得我们说的那个火锅店吗？")

    assert asked.terms == ("说", "火锅", "火锅店")
    assert asked.weak_terms == ("你", "还", "我们", "的", "那个", "吗")  # 记得 only asks


def test_fts5_syntax_is_just_words() -> None:
    assert terms('"火锅" OR * NEAR( -开会) AND NOT ^:') == ("火锅", "near", "开会")


def test_a_long_query_keeps_its_first_64_terms() -> None:
    found = terms(" ".join(f"word{i}" for i in range(100)))

    assert found == tuple(f"word{i}" for i in range(64))


def test_a_question_after_several_sentences_keeps_the_words_it_asks_about() -> None:
    found = terms(
        "我最近参加了一个好玩的短期活动，每天都很充实，就是地点有点偏远，交通不太方便。"
        "不过话说回来，我国的地域真的好广阔，适合举办各种活动。哦豁，我其实是想搞清楚，"
        "那个持续时间是六天的活动，地点是什么？"
    )

    assert {"持续时间", "六天", "地点"} <= set(found)


# ---------------------------------------------------------------- days


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("今天说的", date(2026, 12, 2), date(2026, 12, 2)),
        ("today", date(2026, 12, 2), date(2026, 12, 2)),
        ("昨天的火锅", date(2026, 12, 1), date(2026, 12, 1)),
        ("what we said yesterday", date(2026, 12, 1), date(2026, 12, 1)),
        ("前天", date(2026, 11, 30), date(2026, 11, 30)),
        ("这周", date(2026, 11, 30), date(2026, 12, 6)),
        ("本周", date(2026, 11, 30), date(2026, 12, 6)),
        ("上周说的", date(2026, 11, 23), date(2026, 11, 29)),
        ("last week", date(2026, 11, 23), date(2026, 11, 29)),
        ("上个月", date(2026, 11, 1), date(2026, 11, 30)),
        ("last month", date(2026, 11, 1), date(2026, 11, 30)),
        ("5月2日", date(2026, 5, 2), date(2026, 5, 2)),
        ("12月25号", date(2025, 12, 25), date(2025, 12, 25)),  # not yet this year
        ("2023年5月2日", date(2023, 5, 2), date(2023, 5, 2)),
        ("2023-05-02", date(2023, 5, 2), date(2023, 5, 2)),
        ("On May 4th", date(2026, 5, 4), date(2026, 5, 4)),
        ("the 2nd of March, 2024", date(2024, 3, 2), date(2024, 3, 2)),
    ],
)
def test_a_query_names_its_days(text: str, first: date, last: date) -> None:
    assert periods(text) == [(first, last)]


def test_last_month_in_january_is_december() -> None:
    assert periods("上个月", date(2027, 1, 15)) == [(date(2026, 12, 1), date(2026, 12, 31))]


def test_relative_days_are_not_terms() -> None:
    assert terms("昨天上周上个月 yesterday last week 的火锅") == ("火锅",)


def test_a_query_without_days_names_no_period() -> None:
    assert periods("火锅店在哪里") == []
    assert periods("2月30日") == []  # no such day


def test_a_period_covers_its_days_in_the_configured_zone() -> None:
    from datetime import datetime, timedelta, timezone

    from nonebot_plugin_aimemory.text.query import Period

    china = timezone(timedelta(hours=8))
    start, end = Period(date(2026, 12, 1), date(2026, 12, 1)).utc_bounds(china)

    assert start.astimezone(timezone.utc) == datetime(2026, 11, 30, 16, tzinfo=timezone.utc)
    assert end - start == timedelta(days=1)
