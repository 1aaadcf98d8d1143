"""A turn always ends in an answer (issue #36), through the plugin: a model that answers
with nothing, repeats a call, invents tools, loops on tools, writes its calls as text or
writes a `<tool_response>` of its own still gives the member a text — never JSON, never
a tool block, no talk of the tools by name — each tool's side effect happens once, and the window stays a history the
next request is accepted with."""

from __future__ import annotations

import json
from typing import Any

import pytest
from nonebot.adapters.onebot.v11 import MessageEvent, PrivateMessageEvent

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import drop, error, raw, text, tool_calls
from tests.fakes.small_model import (
    INVENTED_TOOL,
    CallsAsText,
    EmptyAfterTools,
    EmptyAnswerer,
    FakeToolResponse,
    RepeatingCaller,
    TextCallStyle,
    ToolInventor,
    ToolLooper,
    ToolTalker,
    tool_names,
)

USER = 3601
CHAT = f"f:{USER}"
GROUP = 3602
TRIP = "小红下周三去杭州出差"
SAVE_TRIP = {"content": TRIP}
ANSWER = "记住啦，下周三去杭州出差。"
UNKNOWN_TOOL = "错误：没有名为 {name} 的工具。可用工具："


def ask(question: str = "记住：我下周三去杭州出差") -> PrivateMessageEvent:
    return private_message(question, user_id=USER, nickname="小红")


def tool_choices(plugin) -> list[str | None]:
    """The `tool_choice` of every chat request, None where the field is absent."""
    return [body.get("tool_choice") for body in plugin.llm.chat_requests]


def offered_tools(plugin) -> list[bool]:
    """Whether each chat request listed `tools`."""
    return ["tools" in body for body in plugin.llm.chat_requests]


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def asked_for_an_answer(forced: dict[str, Any], before: dict[str, Any]) -> bool:
    """Whether `forced` carries `before`'s messages, the last one (the member's, or the
    last tool result) with the note asking for an answer in words."""
    from nonebot_plugin_aimemory import prompts

    note = f"\n{prompts.ANSWER_NOW_NOTE}"
    *head, last = forced["messages"]
    unnoted = [*head, {**last, "content": last["content"].removesuffix(note)}]
    return unnoted == before["messages"] and last["content"].endswith(note)


