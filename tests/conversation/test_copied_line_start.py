"""A small real model starts its answer with the line start it sees on every message of the
window (`[2026-12-06 15:02] 小明(20003)：…`, issue #36): the member gets the answer without
it, and the window keeps it without, so the next request does not teach the shape again."""

from __future__ import annotations

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.small_model import LineCopier

GROUP = 3702
ANSWER = "你家猫叫团子。"


def assert_window_keeps_only_the_answer(plugin, sent: str) -> None:
    """The next request carries the answer as it was sent."""
    assistant = [m for m in plugin.llm.chat_requests[-1]["messages"] if m["role"] == "assistant"]
    assert assistant[-1]["content"] == sent


@pytest.mark.parametrize("name", ["", "小明"])
async def test_a_copied_line_start_is_not_sent_in_a_group(plugin, name: str) -> None:
    plugin.llm.responder = LineCopier(answer=ANSWER, name=name)
    bot = RecordingBot()
    await bot.receive(
        group_message("我家猫叫什么？", group_id=GROUP, user_id=3701, card="小红", to_me=True)
    )
    assert bot.sent_texts[-1].endswith(ANSWER)
    assert "[20" not in bot.sent_texts[-1]
    assert "：" not in bot.sent_texts[-1]
    await bot.receive(
        group_message("再说一遍", group_id=GROUP, user_id=3701, card="小红", to_me=True)
    )
    assert_window_keeps_only_the_answer(plugin, ANSWER)


async def test_a_copied_time_is_not_sent_in_a_private_chat(plugin) -> None:
    plugin.llm.responder = LineCopier(answer=ANSWER)
    bot = RecordingBot()
    await bot.receive(private_message("我家猫叫什么？", user_id=3703, nickname="小红"))
    assert bot.sent_texts == [ANSWER]


def test_only_a_line_start_is_taken_off() -> None:
    from nonebot_plugin_aimemory.conversation.incoming import COPIED_LINE_START
    from nonebot_plugin_aimemory.engine.answer_notes import AnswerNotes

    notes = AnswerNotes(copied_line_start=COPIED_LINE_START)
    cases = {
        "[2026-12-06 15:02] 小明(20003)：我开的是比亚迪海豹": "我开的是比亚迪海豹",
        "[2026-12-06 15:02] 好的": "好的",
        "小明(20001)：你好": "你好",
        "大力鬼王(匿名123)：嗨": "嗨",
        # Ordinary answers that merely look a little like it stay whole.
        "好的(我想想)：嗯": "好的(我想想)：嗯",
        "[注意] 明天下雨": "[注意] 明天下雨",
        "时间是 [2026-12-06 15:02]": "时间是 [2026-12-06 15:02]",
        "第二行才有\n[2026-12-06 15:02] 小明(20003)：": "第二行才有\n[2026-12-06 15:02] 小明(20003)：",
    }
    for reply, expected in cases.items():
        assert notes.cleaned(reply) == expected, reply
