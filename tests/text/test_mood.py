"""The mood of a line: a reply that only acknowledges, a question asking for information."""

from __future__ import annotations

import pytest


def acknowledges(text: str) -> bool:
    from nonebot_plugin_aimemory.text import is_acknowledgement

    return is_acknowledgement(text)


def asks_what(text: str) -> bool:
    from nonebot_plugin_aimemory.text import asks_what as asks

    return asks(text)


def recalls_oneself(text: str) -> bool:
    from nonebot_plugin_aimemory.text import recalls_oneself as recalls

    return recalls(text)


@pytest.mark.parametrize(
    "reply",
    [
        "好的，我已记录下你的回复。",
        "记住了。",
        "已记。",
        "明白了，我会记住。",
        "好的，记下了，小明(20001)。",
        "好的，我会记录你的提问并参考之前的对话内容。",
        "OK, noted!",
        "Got it, I will remember.",
    ],
)
def test_a_reply_that_only_says_it_noted_something_acknowledges(reply: str) -> None:
    assert acknowledges(reply)


@pytest.mark.parametrize(
    "reply",
    [
        "豆包。",
        "好的，你女儿叫果果。",
        "嗯，北京",
        "不会，但我可以教你。",
        "记住了，谢谢。",
        "",
        "？",
    ],
)
def test_a_reply_saying_anything_more_does_not(reply: str) -> None:
    assert not acknowledges(reply)


@pytest.mark.parametrize(
    "text",
    [
        "我开的是什么车来着？",
        "地球到月球大概多远？",
        "我女儿小名叫什么来着",
        "How far is the moon?",
    ],
)
def test_a_question_with_an_interrogative_asks_what(text: str) -> None:
    assert asks_what(text)


@pytest.mark.parametrize(
    "text",
    [
        "你记住了吗？",
        "明天去爬山吗",
        "周末去爬山怎么样？",
        "什么都行，你定吧。",
        "Can you help me?",
        "How about pizza?",
        "",
    ],
)
def test_a_yes_no_question_a_request_or_a_statement_does_not(text: str) -> None:
    assert not asks_what(text)


@pytest.mark.parametrize(
    "text",
    [
        "我开的是什么车来着？",
        "你还记得我女儿叫什么吗？",
        "我忘了我下周去哪出差，你记得吗？",
        "我上次跟你说过我老家是哪的？",
        "我告诉过你我在哪上班，是哪家来着",
        "Do you remember what my cat is called?",
        "Where did I say I was going next week?",
    ],
)
def test_a_member_asking_for_something_of_their_own_recalls_oneself(text: str) -> None:
    assert recalls_oneself(text)


@pytest.mark.parametrize(
    "text",
    [
        "地球到月球大概多远？",  # no one's own
        "我想知道长城有多长？",  # nothing to recall
        "他开的是什么车来着？",  # someone else's
        "记住：我下周三要去杭州出差。",  # a statement
        "你还记得我吗？",  # asks for a yes
        "What is the capital of France?",
        "",
    ],
)
def test_a_question_of_the_world_or_of_someone_else_does_not(text: str) -> None:
    assert not recalls_oneself(text)
