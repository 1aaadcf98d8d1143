"""Full-text search of the chat log (jieba tokens in FTS5), and the two chat-log tools the
model reads it with: bound to the session, capped in size, every line attributed."""

from __future__ import annotations

import re
import sqlite3
import sys
from typing import TYPE_CHECKING

import pytest

from tests.chatlog.helpers import GROUP, LINE_PATTERN, log_rows, model_calls, said
from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import text, tool_calls
from tests.quoted_blocks import chat_rows

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow

HOTPOT = "周末我们去海底捞吃火锅吧"
MEETING = "明天下午三点在会议室开会"
FOOTBALL = "Let's watch the football match tonight"
MILK = "remember to buy some milk"
NEAR_STATION = "meet me near the station or the park"


async def given_rows(store: ChatLogStore, *lines: str, key: str = GROUP) -> list[ChatRow]:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    await store.insert_many(
        [ChatRow(key, utc_now_text(), "user", line, "2001", "小明") for line in lines]
    )
    return await store.recent(key, 100)


async def texts_found(store: ChatLogStore, query: str, key: str = GROUP) -> list[str]:
    return [row.text for row in await store.search(key, query, 20)]


# ---------------------------------------------------------------- the store


@pytest.mark.skipif(
    sys.version_info < (3, 11), reason="Connection.setlimit, to play an old SQLite, is 3.11+"
)
async def test_a_flush_of_more_rows_than_an_old_sqlite_has_variables_is_indexed(
    chat_store,
) -> None:
    # SQLite before 3.32 (the system library of some distributions) allows 999 variables.
    await chat_store.database.write(
        lambda connection: connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    )
    lines = [f"第{n}条消息 随便聊聊" for n in range(1_200)]

    await given_rows(chat_store, *lines[:-1], HOTPOT)

    assert await texts_found(chat_store, "火锅") == [HOTPOT]


async def test_a_chinese_word_finds_the_chinese_sentence_it_is_part_of(any_chat_store) -> None:
    await given_rows(any_chat_store, HOTPOT, MEETING)

    assert await texts_found(any_chat_store, "火锅") == [HOTPOT]
    assert await texts_found(any_chat_store, "开会") == [MEETING]


async def test_an_english_word_finds_the_english_sentence_whatever_its_case(any_chat_store) -> None:
    await given_rows(any_chat_store, FOOTBALL, MILK, HOTPOT)

    assert await texts_found(any_chat_store, "Football") == [FOOTBALL]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"火锅', [HOTPOT]),
        ("火锅*", [HOTPOT]),
        ("(火锅)", [HOTPOT]),
        ("-开会", [MEETING]),
        ("^火锅", [HOTPOT]),  # not "only at the start of the text"
        ("tokens:开会", [MEETING]),  # not a column filter
        ("session_key:开会", [MEETING]),
        ("火锅 AND NOT 开会", [HOTPOT, MEETING]),  # NOT is a word, not an operator
        ("火锅 OR 开会", [HOTPOT, MEETING]),
        ("NEAR(火锅 开会, 2)", [HOTPOT, MEETING, NEAR_STATION]),  # "near" is a word here
        ("火*", []),  # not a prefix query
        ('"', []),
        ("*", []),
        ("NEAR", [NEAR_STATION]),
        ("OR", []),
        ("-", []),
        ("(", []),
        (")", []),
        ("AND NOT", []),
        ("^", []),
        (":", []),
        ('"火锅" OR * NEAR( -开会) AND NOT ^:', [HOTPOT, MEETING, NEAR_STATION]),
    ],
)
async def test_fts5_syntax_in_a_query_is_taken_as_plain_words(
    any_chat_store, query: str, expected: list[str]
) -> None:
    await given_rows(any_chat_store, HOTPOT, MEETING, NEAR_STATION)

    found = await texts_found(any_chat_store, query)

    assert sorted(found) == sorted(expected)


