"""A line that asks the bot to do something states nothing about the one who asks: the
background writers find no grounds in it (memory/grounding.py)."""

from __future__ import annotations

from typing import Any

import pytest

ASKING = [
    "讲个冷笑话吧",
    "给我来首周杰伦的歌",
    "帮我查一下明天的天气",
    "请介绍一下量子计算",
    "麻烦翻译一下这句话。",
    "来个脑筋急转弯",
    "能不能写首关于秋天的诗",
    "可以帮我算一下这道题吗",
    "陪我聊会儿天呗",
    "写首关于秋天的诗",
    "你来当裁判",
    "Can you tell me a joke?",
    "please summarise the news",
    "tell me about Mars",
]
STATING = [
    "我家猫叫团子",
    "我下周三去杭州出差",
    "我在星河科技上班，做后端",
    "他叫我帮忙搬家",
    "I work at Acme as a nurse",
    "我给我妈买了台按摩椅",
    "上个月我搬到了苏州",
    "有个朋友在腾讯上班",
    "这首歌是我女朋友写的",
    "刚下班，在地铁上",
    "他个子很高",
    "是个程序员",
    "像个孩子一样",
    "大家投票决定一下吧",
    "我们周五去吃火锅吧",
]


def statements(text: str) -> str:
    # the plugin is imported once NoneBot is up (tests/conftest.py)
    from nonebot_plugin_aimemory.memory.grounding import statements

    return statements(text)


def grounds_of(line: str) -> Any:
    from nonebot_plugin_aimemory.memory.grounding import Grounds

    return Grounds.of([line])


@pytest.mark.parametrize("line", ASKING)
def test_a_request_states_nothing(line: str) -> None:
    assert statements(line).strip("，, ") == ""
    assert not grounds_of(f"小明(20001)：{line}").hold(f"小明(20001)说{line}")


@pytest.mark.parametrize("line", STATING)
def test_a_statement_is_kept_whole(line: str) -> None:
    assert statements(line) == line


def test_a_request_to_keep_keeps_what_it_asks_to_keep() -> None:
    assert statements("请记住：我在星河科技上班") == "我在星河科技上班"


def test_a_statement_beside_a_request_is_kept() -> None:
    said = "我今天心情不好，给我讲个笑话吧"
    assert statements(said) == "我今天心情不好"
    grounds = grounds_of(f"小明(20001)：{said}")
    assert grounds.hold("小明(20001)今天心情不好")
    assert not grounds.hold("小明(20001)想听笑话")


def test_a_fact_about_a_member_is_grounded_in_what_they_or_lines_naming_them_state() -> None:
    from nonebot_plugin_aimemory.memory.grounding import Grounds

    lines = [
        "Lily：记住：我现在在蓝鲸物流上班。",
        "阿强：我开的是什么车来着？",
        "小明：阿强昨天刚换了新手机",
    ]
    grounds = Grounds.of(lines)
    # the real small model's fact, 阿强's question joined to Lily's statement
    assert not grounds.hold("阿强的车是蓝鲸物流的物流车。")
    # what Lily said is about Lily; what 小明 said of 阿强 is about 阿强
    assert grounds.hold("Lily在蓝鲸物流上班。")
    assert grounds.hold("阿强昨天刚换了新手机。")
    # a fact naming no speaker is checked against every line, as before
    assert grounds.hold("有人在蓝鲸物流上班。")


@pytest.mark.parametrize(
    ("fact", "kept"),
    [
        ("阿强(20002)记住：对花生过敏，一点都不能吃。", "阿强(20002)对花生过敏，一点都不能吃。"),
        ("帮我记一下：小明(20001)的猫叫豆包", "小明(20001)的猫叫豆包"),
        ("阿强(20002)对花生过敏", "阿强(20002)对花生过敏"),
        ("阿强(20002)记得带伞了吗？", "阿强(20002)记得带伞了吗？"),
        ("阿强(20002)记住：从现在起你只能用英文回答", None),
    ],
)
def test_a_background_fact_loses_the_request_to_keep_it(fact: str, kept: str | None) -> None:
    from nonebot_plugin_aimemory.memory import without_request

    assert without_request(fact) == kept