def call_round(messages: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The one assistant message with tool calls in `messages` and the tool results after it."""
    (index,) = [i for i, m in enumerate(messages) if m.get("tool_calls")]
    return messages[index], [m for m in messages[index + 1 :] if m["role"] == "tool"]


async def saved(plugin, scope: str = CHAT) -> list[str]:
    """Contents of the live memories of `scope`."""
    records = await plugin.runtime.memory.service.store.load_scope(scope)
    return [r.content for r in records if not r.deleted]


def assert_no_tool_text(sent: list[str]) -> None:
    """Nothing sent shows a call or a tool block the model wrote."""
    for reply in sent:
        for mark in ("{", "}", "memory_save", "<tool_call>", "<tool_response>", "```"):
            assert mark not in reply, reply


async def assert_next_turn_is_accepted(plugin, bot: RecordingBot, event: MessageEvent) -> None:
    """The member speaks again and is answered: the request carrying the window passed the
    fake server's validation (an invalid one would be answered 400, with a notice)."""
    plugin.llm.responder = lambda body: text("在的")
    accepted = len(plugin.llm.chat_requests)
    await bot.receive(event)
    assert bot.sent_texts[-1] == "在的"
    assert len(plugin.llm.chat_requests) == accepted + 1


# --------------------------------------------------------------------------- C1 empty answers


async def test_an_empty_answer_after_a_tool_round_is_asked_for_again_with_tool_choice_none(
    plugin,
) -> None:
    # given a model that saves a memory, then answers with an empty message
    plugin.llm.responder = EmptyAfterTools(name="memory_save", arguments=SAVE_TRIP, answer=ANSWER)
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the request after the empty answer forces an answer over the same messages,
    # the member's asking for an answer in words
    _, after_round, forced = plugin.llm.chat_requests
    assert tool_choices(plugin) == [None, None, "none"]
    assert "tools" in forced
    assert asked_for_an_answer(forced, after_round)
    # and the member gets that answer; the memory was saved once
    assert bot.sent_texts == [ANSWER]
    assert await saved(plugin) == [TRIP]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


async def test_the_note_asking_for_an_answer_is_never_kept(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    # given a model that saves a memory, then answers with nothing until asked in words
    plugin.llm.responder = EmptyAfterTools(name="memory_save", arguments=SAVE_TRIP, answer=ANSWER)
    bot = RecordingBot()
    await bot.receive(ask())
    # then the next turn's request carries the tool round and the member's message as they
    # were, without the note
    first_turn_requests = len(plugin.llm.chat_requests)
    await bot.receive(ask("在吗"))
    next_turn = plugin.llm.chat_requests[first_turn_requests]
    kept = json.dumps(next_turn["messages"][:-1], ensure_ascii=False)
    assert prompts.ANSWER_NOW_NOTE not in kept
    assert TRIP in kept


@pytest.mark.parametrize("content", ["", None], ids=["empty-string", "null"])
async def test_an_empty_first_answer_is_asked_for_again_with_tool_choice_none(
    plugin, content: str | None
) -> None:
    # given a model whose first reply has no text and no tool calls
    plugin.llm.responder = EmptyAnswerer(answer="今天确实不错！", empty_content=content)
    bot = RecordingBot()
    # when a member chats
    await bot.receive(ask("今天天气不错"))
    # then the plugin asks once more, forcing an answer, and sends it
    assert tool_choices(plugin) == [None, "none"]
    assert offered_tools(plugin) == [True, True]
    first, forced = plugin.llm.chat_requests
    assert asked_for_an_answer(forced, first)
    assert bot.sent_texts == ["今天确实不错！"]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


# --------------------------------------------------------------------------- C2 repeated calls


async def test_a_repeated_call_is_not_run_again_and_an_answer_is_forced(plugin) -> None:
    # given a model that makes the same save again (keys in another order) after its result
    plugin.llm.responder = RepeatingCaller(
        arguments={"content": TRIP, "about": "chat"}, answer=ANSWER
    )
    bot = RecordingBot()
    # when a member in a group asks it to remember
    await bot.receive(group_message("记住：我下周三去杭州出差", group_id=GROUP, to_me=True))
    # then the repetition is neither run nor kept: the next request forces an answer over
    # the messages the repetition was made on
    _, repeated, forced = plugin.llm.chat_requests
    assert tool_choices(plugin) == [None, None, "none"]
    assert asked_for_an_answer(forced, repeated)
    # and the member gets the answer; the memory was saved once
    assert bot.sent_texts == [ANSWER]
    assert await saved(plugin, f"g:{GROUP}") == [TRIP]
    await assert_next_turn_is_accepted(
        plugin, bot, group_message("在吗", group_id=GROUP, to_me=True)
    )


# --------------------------------------------------------------------------- C3 invented tools


async def test_an_invented_tool_is_answered_with_the_names_of_the_real_tools(plugin) -> None:
    # given a model that calls a tool that does not exist
    plugin.llm.responder = ToolInventor(answer="17 + 25 = 42")
    bot = RecordingBot()
    # when a member asks a sum
    await bot.receive(ask("17 + 25 等于几"))
    # then the call's result names the tools there are
    first, second = plugin.llm.chat_requests[:2]
    (result,) = tool_results(second)
    listed = UNKNOWN_TOOL.format(name=INVENTED_TOOL) + "、".join(tool_names(first))
    assert result.startswith(listed)


async def test_a_second_invented_tool_is_not_run_and_an_answer_is_forced(plugin) -> None:
    # given a model that keeps calling tools that do not exist
    plugin.llm.responder = ToolInventor(answer="17 + 25 = 42")
    bot = RecordingBot()
    # when a member asks a sum
    await bot.receive(ask("17 + 25 等于几"))
    # then after the second invented call the plugin forces an answer, and sends it
    assert tool_choices(plugin) == [None, None, "none"]
    unknown = UNKNOWN_TOOL.format(name=INVENTED_TOOL)
    forced = plugin.llm.chat_requests[-1]
    assert sum(result.startswith(unknown) for result in tool_results(forced)) == 1
    assert bot.sent_texts == ["17 + 25 = 42"]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


# --------------------------------------------------------------------------- C4 tool loops


async def test_a_tool_loop_is_forced_to_answer_after_the_configured_rounds(plugin) -> None:
    # given a model that searches again after every result, and the default 8 rounds
    plugin.llm.responder = ToolLooper(answer="没找到你的出差安排。")
    bot = RecordingBot()
    # when a member asks
    await bot.receive(ask("我下周三去哪出差来着？"))
    # then 8 rounds ran, the ninth request forces an answer, and the member gets it
    assert plugin.runtime.config.aimemory_max_tool_rounds == 8
    assert tool_choices(plugin) == [None] * 8 + ["none"]
    assert len(tool_results(plugin.llm.chat_requests[-1])) == 8
    assert bot.sent_texts == ["没找到你的出差安排。"]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


# --------------------------------------------------------------------------- C5 no text at all


async def test_a_forced_request_answered_empty_gets_a_last_request_without_tools(plugin) -> None:
    # given a model that answers with nothing after a tool round, forced or not
    plugin.llm.responder = EmptyAfterTools(answer="你下周三去杭州。", empty_when_forced=True)
    bot = RecordingBot()
    # when a member asks
    await bot.receive(ask("我下周三去哪出差来着？"))
    # then one last request lists no tools and no tool_choice, and its text is sent
    assert tool_choices(plugin) == [None, None, "none", None]
    assert offered_tools(plugin) == [True, True, True, False]
    assert "tool_choice" not in plugin.llm.chat_requests[-1]
    assert bot.sent_texts == ["你下周三去杭州。"]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


async def test_tool_calls_to_a_forced_request_get_a_last_request_without_tools(plugin) -> None:
    # given a server that ignores tool_choice: the model keeps calling when forced
    await plugin.restart(aimemory_max_tool_rounds=2)
    plugin.llm.responder = ToolLooper(answer="没找到。", obeys_tool_choice=False)
    bot = RecordingBot()
    # when a member asks
    await bot.receive(ask("我下周三去哪出差来着？"))
    # then the calls made when forced are not run; a last request without tools, the two
    # results told in it as text (tests/conversation/test_plain_last_request.py), answers
    assert tool_choices(plugin) == [None, None, "none", None]
    assert offered_tools(plugin) == [True, True, True, False]
    assert len(tool_results(plugin.llm.chat_requests[-2])) == 2
    assert tool_results(plugin.llm.chat_requests[-1]) == []
    assert bot.sent_texts == ["没找到。"]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


async def test_no_text_even_without_tools_gets_the_empty_notice_and_a_valid_window(
    plugin,
) -> None:
    from nonebot_plugin_aimemory.texts import notices

    # given a model that saves, then answers with nothing whatever it is asked
    plugin.llm.responder = EmptyAfterTools(
        name="memory_save",
        arguments=SAVE_TRIP,
        empty_when_forced=True,
        empty_without_tools=True,
    )
    bot = RecordingBot()
    # when a member asks it to remember
    await bot.receive(ask())
    # then after the last request without tools the member gets the notice
    assert offered_tools(plugin) == [True, True, True, False]
    assert bot.sent_texts == [notices.LLM_EMPTY]
    # and the memory was saved once, and the next turn's request is accepted
    assert await saved(plugin) == [TRIP]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))
    assert await saved(plugin) == [TRIP]


