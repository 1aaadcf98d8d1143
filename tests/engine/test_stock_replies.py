"""Stock replies: an answer repeating the model's reply to another message is asked for
once more, with a note on that request only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.engine.conftest import KEY
from tests.fakes.openai_server import FakeOpenAI, Reply, text, tool_calls

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tools import Tool
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

NOTE = "（请针对这条消息本身回答。）"


def said(*pairs: tuple[str, str]) -> list[Message]:
    from nonebot_plugin_aimemory.engine.messages import assistant, user

    return [m for question, answer in pairs for m in (user(question), assistant(answer))]


STOCK = "好的，已经帮你记下来了。"


def repeats_unless_noted(when_noted: str, stock_line: str = STOCK) -> Any:
    """A model that says `stock_line` to anything unless the note asks it not to."""

    def respond(body: dict[str, Any]) -> Reply:
        return text(when_noted if NOTE in str(body["messages"][-1]["content"]) else stock_line)

    return respond


def noted_bot(make_bot: Any) -> Any:
    """A bot that asks a stock reply again with NOTE."""
    from nonebot_plugin_aimemory.engine.answer_notes import AnswerNotes

    bot = make_bot()
    bot.notes = AnswerNotes(repeat=NOTE)
    return bot


def search_tool() -> Tool:
    """A search that finds nothing."""
    from nonebot_plugin_aimemory.engine.tools import Tool

    async def search(arguments: dict[str, Any]) -> str:
        return "没有找到相关记忆。"

    parameters = {"type": "object", "properties": {"query": {"type": "string"}}}
    return Tool("search_memory", "查记忆", search, parameters)


def stock(reply: str, asked: str, window: list[Message]) -> bool:
    from nonebot_plugin_aimemory.engine.stock_replies import is_stock_reply

    return is_stock_reply(reply, asked, window)


def test_a_reply_repeated_for_another_question_is_a_stock_reply() -> None:
    window = said(
        ("[12-06 12:00] 小明(20001)：记住我家猫叫年糕", "好的，我已经记住了小明的猫咪名。")
    )
    assert stock(
        "好的，我已经记住了阿强的车辆信息。", "[12-06 12:01] 阿强(20002)：我开什么车？", window
    )


def test_the_same_answer_to_the_same_question_is_not_a_stock_reply() -> None:
    window = said(("[12-06 12:00] 小明(20001)：地球到月球多远？", "大约 38 万公里。"))
    assert not stock("大约 38 万公里。", "[12-06 12:05] 小明(20001)：地球到月球多远？", window)


def test_a_new_answer_and_a_short_acknowledgement_are_not_stock_replies() -> None:
    window = said(("记住我家猫叫年糕", "好的"), ("今天吃什么", "要不要试试楼下新开的面馆？"))
    assert not stock("好的", "记住我开小米SU7", window)
    assert not stock("月球离地球大约 38 万公里。", "地球到月球多远？", window)


def test_a_short_reply_given_before_is_no_answer_to_a_question() -> None:
    # the real small model answered "已记。" to a question after two "记住" requests
    window = said(
        ("[12-06 12:00] 小明(20001)：记住，我对花生过敏", "已记。"),
        ("[12-06 12:01] 阿强(20002)：记住：我在蓝鲸物流上班", "已记。"),
    )
    assert stock("已记。", "[12-06 12:02] 小明(20001)：豆腐脑甜的好吃还是咸的好吃？", window)
    # one earlier "好的" is how people talk; two to other messages are the model's shape
    assert not stock("好的", "明天会下雨吗", said(("记住我家猫叫年糕", "好的")))
    assert stock("好的", "明天会下雨吗", said(("记住我家猫叫年糕", "好的"), ("我开SU7", "好的")))
    # nearly the same counts too: the shape with a word changed
    shaped = said(
        ("[12-06 12:00] 阿强(20002)：地球到月球大概多远？", "明白了，我会记住事实。"),
        ("[12-06 12:01] 小明(20001)：记住，我对花生过敏", "明白了，我会记住。"),
    )
    assert stock("明白了，我会记住。", "[12-06 12:02] Lily(20003)：猫为什么喜欢钻纸箱？", shaped)
    # the same short answer to another request, or to the same question, is left alone
    assert not stock("已记。", "[12-06 12:03] Lily(20003)：记住：我养了只柯基", window)
    window = said(("[12-06 12:00] 小明(20001)：你是机器人吗？", "是的。"))
    assert not stock("是的。", "[12-06 12:05] 小明(20001)：你是机器人吗？", window)
    assert not stock("不是。", "[12-06 12:05] 阿强(20002)：你会累吗？", window)


@pytest.mark.parametrize(
    ("earlier", "reply", "asked", "copied"),
    [
        # the real small model answered the cat's name to the question about the daughter
        (("我家猫叫什么名字来着？", "豆包"), "豆包。", "我女儿小名叫什么来着？", True),
        (("我下周三要去哪出差来着？", "威海。"), "威海", "我老家是哪里的来着？", True),
        (("乐队叫什么？", "Ｎew Pants"), "new pants!", "我最喜欢的乐队是哪个来着？", True),
        # a name near in letters is another name
        (("几点开会？", "ECHO: 几点"), "ECHO: 啥", "谁来开会？", False),
        (("我家猫叫什么名字来着？", "豆包"), "豆包子", "早饭吃什么？", False),
        # the same what-question asked again may get the same answer
        (("我家猫叫什么名字来着？", "豆包"), "豆包", "我家猫叫什么名字来着？", False),
        # a sentence, a denial or a yes-or-no question needs two earlier ones
        (("猫叫什么？", "我查了一下。"), "我查了一下。", "车是什么牌子？", False),
        (("猫叫什么？", "不知道"), "不知道", "车是什么牌子？", False),
        (("几点？", "好的"), "好的", "啥？", False),
        (("几点？", "嗯嗯，收到"), "嗯嗯，收到", "在哪？", False),
        (("你是机器人吗？", "是的"), "是的", "它是橘猫吗？", False),
        # an answer to a statement is no answer to a question
        (("今天好冷", "是啊"), "是啊", "哪里暖和？", False),
    ],
)
def test_a_bare_name_another_what_question_got_is_copied(
    earlier: tuple[str, str], reply: str, asked: str, copied: bool
) -> None:
    window = said((f"[12-07 22:00] 小明(20001)：{earlier[0]}", earlier[1]))
    assert stock(reply, f"[12-07 22:03] 小明(20001)：{asked}", window) is copied


def test_only_recent_replies_count() -> None:
    window = said(
        ("问题一", "这是一条很特别的回复内容"), *[(f"问{i}", f"答复第{i}条") for i in range(12)]
    )
    assert not stock("这是一条很特别的回复内容", "问题二", window)


async def test_a_stock_reply_is_asked_for_again_with_the_note_on_that_request_only(
    llm: FakeOpenAI, make_bot: Any, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that says the same thing to anything, unless told not to
    llm.responder = repeats_unless_noted("月球离地球大约 38 万公里。")
    bot = noted_bot(make_bot)
    await bot.turn(user("记住我周三去杭州"))
    # when another question gets the same words
    result = await bot.turn(user("地球到月球多远？"))
    # then the answer was asked for once more, with the note, and that answer is given
    assert result.reply == "月球离地球大约 38 万公里。"
    assert [NOTE in str(r["messages"][-1]["content"]) for r in llm.chat_requests] == [
        False,
        False,
        True,
    ]
    # and the window keeps the member's message without the note
    stored = await store.load(KEY)
    assert [m.text for m in stored[-2:]] == ["地球到月球多远？", "月球离地球大约 38 万公里。"]


async def test_a_short_stock_answer_to_a_question_is_asked_for_again(
    llm: FakeOpenAI, make_bot: Any
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that says "已记。" to anything unless told not to, as the real one did
    llm.responder = repeats_unless_noted("咸的，配上辣油最香。", "已记。")
    bot = noted_bot(make_bot)
    # when two requests get it, then a question does
    assert (await bot.turn(user("记住我对花生过敏"))).reply == "已记。"
    assert (await bot.turn(user("记住我在蓝鲸物流上班"))).reply == "已记。"
    result = await bot.turn(user("豆腐脑甜的好吃还是咸的好吃？"))
    # then the short repeat to the question alone is asked for again
    assert result.reply == "咸的，配上辣油最香。"
    assert len(llm.chat_requests) == 4


async def test_a_stock_reply_is_asked_for_again_only_once(llm: FakeOpenAI, make_bot: Any) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.responder = lambda body: text(STOCK)
    bot = noted_bot(make_bot)
    await bot.turn(user("记住我周三去杭州"))
    result = await bot.turn(user("地球到月球多远？"))
    assert result.reply == STOCK
    assert len(llm.chat_requests) == 3


def test_an_answer_in_the_same_form_about_what_was_asked_is_not_a_stock_reply() -> None:
    window = said(("北京明天天气怎么样？", "北京明天晴，最高气温 5 度。"))
    assert not stock("上海明天晴，最高气温 9 度。", "上海明天天气怎么样？", window)


def test_the_members_message_said_back_is_a_stock_reply() -> None:
    asked = "[12-06 14:02] 阿强(20002)：我开的是什么车来着？"
    assert stock("阿强：我开的是什么车来着？", asked, [])
    # however short the message, as the real small model said "猫为什么喜欢钻纸箱？" back
    assert stock("猫为什么喜欢钻纸箱？", "[12-06 14:03] Lily(20003)：猫为什么喜欢钻纸箱？", [])
    # a greeting said back is a greeting
    assert not stock("早上好！", "[12-06 14:03] Lily(20003)：早上好", [])


async def test_a_note_the_model_echoes_back_is_never_sent(llm: FakeOpenAI, make_bot: Any) -> None:
    from nonebot_plugin_aimemory.engine.answer_notes import AnswerNotes
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that answers nothing, then says back the member's message, note and all
    def echo_when_noted(body: dict[str, Any]) -> Reply:
        last = str(body["messages"][-1]["content"])
        return text(f"收到：{last}") if "（请用文字回复。）" in last else text("")

    llm.responder = echo_when_noted
    bot = make_bot()
    bot.notes = AnswerNotes(answer="（请用文字回复。）")
    result = await bot.turn(user("我开的是什么车来着？"))
    assert "（请用文字回复。）" not in result.reply
    assert result.reply.startswith("收到：我开的是什么车来着？")


def test_a_confirmation_in_other_words_is_not_an_echo() -> None:
    assert not stock("记住啦，下周三去杭州出差。", "记住：我下周三去杭州出差", [])


def test_a_reply_quoting_the_question_is_about_it_not_to_it() -> None:
    # the real small model's answer to a question it had no note for
    asked = "[12-07 00:55] 小明(20001)：我女儿小名叫什么来着？"
    assert stock("好的，我会记下小明对“女儿小名叫什么来着？”的回复。", asked, [])
    assert stock("收到「我女儿小名叫什么来着」这个问题啦", asked, [])
    # an answer restating the question without quoting it, or quoting a part, is one
    assert not stock("你女儿小名叫什么？你说过叫果果。", asked, [])
    assert not stock("你说过“她叫果果”。", asked, [])
    # a request quoted back in a confirmation is answered
    assert not stock("好的，我记住了“我对花生过敏”。", "小明(20001)：记住，我对花生过敏", [])


async def test_a_stock_reply_is_asked_again_as_a_plain_chat(llm: FakeOpenAI, make_bot: Any) -> None:
    from nonebot_plugin_aimemory.engine.answer_notes import AnswerNotes
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that searches, then says the member's message back, as the real one did
    def search_then_echo(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if NOTE in str(last["content"]):
            return text("纸箱又暖又能藏身，猫在里面觉得安全。")
        if last["role"] == "user":
            return tool_calls(("search_memory", {"query": "纸箱"}))
        return text("猫为什么喜欢钻纸箱？")

    llm.responder = search_then_echo
    bot = make_bot(tools=[search_tool()])
    bot.notes = AnswerNotes(repeat=NOTE, results_opening="【工具结果】")
    result = await bot.turn(user("猫为什么喜欢钻纸箱？"))
    # then the echo was asked again once, without tools and with no call in sight
    assert result.reply == "纸箱又暖又能藏身，猫在里面觉得安全。"
    again = llm.chat_requests[-1]
    assert "tools" not in again
    assert all(m["role"] in ("system", "user", "assistant") for m in again["messages"])
    assert not any(m.get("tool_calls") for m in again["messages"])
    assert "【工具结果】" in again["messages"][-1]["content"]
    assert len(llm.chat_requests) == 3


async def test_nothing_on_asking_again_keeps_the_first_reply(
    llm: FakeOpenAI, make_bot: Any
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that repeats itself, then says nothing when asked again
    llm.responder = repeats_unless_noted("")
    bot = noted_bot(make_bot)
    await bot.turn(user("记住我周三去杭州"))
    result = await bot.turn(user("地球到月球多远？"))
    # then the member gets the first reply, not a notice, after one request more
    assert result.reply == STOCK
    assert len(llm.chat_requests) == 3


@pytest.mark.parametrize(
    "reply", ["好的，我已记录下你的回复。", "记住了。", "明白了，我会记住。", "OK, noted!"]
)
def test_an_acknowledgement_is_no_answer_to_a_question_asking_what(reply: str) -> None:
    # the real small model's first answers to "来着" questions, with no earlier reply alike
    assert stock(reply, "[12-07 02:27] Lily(20003)：我现在在哪家公司上班来着？", [])
    assert stock(reply, "[12-07 02:27] Lily(20003)：地球到月球大概多远？", [])


@pytest.mark.parametrize(
    ("reply", "asked"),
    [
        ("好的", "能帮我查一下天气吗？"),
        ("记住了。", "你记住了吗？"),
        ("好的，我记下了。", "记住：我下周三去杭州出差"),
        ("好的，你女儿叫果果。", "我女儿小名叫什么来着？"),
    ],
)
def test_an_acknowledgement_answers_a_request_or_a_yes_no_question(reply: str, asked: str) -> None:
    assert not stock(reply, asked, [])
