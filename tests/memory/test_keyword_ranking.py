"""The keyword side of memory search: BM25F over content and tags with the scope's own
statistics, fed by the same query analysis as the chat log, so a whole question in either
language finds the memory it shares a word with, and a question of function words finds
nothing."""

from __future__ import annotations

import math

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import model_calls_one
from tests.quoted_blocks import memory_hits

GROUP = 701
SCOPE = f"g:{GROUP}"


def entry(content: str, tags: tuple[str, ...] = (), at: str = "2026-11-30T00:00:00.000000Z"):
    from nonebot_plugin_aimemory.memory.index import IndexedMemory
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

    record = MemoryRecord(
        id=content[:8], content=content, normalized=content, tags=list(tags), updated_at=at
    )
    return IndexedMemory.of(record)


def ranked(query: str, *entries) -> list[str]:
    from nonebot_plugin_aimemory.memory.keywords import keyword_ranking

    return [found.record.content for found, _ in keyword_ranking(query, list(entries))]


def test_an_english_question_sharing_one_word_finds_the_memory() -> None:
    found = ranked(
        "What kind of cats does Bob have at home?",
        entry("Bob(2004) has two cats"),
        entry("Alice(2005) likes jazz"),
    )

    assert found == ["Bob(2004) has two cats"]


def test_a_chinese_question_sharing_one_word_finds_the_memory() -> None:
    found = ranked(
        "我们之前说的那个过敏是什么来着？",
        entry("小红(2002)对花生过敏"),
        entry("小明(2001)喜欢爬山"),
    )

    assert found == ["小红(2002)对花生过敏"]


@pytest.mark.parametrize("query", ["的了吗", "what is the", "你还记得吗", "Do you remember?"])
def test_a_question_of_only_function_words_finds_nothing(query: str) -> None:
    assert ranked(query, entry("我的了吗"), entry("what is it"), entry("你还记得我吗")) == []


def test_a_rare_word_counts_more_than_a_common_one() -> None:
    found = ranked(
        "周末 滑雪",
        entry("周末去爬山"),
        entry("周末去看电影"),
        entry("冬天去滑雪"),
        entry("周末在家"),
    )

    assert found[0] == "冬天去滑雪"


def test_a_tag_match_counts_more_than_a_content_match() -> None:
    found = ranked("宠物", entry("宠物医院在学校东门"), entry("阿强养了一只猫", ("宠物",)))

    assert found == ["阿强养了一只猫", "宠物医院在学校东门"]


def test_a_shorter_memory_with_the_same_match_ranks_first() -> None:
    short = "小明喜欢火锅"
    long = "小明周末安排了很多事：看电影、写作业、打扫房间，顺便吃个火锅，再去公园散步"

    assert ranked("火锅", entry(long), entry(short)) == [short, long]


def test_equal_scores_rank_the_newest_first() -> None:
    older = entry("想吃火锅", at="2026-11-01T00:00:00.000000Z")
    newer = entry("爱吃火锅", at="2026-11-30T00:00:00.000000Z")

    assert ranked("火锅", older, newer) == ["爱吃火锅", "想吃火锅"]


def test_a_name_the_dictionary_does_not_know_is_found_through_bigrams() -> None:
    assert ranked("绿禾在哪", entry("阿强住在绿禾路"), entry("阿强住在西湖边")) == [
        "阿强住在绿禾路"
    ]


def test_a_score_is_about_the_idf_of_one_matched_word() -> None:
    from nonebot_plugin_aimemory.memory.keywords import CHARACTER_WEIGHT, keyword_ranking

    entries = [entry("小明喜欢火锅"), entry("小红喜欢爬山"), entry("小芳喜欢游泳")]

    ((_, score),) = keyword_ranking("火锅", entries)

    # One occurrence in a content of average length: the term's idf, ln(1 + 2.5 / 1.5); and
    # as much for each of its two characters, at the characters' weight.
    idf = math.log(1 + 2.5 / 1.5)
    assert score == pytest.approx(idf + CHARACTER_WEIGHT * 2 * idf)


