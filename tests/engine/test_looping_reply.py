"""A reply that says one short thing over and over is seen as a loop, whatever its words,
and no ordinary answer is (issue #36: Qwen2.5-Coder-1.5B wrote four lines to its cap)."""

from __future__ import annotations

import pytest

ITINERARY = "\n".join(
    f"{day}. 第{day}天：上午去{place}，中午吃当地的{food}，晚上回酒店休息。"
    for day, (place, food) in enumerate(
        [
            ("故宫", "炸酱面"),
            ("长城", "烤鸭"),
            ("颐和园", "豆汁"),
            ("天坛", "卤煮"),
            ("南锣鼓巷", "糖葫芦"),
            ("798艺术区", "涮羊肉"),
            ("北海公园", "驴打滚"),
            ("什刹海", "爆肚"),
            ("圆明园", "炒肝"),
            ("国家博物馆", "豌豆黄"),
            ("景山公园", "艾窝窝"),
            ("香山", "焦圈"),
            ("奥林匹克公园", "麻酱烧饼"),
            ("雍和宫", "褡裢火烧"),
            ("恭王府", "芥末墩"),
        ],
        start=1,
    )
)
CODE = "\n".join(f"def handler_{n}(event):\n    return reply(event, {n})\n" for n in range(30))
ESSAY = (
    "长城始建于春秋战国时期，秦始皇统一六国后把各国的城墙连了起来。明朝为了防御北方，"
    "又大规模修筑，今天看到的八达岭、慕田峪大多是明长城。它不是一道连续的墙，而是由城墙、"
    "敌楼、关隘和烽火台组成的防御体系，总长两万多公里。"
) * 1

CHORUS = "我们一起看星星\n一起唱着那首歌\n把明天写进风里"
LYRICS = "\n".join(
    [
        "清晨的站台有人在等车，手里攥着一张旧车票",
        "窗外的稻田一片一片往后退，像小时候翻过的画册",
        CHORUS,
        "你说城市太大装不下一个人的心事，我说那就慢慢走",
        "路灯一盏一盏亮起来，照着回家的那条小巷",
        CHORUS,
        "后来我们各自去了远方，信越写越短电话越打越少",
        "可每次听见这段旋律，还是会想起那年夏天的晚风",
        CHORUS,
    ]
)


@pytest.mark.parametrize(
    "text",
    [
        ITINERARY,
        CODE,
        ESSAY,
        "哈" * 100,
        "好的，记下了。",
        "\n".join(f"{n}. 第{n}条" for n in range(1, 40)),
        LYRICS,
    ],
)
def test_ordinary_answers_do_not_loop(text: str) -> None:
    from nonebot_plugin_aimemory.engine.looping_reply import loops

    assert not loops(text)


@pytest.mark.parametrize(
    "text",
    [
        "结果：\n- search_current_chat：\n keyword=每周六上午\n\n" * 60,
        "你每周六上午去学击剑。\n" * 80,
        "哈" * 600,
        ESSAY * 6,
        "我不知道。我不知道。" * 60,
    ],
)
def test_one_thing_said_over_and_over_loops(text: str) -> None:
    from nonebot_plugin_aimemory.engine.looping_reply import loops

    assert loops(text)


def test_a_loop_of_lines_is_said_once() -> None:
    from nonebot_plugin_aimemory.engine.looping_reply import without_repeated_lines

    looped = "你每周六上午去学击剑。\n\n对，是击剑。\n" + "你每周六上午去学击剑。\n\n" * 50
    assert without_repeated_lines(looped) == "你每周六上午去学击剑。\n\n对，是击剑。"
