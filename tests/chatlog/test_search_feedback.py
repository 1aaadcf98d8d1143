"""The model's chat-log search adds the words of its best rows to the query (pseudo-relevance
feedback, store/chat_log_feedback.py): a question naming a thing by something said of it
finds the row that answers, through the thing's name in the row that matched; a person's
search on the panel finds only rows holding their words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.chatlog.helpers import GROUP

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore

FILLER = [f"今天第{i}次提醒大家按时吃饭喝水" for i in range(20)]
DURATION = "智能科技新品发布盛典的持续时间是六天。"
ANSWER = "智能科技新品发布盛典的地点是山东青岛。"
OTHER_PLACE = "互联网发展论坛的地点是北京。"
OTHER_DURATION = "互联网发展论坛的持续时间是三天。"
QUESTION = "那个持续时间是六天的活动，地点是什么？"


async def given_rows(store: ChatLogStore, *lines: str) -> None:
    """`lines` said by 小明 in this order (each later one newer)."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    for line in lines:  # one batch each: ids in order
        await store.insert_many([ChatRow(GROUP, utc_now_text(), "user", line, "2001", "小明")])


async def found(store: ChatLogStore, text: str, *, feedback: bool) -> list[str]:
    return [row.text for row in await store.search(GROUP, text, 10, feedback=feedback)]


async def test_the_row_that_answers_is_found_through_the_name_in_the_row_that_matched(
    any_chat_store,
) -> None:
    # The other place is newer: by the question's words alone both places tie, newest first.
    await given_rows(any_chat_store, *FILLER, ANSWER, DURATION, OTHER_DURATION, OTHER_PLACE)

    plain = await found(any_chat_store, QUESTION, feedback=False)
    with_feedback = await found(any_chat_store, QUESTION, feedback=True)

    assert plain[0] == with_feedback[0] == DURATION
    assert plain.index(OTHER_PLACE) < plain.index(ANSWER)
    assert with_feedback.index(ANSWER) < with_feedback.index(OTHER_PLACE)


async def test_a_persons_search_finds_only_rows_holding_their_words(any_chat_store) -> None:
    unrelated = "智能科技新品发布盛典的门票已经卖完了"
    await given_rows(any_chat_store, *FILLER, DURATION, unrelated)

    assert await found(any_chat_store, "六天", feedback=False) == [DURATION]
    assert await found(any_chat_store, "六天", feedback=True) == [DURATION, unrelated]


async def test_words_held_only_by_the_best_rows_and_stopword_questions_add_nothing(
    any_chat_store,
) -> None:
    await given_rows(any_chat_store, *FILLER, "绿禾公园的樱花开了")

    assert await found(any_chat_store, "樱花", feedback=True) == ["绿禾公园的樱花开了"]
    assert await found(any_chat_store, "的了吗", feedback=True) == []
