"""Thinking models' `reasoning_content`: kept on the assistant message, sent back with every
later request within an exchange that made tool calls (DeepSeek answers 400 otherwise),
dropped elsewhere, counted in token estimates, never shown and never folded into a summary.

The fake server runs as a thinking model here: it invents reasoning for every reply that
scripts none, and rejects a request with tools whose tool exchanges lost their reasoning."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.openai_server import (
    FakeOpenAI,
    Reply,
    error,
    last_user_text,
    raw,
    text,
    tool_calls,
)
from tests.fakes.responders import FactKeepingLLM, is_compression_request

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter
    from nonebot_plugin_aimemory.engine.tools import Tool
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

    MakeBot = Callable[..., ChatBot]

KEY = "private:10001"
THOUGHT = "【思考 "  # how the thinking-model fake starts the reasoning it invents
LONG_REASONING = "让我一步一步想清楚。" * 5000  # 50 000 characters
LINE = "今天群里聊了很多关于周末去爬山的安排，大家各有想法，讨论得很热烈。"


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test", thinking_model=True) as server:
        yield server


@functools.cache
def cl100k() -> TiktokenCounter:
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter

    counter = TiktokenCounter()
    counter.load()
    return counter


def weather_tool() -> Tool:
    from nonebot_plugin_aimemory.engine.tools import Tool

    async def get_weather(arguments: dict[str, Any]) -> str:
        return "晴，25 度"

    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    return Tool("get_weather", "查询城市天气", get_weather, parameters)


@pytest.fixture
def make_bot(llm_client: LLMClient, store: DatabaseHistoryStore) -> MakeBot:
    """A conversation with the weather tool; `budget` adds a compressor."""
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy, Compressor
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    def make(*, budget: int | None = None, max_tool_rounds: int = 8) -> ChatBot:
        compressor = None
        if budget is not None:
            policy = CompressionPolicy.for_budget(budget)
            compressor = Compressor(llm_client, cl100k(), policy, prompts=SUMMARY_PROMPTS)
        return ChatBot(
            KEY,
            llm=llm_client,
            store=store,
            counter=cl100k(),
            system_prompt="你是小忆。",
            tools=ToolRegistry([weather_tool()]),
            max_tool_rounds=max_tool_rounds,
            compressor=compressor,
        )

    return make


async def say(bot: ChatBot, content: str):
    from nonebot_plugin_aimemory.engine.messages import user

    return await bot.turn(user(content))


def assistants(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "assistant"]


def completion_body(message: dict[str, Any]) -> str:
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps({"id": "x", "object": "chat.completion", "choices": [choice]})


# --------------------------------------------------------------------------- the client


async def test_reasoning_content_is_kept_on_the_assistant_message(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(text("北京今天晴。", reasoning="用户问天气，直接回答。"))

    completion = await llm_client.complete([user("天气？")])

    assert completion.message.text == "北京今天晴。"
    assert completion.message.reasoning == "用户问天气，直接回答。"


async def test_reasoning_content_of_50000_characters_is_kept_whole(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(tool_calls(("get_weather", {}), reasoning=LONG_REASONING))

    completion = await llm_client.complete([user("天气？")])

    assert completion.message.reasoning == LONG_REASONING


async def test_null_reasoning_content_is_ignored(llm: FakeOpenAI, llm_client: LLMClient) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    body = {"role": "assistant", "content": "好的", "reasoning_content": None}
    llm.script(raw(200, completion_body(body)))

    completion = await llm_client.complete([user("hi")])

    assert completion.message.reasoning is None
    assert "reasoning_content" not in completion.message.to_api()


async def test_non_string_reasoning_content_is_ignored(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    body = {"role": "assistant", "content": "好的", "reasoning_content": {"steps": ["想", 1]}}
    llm.script(raw(200, completion_body(body)))

    completion = await llm_client.complete([user("hi")])

    assert completion.message.text == "好的"
    assert completion.message.reasoning is None


async def test_empty_reasoning_content_is_sent_back_as_a_space(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    # DeepSeek V4 rejects an empty reasoning_content as missing.
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(tool_calls(("get_weather", {}), reasoning=""))

    completion = await llm_client.complete([user("天气？")])

    assert completion.message.reasoning == " "


async def test_think_block_in_content_is_still_stripped_beside_reasoning_content(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(text("<think>内心独白</think>你好呀", reasoning="打个招呼"))

    completion = await llm_client.complete([user("hi")])

    assert completion.message.text == "你好呀"
    assert completion.message.reasoning == "打个招呼"


# --------------------------------------------------------------------------- the message


def test_message_json_round_trips_its_reasoning_byte_for_byte() -> None:
    from nonebot_plugin_aimemory.engine.messages import Message, ToolCall, assistant

    message = assistant(None, (ToolCall("call_1", "get_weather", "{}"),), reasoning=LONG_REASONING)

    reloaded = Message.from_api(json.loads(message.api_json()))

    assert reloaded.reasoning == LONG_REASONING
    assert reloaded.api_json() == message.api_json()


def test_stored_non_string_reasoning_content_loads_without_it() -> None:
    from nonebot_plugin_aimemory.engine.messages import Message

    message = Message.from_api({"role": "assistant", "content": "好", "reasoning_content": 42})

    assert message.reasoning is None


def test_message_tokens_count_the_reasoning() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter, message_tokens

    counter = EstimatingCounter()
    plain = message_tokens(assistant("好的"), counter)

    thinking = message_tokens(assistant("好的", reasoning=LONG_REASONING), counter)

    assert thinking == plain + counter.count(LONG_REASONING)


def test_transcript_for_the_compressor_leaves_reasoning_out() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, user
    from nonebot_plugin_aimemory.engine.transcript import render_transcript

    lines = render_transcript(
        [user("天气？"), assistant("晴", reasoning="先想想")], assistant_label="小忆："
    )

    assert lines == ["天气？", "小忆：晴"]


# --------------------------------------------------------------------------- the window


def test_api_safe_keeps_reasoning_messages_as_they_are() -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, tool_result, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    call = ToolCall("call_1", "get_weather", "{}")
    history = [
        user("天气？"),
        assistant(None, (call,), reasoning="查一下"),
        tool_result(call, "晴"),
        assistant("晴", reasoning="查到了"),
    ]

    safe = api_safe(history)

    assert all(a is b for a, b in zip(safe, history, strict=True))


def test_merged_assistant_messages_keep_both_reasonings() -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, tool_result, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    call = ToolCall("call_1", "get_weather", "{}")
    history = [
        user("天气？"),
        assistant("我看看", reasoning="先回一句"),
        assistant(None, (call,), reasoning="再查天气"),
        tool_result(call, "晴"),
    ]

    merged = api_safe(history)[1]

    assert merged.tool_calls == (call,)
    assert merged.reasoning == "先回一句\n再查天气"


def test_an_unanswered_call_kept_as_text_keeps_its_reasoning() -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, user
    from nonebot_plugin_aimemory.engine.window import api_safe

    call = ToolCall("call_1", "get_weather", "{}")

    safe = api_safe([user("天气？"), assistant("我查一下", (call,), reasoning="要查天气")])

    assert safe[1].tool_calls == ()
    assert safe[1].reasoning == "要查天气"


def test_truncation_keeps_each_exchange_whole_with_its_reasoning() -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant, tool_result, user
    from nonebot_plugin_aimemory.engine.window import truncate_oldest_half

    history: list[Message] = []
    for i in range(5):
        call = ToolCall(f"call_{i}", "get_weather", "{}")
        history += [
            user(f"第{i}次问天气"),
            assistant(None, (call,), reasoning=f"查询{i}"),
            tool_result(call, "晴"),
            assistant("晴", reasoning=f"回答{i}"),
        ]

    kept = truncate_oldest_half(history)

    assert kept[0].role == "user"
    assert [m.reasoning for m in kept if m.role == "assistant"] == [
        m.reasoning for m in history[-len(kept) :] if m.role == "assistant"
    ]
    assert all(m.reasoning for m in kept if m.role == "assistant")


def test_the_verbatim_tail_is_measured_with_the_reasoning() -> None:
    from nonebot_plugin_aimemory.engine.compressor import tail_start
    from nonebot_plugin_aimemory.engine.messages import assistant, user

    history = [
        user("天气？"),
        assistant("晴", reasoning=LONG_REASONING),
        user("谢谢"),
        assistant("不客气"),
    ]

    # 200 tokens hold all four texts, but not the 50 000-character reasoning.
    assert tail_start(history, 200, cl100k()) == 2


# --------------------------------------------------------------------------- the turn


async def test_a_tool_round_sends_its_reasoning_back_in_the_same_turn(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    llm.script(tool_calls(("get_weather", {"city": "北京"}), reasoning="要查北京天气"), text("晴"))
    bot = make_bot()

    result = await say(bot, "北京天气？")

    assert result.reply == "晴"
    second = llm.chat_requests[-1]["messages"]
    assert assistants(second) == [
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "要查北京天气",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "北京"}'},
                }
            ],
        }
    ]


async def test_every_assistant_message_of_a_tool_exchange_is_sent_back_in_later_turns(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    llm.script(tool_calls(("get_weather", {}), reasoning="查天气"), text("晴", reasoning="答天气"))
    bot = make_bot()
    await say(bot, "天气？")

    await say(bot, "谢谢")
    await say(bot, "再见")

    for request in llm.chat_requests[-2:]:
        sent = [m.get("reasoning_content") for m in assistants(request["messages"])]
        assert sent[:2] == ["查天气", "答天气"]


async def test_an_exchange_without_tool_calls_sends_no_reasoning_later(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    llm.script(text("你好", reasoning="打招呼"))
    bot = make_bot()
    await say(bot, "hi")

    await say(bot, "天气？")

    (answer,) = assistants(llm.chat_requests[-1]["messages"])
    assert "reasoning_content" not in answer
    assert all(m.reasoning is None for m in await store.load(KEY))


async def test_a_forced_final_answer_of_a_tool_exchange_keeps_its_reasoning(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    llm.script(
        tool_calls(("get_weather", {})),
        tool_calls(("get_weather", {}), content="就说晴吧", reasoning="不再查了"),
    )
    bot = make_bot(max_tool_rounds=1)

    await say(bot, "天气？")

    assert bot.window.messages[-1].text == "就说晴吧"
    assert bot.window.messages[-1].reasoning == "不再查了"


async def test_tool_exchange_reasoning_is_sent_back_after_reloading_from_the_store(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    llm.script(tool_calls(("get_weather", {}), reasoning=LONG_REASONING), text("晴"))
    await say(make_bot(), "天气？")
    reloaded = make_bot()
    await reloaded.load()

    result = await say(reloaded, "明天呢？")

    assert result.reply.startswith("ECHO")
    call = assistants(llm.chat_requests[-1]["messages"])[0]
    assert call["reasoning_content"] == LONG_REASONING


async def test_a_reloaded_tool_exchange_is_sent_as_the_same_bytes(
    llm: FakeOpenAI, make_bot: MakeBot, sent_bodies: list[bytes]
) -> None:
    # Provider prefix caching only matches a prompt whose earlier messages are identical.
    llm.script(tool_calls(("get_weather", {})), text("晴"))
    bot = make_bot()
    await say(bot, "天气？")
    exchange = b",".join(m.api_json() for m in bot.window.messages)
    reloaded = make_bot()
    await reloaded.load()

    await say(reloaded, "明天呢？")

    assert THOUGHT.encode() in exchange
    assert exchange in sent_bodies[-1]


async def test_reasoning_is_never_part_of_the_reply(llm: FakeOpenAI, make_bot: MakeBot) -> None:
    llm.script(tool_calls(("get_weather", {})), text("晴", reasoning="内心戏"))

    result = await say(make_bot(), "天气？")

    assert result.reply == "晴"


async def test_the_window_total_counts_the_reasoning(llm: FakeOpenAI, make_bot: MakeBot) -> None:
    llm.script(tool_calls(("get_weather", {}), reasoning=LONG_REASONING), text("晴"))
    bot = make_bot()

    await say(bot, "天气？")

    assert bot.window.tokens > cl100k().count(LONG_REASONING)


# --------------------------------------------------------------------------- compression


def weather_every_third_turn() -> Callable[[dict[str, Any]], Reply]:
    """Asked about the weather, the model calls the tool first; otherwise it answers (and
    compresses) as FactKeepingLLM; the thinking-model fake adds reasoning to every reply."""
    fallback = FactKeepingLLM()

    def respond(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        asks_weather = messages[-1]["role"] == "user" and "天气" in last_user_text(messages)
        if asks_weather and not is_compression_request(body):
            return tool_calls(("get_weather", {"city": "杭州"}))
        return fallback(body)

    return respond


async def converse_until_compressed(bot: ChatBot, turns: int = 60) -> None:
    for turn in range(turns):
        topic = "天气怎么样" if turn % 3 == 0 else "随便聊聊"
        await say(bot, f"{LINE} 第{turn}轮，{topic}")
        if bot.stats.count >= 2:
            return
    pytest.fail(f"fewer than two compressions in {turns} turns")


async def test_requests_after_compressing_tool_exchanges_keep_their_reasoning(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    llm.responder = weather_every_third_turn()
    bot = make_bot(budget=2000)

    # Every turn succeeds: a request that lost a tool exchange's reasoning is answered 400.
    await converse_until_compressed(bot)

    later = [r for r in llm.chat_requests if not is_compression_request(r)][-1]
    assert any(m.get("tool_calls") for m in later["messages"])


async def test_compressor_requests_carry_no_reasoning(llm: FakeOpenAI, make_bot: MakeBot) -> None:
    llm.responder = weather_every_third_turn()
    bot = make_bot(budget=2000)

    await converse_until_compressed(bot)

    folds = [r for r in llm.chat_requests if is_compression_request(r)]
    assert folds
    assert all(THOUGHT not in json.dumps(r, ensure_ascii=False) for r in folds)


async def test_the_truncation_fallback_keeps_later_requests_valid(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    chat = weather_every_third_turn()

    def respond(body: dict[str, Any]) -> Reply:
        return error(500, "compressor down") if is_compression_request(body) else chat(body)

    llm.responder = respond
    bot = make_bot(budget=2000)
    for turn in range(40):
        topic = "天气怎么样" if turn % 3 == 0 else "随便聊聊"
        await say(bot, f"{LINE} 第{turn}轮，{topic}")

    folds = [r for r in llm.requests if r.body and is_compression_request(r.body)]
    assert folds, "the window never reached the compression threshold"
    rejected = [r for r in llm.requests if r.status == 400]
    assert rejected == []