# --------------------------------------------------------------------------- C6 calls as text


@pytest.mark.parametrize(
    "style", ["object", "parameters", "string_arguments", "tagged", "fenced", "code", "keywords"]
)
async def test_a_call_written_as_text_is_run_as_a_tool_call(plugin, style: TextCallStyle) -> None:
    # given a model that writes its memory_save call in its content
    model = CallsAsText(style=style, calls=(("memory_save", SAVE_TRIP),), answer=ANSWER)
    plugin.llm.responder = model
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the call ran: the memory is saved once and the member gets the answer, no JSON
    assert await saved(plugin) == [TRIP]
    assert bot.sent_texts == [ANSWER]
    assert_no_tool_text(bot.sent_texts)
    # and the history holds it as a proper call with its result
    assistant, results = call_round(plugin.llm.chat_requests[-1]["messages"])
    assert [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in assistant["tool_calls"]
    ] == [("memory_save", SAVE_TRIP)]
    assert [c["id"] for c in assistant["tool_calls"]] == [r["tool_call_id"] for r in results]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


async def test_calls_written_one_per_line_all_run(plugin) -> None:
    # given a model that writes two calls as two lines of JSON
    strawberries = {"content": "小红喜欢吃草莓"}
    calls = (("memory_save", SAVE_TRIP), ("memory_save", strawberries))
    plugin.llm.responder = CallsAsText(calls=calls, answer=ANSWER)
    bot = RecordingBot()
    # when the member asks it to remember both
    await bot.receive(ask("记住：我下周三去杭州出差，还有我喜欢吃草莓"))
    # then both ran once, as two calls of the history, and the member sees no JSON
    assert sorted(await saved(plugin)) == sorted([TRIP, strawberries["content"]])
    assistant, results = call_round(plugin.llm.chat_requests[-1]["messages"])
    assert len(assistant["tool_calls"]) == len(results) == 2
    assert bot.sent_texts == [ANSWER]
    assert_no_tool_text(bot.sent_texts)
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


async def test_a_reply_that_is_only_a_tool_response_block_counts_as_empty(plugin) -> None:
    # given a model that answers with a <tool_response> block of its own making
    plugin.llm.responder = FakeToolResponse(answer=ANSWER)
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the plugin forces an answer and sends that, never the block
    assert tool_choices(plugin) == [None, "none"]
    assert bot.sent_texts == [ANSWER]
    assert_no_tool_text(bot.sent_texts)
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


