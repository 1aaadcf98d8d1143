"""A small model that copies the shape of what it reads instead of answering (issue #36,
Qwen2.5-Coder-1.5B): it writes out the request before its answer, writes calls the way
the plugin tells results, or loops to its token cap. The member gets the answer alone, or
the answer of a plainer request, once; the window keeps nothing of the copied shape, so
the next turn has nothing to copy."""

from __future__ import annotations

import json
from typing import Any

from tests.conversation.test_turn_always_answers import ask, tool_choices
from tests.fakes.bots import RecordingBot
from tests.fakes.echoing_model import (
    LABEL,
    RECORD,
    Looper,
    RecordWriter,
    RequestEchoer,
    ToldFormWriter,
)
from tests.fakes.openai_server import text
from tests.fakes.small_model import ANSWER

QUESTION = "我对什么食物过敏来着？"
SAID = "你对菠萝过敏。"


def assistant_texts(body: dict[str, Any]) -> list[str]:
    """What the request shows the model it said before."""
    return [str(m.get("content")) for m in body["messages"] if m["role"] == "assistant"]


async def next_request_after(plugin, bot: RecordingBot) -> dict[str, Any]:
    """The request of a later turn in which the model answers at once."""
    plugin.llm.responder = lambda body: text("好的")
    await bot.receive(ask("谢谢"))
    return plugin.llm.chat_requests[-1]


async def test_an_answer_after_a_copy_of_the_request_is_sent_alone(plugin) -> None:
    # given a model that searches until told to answer, then writes that request out first
    await plugin.restart(aimemory_max_tool_rounds=2)
    plugin.llm.responder = RequestEchoer(answer=SAID)
    bot = RecordingBot()
    # when a member asks
    await bot.receive(ask(QUESTION))
    # then the last request told the results, and the member gets the answer alone
    last = plugin.llm.chat_requests[-1]
    assert "tools" not in last
    assert bot.sent_texts == [SAID]
    # and the next turn's request shows the model that answer, and no copy of a request
    later = await next_request_after(plugin, bot)
    assert SAID in assistant_texts(later)
    assert not any(LABEL in said or "memory_search：" in said for said in assistant_texts(later))


async def test_calls_written_as_told_results_leave_the_answer_after_them(plugin) -> None:
    # given a model that writes calls as results are told, and its answer behind a label
    plugin.llm.responder = ToldFormWriter(said=SAID)
    bot = RecordingBot()
    # when a member asks
    await bot.receive(ask(QUESTION))
    # then the member gets that answer at once, the window keeps it and nothing ran
    assert tool_choices(plugin) == [None]
    assert bot.sent_texts == [SAID]
    later = await next_request_after(plugin, bot)
    assert SAID in assistant_texts(later)
    assert not any(m["role"] == "tool" for m in later["messages"])


async def test_calls_written_as_told_results_alone_are_asked_again(plugin) -> None:
    # given a model that writes nothing but calls as results are told
    plugin.llm.responder = ToldFormWriter()
    bot = RecordingBot()
    await bot.receive(ask(QUESTION))
    # then that is no answer: the plainer request's answer is what the member gets
    assert tool_choices(plugin) == [None, "none"]
    assert bot.sent_texts == [ANSWER]


async def test_an_answer_that_loops_is_asked_again_and_sent_once(plugin) -> None:
    # given a model that says one thing to its token cap while tools are offered
    plugin.llm.responder = Looper()
    bot = RecordingBot()
    await bot.receive(ask(QUESTION))
    # then the member gets the plainer request's answer, one message, not pages of it
    assert tool_choices(plugin) == [None, "none"]
    assert bot.sent_texts == [ANSWER]


async def test_a_loop_of_whole_lines_is_said_once(plugin) -> None:
    # given a model that says the same answer line over and over
    plugin.llm.responder = Looper(unit=f"{SAID}\n", times=120)
    bot = RecordingBot()
    await bot.receive(ask(QUESTION))
    # then it is said once, at once: the loop had one thing to say
    assert tool_choices(plugin) == [None]
    assert bot.sent_texts == [SAID]


async def test_a_long_answer_of_many_different_lines_is_sent_as_it_is(plugin) -> None:
    # given a model that answers with a long list, each line its own
    listed = "\n".join(f"{n}. 第{n}天去第{n}个景点，晚上住在第{n}家酒店" for n in range(1, 31))
    plugin.llm.responder = lambda body: text(listed)
    bot = RecordingBot()
    await bot.receive(ask("帮我排个一个月的旅行计划"))
    # then nothing was asked again and every line arrives
    assert tool_choices(plugin) == [None]
    assert "\n".join(bot.sent_texts).count("景点") == 30


async def test_tools_described_to_a_member_are_an_answer(plugin) -> None:
    # given a model that tells a member what its tools do, one a line
    described = "我能用这些工具：\n- memory_save：保存一条记忆\n- memory_search：搜索以前记下的事"
    plugin.llm.responder = lambda body: text(described)
    bot = RecordingBot()
    await bot.receive(ask("你有哪些工具？"))
    # then that is its answer, sent at once
    assert tool_choices(plugin) == [None]
    assert bot.sent_texts == [described]


async def test_a_record_written_as_json_is_no_answer(plugin) -> None:
    # given a model that answers with a memory record as JSON while tools are offered
    plugin.llm.responder = RecordWriter()
    bot = RecordingBot()
    await bot.receive(ask("帮我记一下：我家猫叫豆包。"))
    # then the member gets the plainer request's words, and the window never holds the JSON
    assert tool_choices(plugin) == [None, "none"]
    assert bot.sent_texts == [ANSWER]
    later = await next_request_after(plugin, bot)
    assert not any(RECORD["content"] in said for said in assistant_texts(later))


async def test_json_a_member_asks_for_is_their_answer(plugin) -> None:
    plugin.llm.responder = RecordWriter()
    bot = RecordingBot()
    await bot.receive(ask("把这条记录写成 JSON：我家猫叫豆包"))
    assert tool_choices(plugin) == [None]
    assert [json.loads(sent) for sent in bot.sent_texts] == [RECORD]


async def test_a_model_that_only_writes_json_gets_a_notice_not_json(plugin) -> None:
    plugin.llm.responder = RecordWriter(always=True)
    bot = RecordingBot()
    await bot.receive(ask("我家猫叫什么来着？"))
    (sent,) = bot.sent_texts
    assert "{" not in sent
    assert RECORD["content"] not in sent