async def test_results_are_ranked_by_relevance_before_recency(any_chat_store) -> None:
    focused = "火锅，火锅，还是火锅"
    passing = "周末安排了很多事：看电影、写作业、打扫房间，顺便吃个火锅，再去公园散步"
    await given_rows(any_chat_store, focused, passing)

    assert await texts_found(any_chat_store, "火锅") == [focused, passing]


async def test_equally_relevant_results_come_newest_first(any_chat_store) -> None:
    rows = await given_rows(any_chat_store, "吃火锅", "吃火锅")

    found = await any_chat_store.search(GROUP, "火锅", 20)

    assert [r.id for r in found] == [rows[1].id, rows[0].id]


async def test_search_never_returns_another_sessions_rows(any_chat_store) -> None:
    await given_rows(any_chat_store, "A 群说吃火锅", key="g:111")
    await given_rows(any_chat_store, "B 群也说吃火锅", key="g:222")

    assert await texts_found(any_chat_store, "火锅", key="g:111") == ["A 群说吃火锅"]


# ---------------------------------------------------------------- the tools


async def test_search_current_chat_finds_a_chinese_sentence(plugin) -> None:
    await log_rows(plugin, GROUP, HOTPOT, MEETING)

    result = await model_calls(plugin, RecordingBot(), "search_current_chat", {"keyword": "火锅"})

    assert HOTPOT in result
    assert MEETING not in result


async def test_search_current_chat_finds_an_english_sentence(plugin) -> None:
    await log_rows(plugin, GROUP, FOOTBALL, MILK)

    result = await model_calls(plugin, RecordingBot(), "search_current_chat", {"keyword": "milk"})

    assert MILK in result
    assert FOOTBALL not in result


async def test_a_search_for_the_message_itself_does_not_find_it(plugin) -> None:
    # given a member who asked the same earlier, and another member who said it too
    question = "猫为什么喜欢钻纸箱？"
    bot = RecordingBot()
    plugin.llm.script(text("因为纸箱又暖和又安全。"))
    await bot.receive(said(f"{question}", to_me=True, user_id=2002, card="阿强"))
    # when the model searches the chat for the words of the message it answers (as the
    # real model did, and took the message found for its answer)
    plugin.llm.script(tool_calls(("search_current_chat", {"keyword": question})), text("好的"))
    await bot.receive(said(question, to_me=True, user_id=2001, card="小明"))
    result = plugin.llm.last_messages()[-1]["content"]
    # then the message being answered is left out, and the other member's line is found
    assert "阿强(2002)：猫为什么喜欢钻纸箱？" in result
    assert "小明(2001)" not in result
    assert result.count(question) == 1


async def test_search_current_chat_with_fts5_syntax_answers_instead_of_failing(plugin) -> None:
    await log_rows(plugin, GROUP, HOTPOT, MEETING)
    keyword = '"火锅" OR * NEAR( -x) AND NOT ^:'

    result = await model_calls(plugin, RecordingBot(), "search_current_chat", {"keyword": keyword})

    assert not result.startswith("错误")
    assert HOTPOT in result
    assert MEETING not in result


async def test_search_current_chat_lists_the_best_match_first(plugin) -> None:
    focused = "火锅，火锅，还是火锅"
    passing = "周末安排了很多事：看电影、写作业、打扫房间，顺便吃个火锅，再去公园散步"
    await log_rows(plugin, GROUP, focused, passing)

    result = await model_calls(plugin, RecordingBot(), "search_current_chat", {"keyword": "火锅"})

    assert result.index(focused) < result.index(passing)


async def test_search_current_chat_in_one_group_never_returns_another_groups_rows(plugin) -> None:
    await log_rows(plugin, "g:222", "B 群说周五吃火锅")
    await log_rows(plugin, GROUP, "A 群说周六吃火锅")
    arguments = {"keyword": "火锅", "group_id": 222, "session_key": "g:222"}

    result = await model_calls(plugin, RecordingBot(), "search_current_chat", arguments)

    assert "周六" in result
    assert "周五" not in result


