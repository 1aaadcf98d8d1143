"""The turn's last request, without tools, shows no tool call (issue #36): the real small
model, its tool rounds in the history and no tools offered, wrote one more call as JSON
text and the member got the empty notice. The turn's results are told as text before the
member's message instead, earlier turns' calls are left out, and the window keeps the
tool rounds as they were."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.bots import RecordingBot
from tests.fakes.events import private_message
from tests.fakes.openai_server import text
from tests.fakes.small_model import ToolLooper

USER = 3611
ANSWER = "没找到你的出差安排。"
LATER = "下下周也没有记下的安排。"


def ask(question: str) -> Any:
    return private_message(question, user_id=USER, nickname="小红")


def shows_calls(body: dict[str, Any]) -> bool:
    """Whether a request shows the model any tool call or result."""
    return any(m["role"] == "tool" or m.get("tool_calls") for m in body["messages"])


async def test_a_model_that_copies_the_calls_it_sees_answers_the_plain_last_request(
    plugin,
) -> None:
    from nonebot_plugin_aimemory import prompts

    # given a model that loops on searches and, forced, writes the last call again as JSON
    await plugin.restart(aimemory_max_tool_rounds=2)
    plugin.llm.responder = ToolLooper(answer=ANSWER, copies_calls_it_sees=True)
    bot = RecordingBot()
    # when a member asks
    await bot.receive(ask("我下周三去哪出差来着？"))
    # then the forced request still showed the calls; the last one shows none
    *_, forced, last = plugin.llm.chat_requests
    assert forced.get("tool_choice") == "none"
    assert shows_calls(forced)
    assert "tools" not in last
    assert not shows_calls(last)
    # and tells the two searches' results before the member's message, which comes last
    # (told after it, the real model said them back), then asks for words
    asked = last["messages"][-1]
    assert asked["role"] == "user"
    content = asked["content"]
    assert content.startswith(prompts.TOOL_RESULTS_TOLD)
    told, question = content.split(prompts.MEMORY_INJECTION_FOOTER)
    results = [m["content"] for m in forced["messages"] if m["role"] == "tool"]
    assert len(results) == 2
    assert told.count("- memory_search：") == 2
    assert prompts.ANSWER_NOW_NOTE not in told
    assert question.endswith(f"我下周三去哪出差来着？\n{prompts.ANSWER_NOW_NOTE}")
    # and the member gets the words, no JSON
    assert bot.sent_texts == [ANSWER]


async def test_earlier_turns_calls_are_left_out_and_the_window_keeps_them(plugin) -> None:
    # given a turn that ended in the plain last request
    await plugin.restart(aimemory_max_tool_rounds=2)
    plugin.llm.responder = ToolLooper(answer=ANSWER, copies_calls_it_sees=True)
    bot = RecordingBot()
    await bot.receive(ask("我下周三去哪出差来着？"))
    # when the member asks again and the model loops again
    plugin.llm.responder = ToolLooper(answer=LATER, copies_calls_it_sees=True)
    await bot.receive(ask("那下下周呢？"))
    # then the next turns' requests with tools carry the first turn's rounds as stored
    second_turn = plugin.llm.chat_requests[4:]
    first_rounds = [m for m in second_turn[0]["messages"] if m["role"] == "tool"]
    assert len(first_rounds) == 2
    # and its last request shows no call at all, the first answer kept as said
    last = second_turn[-1]
    assert not shows_calls(last)
    said = [m["content"] for m in last["messages"] if m["role"] == "assistant"]
    assert said == [ANSWER]
    assert bot.sent_texts == [ANSWER, LATER]
    # and a plain answer after it is accepted with the stored window
    plugin.llm.responder = lambda body: text("在的")
    await bot.receive(ask("在吗"))
    assert bot.sent_texts[-1] == "在的"
    kept = json.dumps(plugin.llm.chat_requests[-1]["messages"], ensure_ascii=False)
    assert kept.count('"role": "tool"') == 4
    assert LATER in kept
