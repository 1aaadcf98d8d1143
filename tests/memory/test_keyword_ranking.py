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
    from nonebot_plugin_aimemory.memory.index import keyword_ranking

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
    from nonebot_plugin_aimemory.memory.index import keyword_ranking

    entries = [entry("小明喜欢火锅"), entry("小红喜欢爬山"), entry("小刚喜欢游泳")]

    ((_, score),) = keyword_ranking("火锅", entries)

    # One occurrence in a content of average length: the term's idf, ln(1 + 2.5 / 1.5).
    assert score == pytest.approx(math.log(1 + 2.5 / 1.5))


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

    assert result.splitlines()[0].endswith("小红(2002)对花生过敏，聚餐要避开花生")
    assert "例会" not in result