async def test_read_recent_chat_in_one_group_never_returns_another_groups_rows(plugin) -> None:
    await log_rows(plugin, "g:222", "B 群的秘密")
    await log_rows(plugin, GROUP, "A 群的日常")

    result = await model_calls(plugin, RecordingBot(), "read_recent_chat", {"limit": 100})

    assert "A 群的日常" in result
    assert "B 群" not in result


async def test_read_recent_chat_shows_the_newest_twenty_lines_by_default(plugin) -> None:
    await log_rows(plugin, GROUP, *(f"第{i}条" for i in range(30)))

    result = await model_calls(plugin, RecordingBot(), "read_recent_chat", {})

    lines = chat_rows(result)
    assert len(lines) == 20
    assert lines[0].endswith("：第11条")  # the 20th newest: the request itself is the newest
    assert lines[-1].endswith("：帮我查一下")


@pytest.mark.parametrize(("limit", "shown"), [(0, 1), (-5, 1), (1, 1), (100, 100), (1000, 100)])
async def test_read_recent_chat_keeps_its_limit_between_1_and_100(
    plugin, limit: int, shown: int
) -> None:
    await log_rows(plugin, GROUP, *(f"第{i}条" for i in range(150)))

    result = await model_calls(plugin, RecordingBot(), "read_recent_chat", {"limit": limit})

    assert len(chat_rows(result)) == shown


async def test_read_recent_chat_returns_at_most_8000_characters_newest_kept(plugin) -> None:
    await log_rows(plugin, GROUP, *(f"第{i}条" + "很长的话" * 75 for i in range(100)))

    result = await model_calls(plugin, RecordingBot(), "read_recent_chat", {"limit": 100})

    lines = chat_rows(result)
    assert len(result) <= 8000
    assert lines[-1].endswith("：帮我查一下")
    assert all(re.match(LINE_PATTERN, line) for line in lines)


async def test_search_current_chat_returns_at_most_8000_characters(plugin) -> None:
    await log_rows(plugin, GROUP, *(f"第{i}次说火锅" + "很长的话" * 75 for i in range(100)))

    result = await model_calls(
        plugin, RecordingBot(), "search_current_chat", {"keyword": "火锅", "limit": 100}
    )

    lines = chat_rows(result)
    assert len(result) <= 8000
    assert "火锅" in lines[0]
    assert all(re.match(LINE_PATTERN, line) for line in lines)


async def test_every_line_of_read_recent_chat_names_its_time_and_speaker(plugin, reviewer) -> None:
    bot = RecordingBot()
    await bot.receive(said("周五聚餐", to_me=True))

    result = await model_calls(plugin, bot, "read_recent_chat", {})

    lines = chat_rows(result)
    assert len(lines) == 3  # 周五聚餐, the reply 好的, 帮我查一下
    assert all(re.match(LINE_PATTERN, line) for line in lines), lines
    assert re.match(r"^\[[^\]]+\] 小明\(2001\)：周五聚餐$", lines[0])
    assert re.match(r"^\[[^\]]+\] 机器人：好的$", lines[1])


async def test_a_message_of_several_lines_stays_on_one_line_with_its_time_and_speaker(
    plugin,
) -> None:
    await log_rows(plugin, GROUP, "聚餐安排：\n周五 火锅\r\n周六 烧烤")

    for tool, arguments in (
        ("read_recent_chat", {}),
        ("search_current_chat", {"keyword": "烧烤"}),
    ):
        result = await model_calls(plugin, RecordingBot(), tool, arguments)
        lines = chat_rows(result)
        assert all(re.match(LINE_PATTERN, line) for line in lines), lines
        assert any(line.endswith("聚餐安排： ⏎ 周五 火锅 ⏎ 周六 烧烤") for line in lines), lines


async def test_a_match_longer_than_the_cap_is_still_reported_as_found(plugin) -> None:
    await log_rows(plugin, GROUP, "麻辣烫" + "很长的一段话" * 2000)

    result = await model_calls(plugin, RecordingBot(), "search_current_chat", {"keyword": "麻辣烫"})

    (line,) = chat_rows(result)
    assert "没有找到" not in result
    assert len(result) <= 8000
    assert re.match(LINE_PATTERN + "麻辣烫", line), line[:100]
