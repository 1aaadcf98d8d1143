"""Ranking of memory search on a small labelled set: tag hits above content hits, zero
scores dropped, and without a query everything, newest first."""

from __future__ import annotations

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import model_calls_one
from tests.quoted_blocks import memory_hits, memory_page

SCOPE = "g:501"

# label -> (content, tags)
LABELLED = {
    "vegetarian": ("小明(2001)吃素，不吃任何肉类", ["饮食"]),
    "meeting": ("群里每周五晚上八点开例会", ["约定"]),
    "birthday": ("小红(2002)的生日是三月十二日", ["生日"]),
    "cat": ("阿强(2003)养了一只叫豆豆的猫", ["宠物"]),
    "vet": ("宠物医院在学校东门", ["地点"]),
    "allergy": ("小红(2002)对花生过敏，聚餐要避开花生", ["饮食", "过敏"]),
    "trip": ("大家约好暑假一起去青岛旅游", ["计划"]),
    "diet talk": ("群里经常讨论饮食和减肥", ["闲聊"]),
}

# query -> expected hits in rank tiers, best tier first (one tier = equal scores)
EXPECTED = {
    "宠物": [{"cat"}, {"vet"}],
    "饮食": [{"vegetarian", "allergy"}, {"diet talk"}],
    "花生": [{"allergy"}],
    "量子物理": [],
}


@pytest.fixture
async def labelled(memory) -> dict[str, str]:
    """The labelled set saved in order; returns memory id -> label."""
    labels = {}
    for label, (content, tags) in LABELLED.items():
        outcome = await memory.save(SCOPE, content, tags=tags)
        assert outcome.status == "saved"
        labels[outcome.memory.id] = label
    return labels


def ranked_labels(hits, labels: dict[str, str]) -> list:
    return [labels[hit.memory.id] for hit in hits]


@pytest.mark.parametrize(("query", "expected"), EXPECTED.items(), ids=EXPECTED.keys())
async def test_search_ranks_the_labelled_set(memory, labelled, query, expected) -> None:
    hits = await memory.search(SCOPE, query)

    got = ranked_labels(hits, labelled)
    tiers, position = [], 0
    for tier in expected:
        tiers.append(set(got[position : position + len(tier)]))
        position += len(tier)
    assert (tiers, len(got)) == (expected, position), got


async def test_a_tag_hit_ranks_above_a_content_only_hit(memory, labelled) -> None:
    cat, vet = await memory.search(SCOPE, "宠物")

    assert (labelled[cat.memory.id], labelled[vet.memory.id]) == ("cat", "vet")
    assert cat.score > vet.score


async def test_entries_that_share_no_word_with_the_query_are_not_returned(memory, labelled) -> None:
    hits = await memory.search(SCOPE, "花生")

    assert ranked_labels(hits, labelled) == ["allergy"]
    assert all(hit.score > 0 for hit in hits)


@pytest.mark.parametrize("query", [None, "", "   "], ids=["none", "empty", "blank"])
async def test_without_a_query_every_entry_comes_newest_first(memory, labelled, query) -> None:
    hits = await memory.search(SCOPE, query, limit=50)

    assert ranked_labels(hits, labelled) == list(reversed(LABELLED))


async def test_limit_caps_the_number_of_hits(memory, labelled) -> None:
    hits = await memory.search(SCOPE, None, limit=3)

    assert ranked_labels(hits, labelled) == ["diet talk", "trip", "allergy"]


async def test_deleted_entries_are_not_found(memory, labelled) -> None:
    allergy_id = next(i for i, label in labelled.items() if label == "allergy")
    await memory.forget(SCOPE, allergy_id, by_person=False)

    assert await memory.search(SCOPE, "花生") == []


async def test_search_tool_lists_hits_one_per_line_best_first(plugin) -> None:
    bot = RecordingBot()
    memory = plugin.runtime.memory.service
    cat = (await memory.save("g:502", "阿强(2003)养了一只叫豆豆的猫", tags=["宠物"])).memory
    vet = (await memory.save("g:502", "宠物医院在学校东门")).memory
    await memory.save("g:502", "群里每周五晚上八点开例会")

    result = await model_calls_one(
        plugin,
        bot,
        group_message("豆豆生病了", group_id=502, to_me=True),
        "memory_search",
        {"query": "宠物"},
    )

    assert memory_hits(result) == [
        f"#{cat.id} 「阿强(2003)养了一只叫豆豆的猫」 [标签：宠物]",
        f"#{vet.id} 「宠物医院在学校东门」",
    ]


async def search_tool(plugin, group_id: int, arguments: dict) -> str:
    bot = RecordingBot()
    event = group_message("看看记忆", group_id=group_id, to_me=True)
    return await model_calls_one(plugin, bot, event, "memory_search", arguments)


async def test_search_tool_without_a_query_lists_all_entries_of_a_full_scope(plugin) -> None:
    memory = plugin.runtime.memory.service
    ids = []
    for i in range(memory.max_entries):
        ids.append((await memory.save("g:503", f"第{i}号群友的口头禅是“收到{i}”")).memory.id)

    result = await search_tool(plugin, 503, {})

    assert [line.split()[0] for line in memory_hits(result)] == [f"#{i}" for i in reversed(ids)]


async def test_search_tool_pages_a_listing_too_long_for_one_result(plugin) -> None:
    memory = plugin.runtime.memory.service
    ids = []
    for i in range(60):
        content = f"第{i}号群友的自我介绍：" + "我喜欢爬山、看电影和做饭，" * 15
        ids.append((await memory.save("g:504", content)).memory.id)

    first = await search_tool(plugin, 504, {"limit": 200})
    first_page = memory_page(first)
    first_lines = first_page.inside
    shown = len(first_lines)
    second = await search_tool(plugin, 504, {"limit": 200, "offset": shown})

    assert len(first) <= 8000
    assert 0 < shown < 60
    assert first_page.after == [f"（还有 {60 - shown} 条没有显示，用 offset={shown} 继续查看）"]
    listed = [line.split()[0] for line in [*first_lines, *memory_hits(second)]]
    assert listed == [f"#{i}" for i in reversed(ids)]
