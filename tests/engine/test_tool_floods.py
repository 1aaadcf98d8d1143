"""Tool-call floods against `ChatBot.turn`: at most 16 calls run per round, every kept call is
answered once, ids are unique, a round's results stay within their share of the budget, and
what the window keeps is a history the API accepts, before and after a restart."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply, text, tool_calls
from tests.fakes.responders import tool_calls_with_ids

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.tools import Tool
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

    MakeBot = Callable[..., ChatBot]

KEY = "group:20001"
SYSTEM_PROMPT = "你是小忆。"
COUNT_PARAMETERS = {"type": "object", "properties": {"n": {"type": "integer"}}}
BUDGET_TOKENS = 8000


@pytest.fixture
def make_bot(llm_client: LLMClient, store: DatabaseHistoryStore) -> MakeBot:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy, Compressor
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    def make(tools: Sequence[Tool], *, budget_tokens: int | None = None) -> ChatBot:
        counter = EstimatingCounter()
        compressor = None
        if budget_tokens is not None:
            policy = CompressionPolicy.for_budget(budget_tokens)
            compressor = Compressor(llm_client, counter, policy, prompts=SUMMARY_PROMPTS)
        return ChatBot(
            KEY,
            llm=llm_client,
            store=store,
            counter=counter,
            system_prompt=SYSTEM_PROMPT,
            tools=ToolRegistry(tools),
            compressor=compressor,
        )

    return make


def counting_tool(runs: list[int], result: Callable[[int], str] = lambda n: f"第 {n} 次") -> Tool:
    """A tool that records every run's `n` (a side effect the test can count)."""
    from nonebot_plugin_aimemory.engine.tools import Tool

    async def count(arguments: dict[str, Any]) -> str:
        runs.append(arguments["n"])
        return result(arguments["n"])

    return Tool("count", "数一下", count, COUNT_PARAMETERS)


def numbered_calls(count: int, first: int = 0) -> list[tuple[str, dict[str, Any]]]:
    return [("count", {"n": n}) for n in range(first, first + count)]


