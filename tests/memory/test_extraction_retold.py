"""Facts the real small model retold in the bot's person, several to an answer that is no
JSON as a whole: each is read, and kept as what the member said when it retells one of
their sentences (memory/extractor.py `parse_facts`, memory/grounding.py `as_said`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.events import group_message
from tests.memory.helpers import stored
from tests.memory.test_extraction import ExtractingLLM, folded_with

CAR = "我的小米SU7今天提示胎压低，是不是该去补胎了？"
FENCING = "每周六上午我都去学击剑，教练说我进步挺快，有什么练习建议吗？"
# The real 1.5B model's whole answer to 阿强's request with both lines: two answers joined
# by a full-width comma, each fact retold "对我说", with the question after it.
TWO_ANSWERS = (
    '{"facts":[{"content":"阿强(20002)对我说小米SU7提示胎压低，是不是该去补胎了？",'
    '"tags":["问题","个人情况"],"user_id":"20002"}]，'
    '{"facts":[{"content":"阿强(20002)对我说每周六上午学击剑，教练说我进步挺快，有什么练习'
    '建议吗？","tags":["练习建议","个人情况"],"user_id":"20002"}]}]'
)


def answer_for_aqiang(transcript: str) -> str:
    return TWO_ANSWERS if transcript.startswith("阿强(20002)说的话") else '{"facts": []}'


async def test_two_facts_retold_in_two_joined_answers_are_both_kept_as_said(plugin) -> None:
    # given 阿强 telling the bot two things in passing, then members chatting until a fold
    llm = ExtractingLLM(answer_for_aqiang)
    plugin.llm.responder = llm
    # a budget whose first fold holds both his lines
    await plugin.restart(aimemory_max_context_tokens=3000, aimemory_tokenizer="cl100k")

    def event_of(i: int) -> Any:
        if i < 2:
            said, user_id, card = (CAR, FENCING)[i], 20002, "阿强"
        else:
            said, user_id, card = f"讲个冷笑话吧（{i}）", 20001, "小明"
        return group_message(said, to_me=True, group_id=1220, user_id=user_id, card=card)

    # when the window folds and the extraction answers as the real model did
    await folded_with(plugin, 1220, event_of)

    # then both facts are kept, each as 阿强's own words without his question
    saved = await stored(plugin, "g:1220")
    assert sorted(r.content for r in saved) == sorted(
        [
            "阿强(20002)说：“我的小米SU7今天提示胎压低”",
            "阿强(20002)说：“每周六上午我都去学击剑，教练说我进步挺快”",
        ]
    )
    assert {r.user_id for r in saved} == {"20002"}


LINES = [f"阿强(20002)：{CAR}", f"阿强(20002)：{FENCING}", "Lily(20003)：我在北辰电气上班"]


@pytest.mark.parametrize(
    ("fact", "kept"),
    [
        ("阿强(20002)对我说小米SU7提示胎压低，是不是该去补胎了？", "“我的小米SU7今天提示胎压低”"),
        ("阿强(20002)跟我说：每周六上午学击剑，教练说我进步挺快", "“每周六上午我都去学击剑"),
        ("阿强(20002)告诉我我的小米SU7提示胎压低", "“我的小米SU7今天提示胎压低”"),
    ],
)
def test_a_sentence_retold_in_the_bots_person_is_quoted_as_said(fact: str, kept: str) -> None:
    from nonebot_plugin_aimemory.memory import grounding

    assert kept in (grounding.Grounds.of(LINES).keep(fact) or "")


@pytest.mark.parametrize(
    "fact",
    [
        # a detail nobody said, added to what he said
        "阿强(20002)对我说小米SU7提示胎压低，明天要开去4S店换新轮胎",
        # a part of his sentence only
        "阿强(20002)对我说教练说我进步挺快",
        # another member's sentence, retold under his name
        "阿强(20002)对我说我在北辰电气上班",
        # words of no sentence of his
        "阿强(20002)对我说我下周去杭州出差",
        # what he asked, retold
        "阿强(20002)问我有什么练习建议",
    ],
)
def test_words_that_retell_no_sentence_of_the_subject_are_not_kept(fact: str) -> None:
    from nonebot_plugin_aimemory.memory import grounding

    assert grounding.Grounds.of(LINES).keep(fact) is None