async def test_memory_search_answers_a_whole_question(plugin) -> None:
    memory = plugin.runtime.memory.service
    await memory.save(SCOPE, "小红(2002)对花生过敏，聚餐要避开花生")
    await memory.save(SCOPE, "群里每周五晚上八点开例会")

    result = await model_calls_one(
        plugin,
        RecordingBot(),
        group_message("查一下", group_id=GROUP, to_me=True),
        "memory_search",
        {"query": "Who is allergic to peanuts? 谁对花生过敏来着？"},
    )

    assert memory_hits(result)[0].endswith("「小红(2002)对花生过敏，聚餐要避开花生」")
    assert "例会" not in result


def test_a_dish_split_into_its_characters_is_found_through_them() -> None:
    recipe = "醋、糖、酱油混在一起，鱼块腌制片刻再下锅"

    assert ranked("糖醋鱼怎么做", entry("周末去爬山"), entry(recipe)) == [recipe]


def test_one_character_in_common_finds_nothing() -> None:
    assert ranked("量子物理", entry("宠物医院在学校东门"), entry("阿强养了一只猫")) == []


def test_characters_do_not_find_when_the_caller_wants_words_only() -> None:
    from nonebot_plugin_aimemory.memory.keywords import keyword_ranking

    recipe = entry("醋、糖、酱油混在一起，鱼块腌制片刻再下锅")

    assert keyword_ranking("糖醋鱼怎么做", [recipe], characters_find=False) == []


def test_function_words_order_matches_but_never_find_alone() -> None:
    mine = "我的猫很胖"
    theirs = "猫在楼下晒太阳"

    # Both hold "猫"; the question's "我的" breaks the tie for the memory that says it.
    assert ranked("我的猫呢", entry(theirs), entry(mine), entry("我的天")) == [mine, theirs]


def day_entry(content: str, saved_at: str):
    from nonebot_plugin_aimemory.memory.index import IndexedMemory
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

    return IndexedMemory.of(
        MemoryRecord(id=content[:8], content=content, normalized=content, created_at=saved_at)
    )


def test_a_day_the_question_names_finds_what_was_saved_that_day() -> None:
    from datetime import date

    from nonebot_plugin_aimemory.memory.keywords import keyword_ranking
    from nonebot_plugin_aimemory.text import query

    that_day = day_entry("今天下雨，心情有点郁闷", "2023-05-04T03:00:00.000000Z")
    other_day = day_entry("今天晴天，去公园跑步", "2023-05-06T03:00:00.000000Z")
    asked = query.analyse("5月4号我的心情怎么样？", today=date(2026, 12, 1))

    found = keyword_ranking(asked, [other_day, that_day])

    assert [e.record.content for e, _ in found] == [that_day.record.content]


def test_a_day_counts_in_the_chat_time_zone() -> None:
    from datetime import date
    from zoneinfo import ZoneInfo

    from nonebot_plugin_aimemory.memory.keywords import keyword_ranking
    from nonebot_plugin_aimemory.text import query

    # 2026-11-30 17:00 UTC is already 1 December in Shanghai.
    late = day_entry("想吃火锅", "2026-11-30T17:00:00.000000Z")
    asked = query.analyse("今天说了什么", today=date(2026, 12, 1))

    assert keyword_ranking(asked, [late], ZoneInfo("Asia/Shanghai"))
    assert not keyword_ranking(asked, [late], ZoneInfo("UTC"))


async def test_memory_search_finds_what_was_saved_on_the_day_it_names(memory) -> None:
    from datetime import datetime, timezone

    real_clock = memory.clock
    memory.clock = lambda: datetime(2026, 5, 2, 12, tzinfo=timezone.utc)
    await memory.save(SCOPE, "小明在读《活着》")
    memory.clock = lambda: datetime(2026, 5, 9, 12, tzinfo=timezone.utc)
    await memory.save(SCOPE, "小明周末去爬山")
    memory.clock = real_clock

    hits = await memory.search(SCOPE, "我5月2日在看哪本书？")

    assert [hit.memory.content for hit in hits] == ["小明在读《活着》"]


async def test_auto_inject_reads_words_only_where_search_reads_characters_and_days(
    memory,
) -> None:
    await memory.save(SCOPE, "醋、糖、酱油混在一起，鱼块腌制片刻再下锅")

    searched = await memory.search(SCOPE, "今天想做糖醋鱼")
    injected = await memory.relevant(SCOPE, "今天想做糖醋鱼", top_k=3)

    assert [hit.memory.content for hit in searched] == ["醋、糖、酱油混在一起，鱼块腌制片刻再下锅"]
    assert injected == []