def last_round(messages: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The last assistant message with tool calls in a request, and the tool messages after it."""
    index = max(i for i, m in enumerate(messages) if m.get("tool_calls"))
    results = [m for m in messages[index + 1 :] if m["role"] == "tool"]
    return messages[index], results


def call_ids(message: dict[str, Any]) -> list[str]:
    return [call["id"] for call in message["tool_calls"]]


def all_call_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [call["id"] for m in messages for call in m.get("tool_calls") or ()]


def request_tokens(bot: ChatBot, body: dict[str, Any]) -> int:
    """A recorded request as the bot's own counter measures it (messages and tools)."""
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tokens import message_tokens

    messages = sum(message_tokens(Message.from_api(m), bot.counter) for m in body["messages"])
    tools = bot.counter.count(
        json.dumps(body.get("tools"), ensure_ascii=False, separators=(",", ":"))
    )
    return messages + tools


async def reloaded(make_bot: MakeBot, tools: Sequence[Tool]) -> ChatBot:
    """A fresh bot on the same store, the way a restart loads the window."""
    bot = make_bot(tools)
    await bot.load()
    return bot


# --------------------------------------------------------------------------- 2 000 calls


async def test_only_16_of_2000_calls_run_and_the_turn_ends_with_a_reply(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.tools import MAX_TOOL_CALLS_PER_ROUND

    # given a model that makes 2 000 calls in one completion, then answers
    runs: list[int] = []
    llm.script(tool_calls(*numbered_calls(2000)), text("数完了"))
    bot = make_bot([counting_tool(runs)])
    # when the turn runs
    result = await bot.turn(user("数到两千"))
    # then only the first 16 ran, once each, and the model's answer is the reply
    assert MAX_TOOL_CALLS_PER_ROUND == 16
    assert runs == list(range(16))
    assert result.reply == "数完了"
    assert len(llm.chat_requests) == 2


async def test_calls_beyond_16_are_answered_with_a_refusal_to_call_fewer(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    runs: list[int] = []
    llm.script(tool_calls(*numbered_calls(2000)), text("数完了"))
    bot = make_bot([counting_tool(runs)])

    await bot.turn(user("数到两千"))

    # the request after the flood was accepted: every call it carries is answered once
    assistant, results = last_round(llm.last_messages())
    assert call_ids(assistant) == [r["tool_call_id"] for r in results]
    ran, refused = results[:16], results[16:]
    assert [r["content"] for r in ran] == [f"第 {n} 次" for n in range(16)]
    assert refused, "calls beyond the limit must be answered, not silently dropped"
    for refusal in refused:
        assert refusal["content"].startswith("错误")
        assert "2000" in refusal["content"]
        assert "16" in refusal["content"]
        assert "少调用" in refusal["content"]


async def test_a_flood_keeps_the_request_small(llm: FakeOpenAI, make_bot: MakeBot) -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.tools import (
        MAX_REFUSED_TOOL_CALLS_KEPT,
        MAX_TOOL_CALLS_PER_ROUND,
    )

    llm.script(tool_calls(*numbered_calls(2000)), text("数完了"))
    bot = make_bot([counting_tool([])])

    await bot.turn(user("数到两千"))

    # 2 000 answers would cost more than a whole budget: the round keeps 32 calls
    assistant, results = last_round(llm.last_messages())
    kept = MAX_TOOL_CALLS_PER_ROUND + MAX_REFUSED_TOOL_CALLS_KEPT
    assert len(assistant["tool_calls"]) == len(results) == kept == 32
    assert "1968 个调用已省略" in results[-1]["content"]


async def test_the_flooded_round_is_kept_and_valid_after_a_restart(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.window import api_safe

    # given a turn that survived a flood of 2 000 calls
    runs: list[int] = []
    llm.script(tool_calls(*numbered_calls(2000)), text("数完了"))
    await make_bot([counting_tool(runs)]).turn(user("数到两千"))
    # when the bot restarts from the store and is asked again
    bot = await reloaded(make_bot, [counting_tool(runs)])
    llm.script(text("刚才数到 15"))
    result = await bot.turn(user("刚才数到几了？"))
    # then the stored window is a valid history that still holds the whole round
    stored = await store.load(KEY)
    assert api_safe(stored) == stored
    assert [m.role for m in stored[:2]] == ["user", "assistant"]
    assert len(stored[1].tool_calls) == 32
    assert sum(m.role == "tool" for m in stored) == 32
    # and the request after the restart carried it and was accepted; nothing ran again
    assert result.reply == "刚才数到 15"
    assert len(last_round(llm.last_messages())[1]) == 32
    assert runs == list(range(16))


# --------------------------------------------------------------------------- call ids


async def test_duplicate_call_ids_in_one_message_are_made_unique_and_each_call_runs_once(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.window import api_safe

    # given a server that sends one id for three calls
    runs: list[int] = []
    llm.script(
        tool_calls_with_ids(
            ("call_1", "count", {"n": 1}),
            ("call_1", "count", {"n": 2}),
            ("call_1", "count", {"n": 3}),
        ),
        text("三次都数了"),
    )
    bot = make_bot([counting_tool(runs)])
    # when the turn runs
    result = await bot.turn(user("数三次"))
    # then each call ran once and was answered once, under ids of its own
    assert runs == [1, 2, 3]
    assert result.reply == "三次都数了"
    assistant, results = last_round(llm.last_messages())
    assert call_ids(assistant) == ["call_1", "call_1_2", "call_1_3"]
    assert [(r["tool_call_id"], r["content"]) for r in results] == [
        ("call_1", "第 1 次"),
        ("call_1_2", "第 2 次"),
        ("call_1_3", "第 3 次"),
    ]
    # and the round stays in the history, in memory and on disk
    stored = await store.load(KEY)
    assert api_safe(stored) == stored == bot.window.messages
    assert [c.id for c in stored[1].tool_calls] == ["call_1", "call_1_2", "call_1_3"]


async def test_empty_and_missing_call_ids_get_ids_of_their_own(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.window import api_safe

    runs: list[int] = []
    llm.script(
        tool_calls_with_ids(
            ("", "count", {"n": 1}), (None, "count", {"n": 2}), ("", "count", {"n": 3})
        ),
        text("好"),
    )
    bot = make_bot([counting_tool(runs)])

    await bot.turn(user("数三次"))

    assert runs == [1, 2, 3]
    assistant, results = last_round(llm.last_messages())
    ids = call_ids(assistant)
    assert all(ids)
    assert len(set(ids)) == 3
    assert [r["tool_call_id"] for r in results] == ids
    # the ids are stored, so the round pairs up again after a restart
    stored = await (await reloaded(make_bot, [counting_tool(runs)])).store.load(KEY)
    assert api_safe(stored) == stored
    assert [c.id for c in stored[1].tool_calls] == ids


async def test_a_new_round_never_reuses_an_id_already_in_the_window(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a server that numbers calls from 1 in every completion
    runs: list[int] = []
    llm.script(
        tool_calls_with_ids(("call_1", "count", {"n": 1})),
        text("一"),
        tool_calls_with_ids(("call_1", "count", {"n": 2})),
        text("二"),
    )
    bot = make_bot([counting_tool(runs)])
    # when two turns each make a call
    await bot.turn(user("数一次"))
    await bot.turn(user("再数一次"))
    # then the second round got an id of its own (DeepSeek refuses one id used twice)
    assert runs == [1, 2]
    assert all_call_ids(llm.last_messages()) == ["call_1", "call_1_2"]


def test_a_renamed_id_never_takes_an_id_the_model_used_for_another_call() -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall
    from nonebot_plugin_aimemory.engine.tools import unique_call_ids

    calls = [ToolCall(call_id, "count", "{}") for call_id in ("a", "a", "a_2", "")]

    ids = [call.id for call in unique_call_ids(calls, taken_ids={"call_1"})]

    assert ids == ["a", "a_3", "a_2", "call_2"]


# --------------------------------------------------------------------------- the budget


async def test_the_results_of_a_round_stay_within_a_quarter_of_the_budget(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.request_room import TOOL_RESULTS_BUDGET_SHARE
    from nonebot_plugin_aimemory.engine.tools import MAX_TOOL_RESULT_CHARS

    # given 16 calls of a tool that answers at its cap (8 000 characters, ~10 000 tokens each)
    def result(n: int) -> str:
        return "短" if n == 0 else "长" * MAX_TOOL_RESULT_CHARS

    llm.script(tool_calls(*numbered_calls(16)), text("看完了"))
    bot = make_bot([counting_tool([], result)], budget_tokens=BUDGET_TOKENS)
    # when the round runs
    await bot.turn(user("都查一下"))
    # then the results together take at most a quarter of the budget, framing included
    _, results = last_round(llm.last_messages())
    tokens = [4 + bot.counter.count(r["content"]) for r in results]
    assert TOOL_RESULTS_BUDGET_SHARE == 0.25
    assert sum(tokens) <= BUDGET_TOKENS // 4
    # the short result is whole; the long ones share the rest equally and say they were cut
    assert results[0]["content"] == "短"
    for cut in results[1:]:
        assert cut["content"].startswith("长" * 50)
        assert "已截断" in cut["content"]
        assert f"原有 {MAX_TOOL_RESULT_CHARS} 字" in cut["content"]
    assert max(tokens[1:]) - min(tokens[1:]) <= 2


async def test_piled_up_rounds_never_push_a_request_over_the_budget(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.tools import MAX_TOOL_RESULT_CHARS

    # given a model that calls 16 new tools with 8 000-character answers whenever it may
    def keep_calling(body: dict[str, Any]) -> Reply:
        if body.get("tool_choice") == "none":
            return text("查完了")
        return tool_calls(*numbered_calls(16, first=16 * len(llm.chat_requests)))

    llm.responder = keep_calling
    tool = counting_tool([], lambda n: "查" * MAX_TOOL_RESULT_CHARS)
    bot = make_bot([tool], budget_tokens=BUDGET_TOKENS)
    # when the turn runs
    result = await bot.turn(user("一直查"))
    # then once another round would no longer fit, the model is asked to answer
    assert result.reply == "查完了"
    assert 1 < result.tool_rounds < bot.max_tool_rounds
    assert llm.chat_requests[-1]["tool_choice"] == "none"
    # and every request stayed within the budget, the last one included
    sizes = [request_tokens(bot, body) for body in llm.chat_requests]
    assert max(sizes) <= BUDGET_TOKENS, sizes


async def test_a_flood_in_a_small_budget_keeps_only_the_calls_whose_answers_fit(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given the smallest budget the plugin accepts and a model that makes 2 000 calls
    runs: list[int] = []
    llm.script(tool_calls(*numbered_calls(2000)), text("数完了"))
    bot = make_bot([counting_tool(runs)], budget_tokens=1024)
    # when the turn runs
    result = await bot.turn(user("数到两千"))
    # then fewer calls run than the limit allows, one refusal says the rest were left out
    assert result.reply == "数完了"
    assert 1 < len(runs) < 16
    assert runs == list(range(len(runs)))
    _, results = last_round(llm.last_messages())
    assert len(results) == len(runs) + 1
    assert f"只执行了前 {len(runs)} 个" in results[-1]["content"]
    # and the request carrying the round stays within the budget
    assert request_tokens(bot, llm.chat_requests[-1]) <= 1024
