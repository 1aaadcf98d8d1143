"""A model that copies its own earlier replies (issue #36: the real 1.5B model answered
"已记。" to every message once a few were in its window) is asked again with the copied
replies out of sight, and answers the question."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import text
from tests.fakes.small_model import ReplyCopier

GROUP = 3621
QUESTION = "豆腐脑甜的好吃还是咸的好吃？"
ANSWER = "咸的，配上辣油最香。"
WEATHER = "今天天气不错"
SUNNY = "是啊，挺舒服的。"


def say(text: str, user_id: int = 20001):
    return group_message(text, group_id=GROUP, user_id=user_id, to_me=True)


def copier() -> ReplyCopier:
    return ReplyCopier(answer="已记。", answers={QUESTION: ANSWER, WEATHER: SUNNY})


async def test_a_short_reply_copied_to_a_question_is_asked_again_without_it(plugin) -> None:
    # given a model that says "已记。" to anything once it sees it among its replies
    plugin.llm.responder = copier()
    bot = RecordingBot()
    await bot.receive(say(WEATHER))
    await bot.receive(say("记住，我对花生过敏"))
    await bot.receive(say("记住：我在蓝鲸物流上班", user_id=20002))
    # when a question comes
    await bot.receive(say(QUESTION))
    # then two requests got "已记。" (fine), and the question's answer was asked again
    assert bot.sent_texts == [SUNNY, "已记。", "已记。", ANSWER]
    *_, copied, again = plugin.llm.chat_requests
    replies = [m["content"] for m in copied["messages"] if m["role"] == "assistant"]
    assert replies == [SUNNY, "已记。", "已记。"]
    # without the exchanges whose replies it copied: no list of "记住" lines run together
    assert [m["content"] for m in again["messages"] if m["role"] == "assistant"] == [SUNNY]
    shown = " ".join(str(m["content"]) for m in again["messages"])
    assert WEATHER in shown
    assert "我对花生过敏" not in shown
    assert "我在蓝鲸物流上班" not in shown


async def test_the_window_keeps_the_exchanges_the_retry_left_out(plugin) -> None:
    plugin.llm.responder = copier()
    bot = RecordingBot()
    for said in (WEATHER, "记住，我对花生过敏", "记住：我在蓝鲸物流上班", QUESTION):
        await bot.receive(say(said))
    # the next request carries the window as it was said, every reply in its place
    plugin.llm.responder = lambda body: text("在的")
    await bot.receive(say("在吗"))
    assert bot.sent_texts[-1] == "在的"
    last = plugin.llm.chat_requests[-1]["messages"]
    replies = [m["content"] for m in last if m["role"] == "assistant"]
    assert replies == [SUNNY, "已记。", "已记。", ANSWER]


async def test_a_message_said_back_after_a_search_is_asked_again_with_no_call_in_sight(
    plugin,
) -> None:
    from tests.fakes.small_model import EchoesAfterTools

    # given a model that says the member's message back while it sees its search
    model = EchoesAfterTools(answer="纸箱又暖和又能藏身，猫在里面觉得安全。")
    plugin.llm.responder = model
    bot = RecordingBot()
    # when a member asks it something it searches for
    await bot.receive(say("猫为什么喜欢钻纸箱？"))
    # then the member gets an answer, not their words back: asked again as a plain chat
    assert bot.sent_texts == ["纸箱又暖和又能藏身，猫在里面觉得安全。"]
    again = plugin.llm.chat_requests[-1]
    assert "tools" not in again
    assert not any(m.get("tool_calls") for m in again["messages"])
    assert model.seen == ["tools", "tools", "bare"]