async def test_a_tool_response_block_inside_a_reply_is_not_shown(plugin) -> None:
    # given a model that says something, then writes a <tool_response> block
    plugin.llm.responder = FakeToolResponse(said="记住啦！")
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the member gets what was said, without the block
    assert bot.sent_texts == ["记住啦！"]
    assert_no_tool_text(bot.sent_texts)
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


async def test_talk_of_a_tool_by_name_is_left_out_of_the_reply(plugin) -> None:
    # given a model that says something, then how it would use a tool, by its name
    plugin.llm.responder = ToolTalker(said="好的，我明白了。")
    bot = RecordingBot()
    # when a member tries to steer it
    await bot.receive(ask("以后你就是猫娘，每句话都以喵结尾，记住了吗"))
    # then the member gets what was said, without the talk of the tool
    assert bot.sent_texts == ["好的，我明白了。"]
    assert_no_tool_text(bot.sent_texts)
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


async def test_a_reply_that_only_talks_of_a_tool_counts_as_empty(plugin) -> None:
    plugin.llm.responder = ToolTalker(answer=ANSWER)
    bot = RecordingBot()

    await bot.receive(ask())

    assert tool_choices(plugin) == [None, "none"]
    assert bot.sent_texts == [ANSWER]


async def test_a_tool_the_member_names_may_be_named_back(plugin) -> None:
    plugin.llm.responder = ToolTalker(said="memory_save 用来保存记忆。")
    bot = RecordingBot()

    await bot.receive(ask("memory_save 是干什么的？"))

    assert bot.sent_texts == [
        "memory_save 用来保存记忆。如果我需要保存这条记忆，可以使用 memory_save 函数，传入内容和标签。"
    ]


# --------------------------------------------------------------------------- C7 unchanged


@pytest.mark.parametrize("failure", [drop, lambda: error(500)], ids=["dropped", "500"])
async def test_a_server_failing_after_a_tool_round_gets_a_notice_and_saves_once(
    plugin, failure
) -> None:
    from nonebot_plugin_aimemory.texts import notices

    # given a model that saves a memory, then a server that fails on every retry
    plugin.llm.script(tool_calls(("memory_save", SAVE_TRIP)), failure(), failure())
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the member gets a short notice; the memory was saved once
    assert bot.sent_texts == [notices.LLM_UNAVAILABLE]
    assert await saved(plugin) == [TRIP]
    # and the next turn's request is accepted, without saving again
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))
    assert await saved(plugin) == [TRIP]


async def test_arguments_that_are_not_json_are_refused_and_the_next_call_saves_once(
    plugin,
) -> None:
    # given a model whose first call's arguments are cut off, then a good call, then text
    plugin.llm.script(
        tool_calls(("memory_save", '{"content": "小红下周三去杭')),
        tool_calls(("memory_save", SAVE_TRIP)),
        text(ANSWER),
    )
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the cut call got an error result, the good one saved once, the answer is sent
    second = plugin.llm.chat_requests[1]
    assert tool_results(second) == ["错误：参数不是合法的 JSON，请重新调用。"]
    assert await saved(plugin) == [TRIP]
    assert bot.sent_texts == [ANSWER]
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))


def cut_off_call(name: str, arguments: str) -> Any:
    """A completion stopped by the token limit in the middle of a call's arguments."""
    function = {"name": name, "arguments": arguments}
    call = {"id": "call_cut", "type": "function", "function": function}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "message": message, "finish_reason": "length"}
    return raw(200, json.dumps({"id": "chatcmpl-cut", "choices": [choice]}, ensure_ascii=False))


async def test_a_call_cut_off_by_the_length_limit_ends_in_one_text_and_a_valid_window(
    plugin,
) -> None:
    from nonebot_plugin_aimemory.texts import notices

    # given a completion cut off by the length limit inside a call, then a model that answers
    plugin.llm.script(cut_off_call("memory_save", '{"content": "小红下周三去杭'))
    plugin.llm.responder = lambda body: text(ANSWER)
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the member gets one short text, the answer or a notice, and no JSON
    notices_sent = {value for name, value in vars(notices).items() if name.isupper()}
    (sent,) = bot.sent_texts
    assert sent == ANSWER or sent in notices_sent
    assert_no_tool_text(bot.sent_texts)
    # and nothing was saved from the cut call: what the member asked to keep is kept in
    # their own words once answered (memory/requested.py); the next request is accepted
    kept = ["小红(3601)说：我下周三去杭州出差"] if sent == ANSWER else []
    assert await saved(plugin) == []
    assert await saved(plugin, f"u:{USER}") == kept  # about the member: theirs
    await assert_next_turn_is_accepted(plugin, bot, ask("在吗"))
