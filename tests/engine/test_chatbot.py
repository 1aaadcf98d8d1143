"""`ChatBot.turn` against the fake OpenAI server and a real SQLite history: what is sent,
what is answered, and what is kept when things go wrong."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.openai_server import FakeOpenAI, delay, error, text, tool_calls

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.messages import ImagePart, Message
    from nonebot_plugin_aimemory.engine.tools import Tool
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

    MakeBot = Callable[..., ChatBot]

KEY = "private:10001"
SYSTEM_PROMPT = "你是小忆，一个记性很好的 QQ 聊天伙伴。"
WEATHER_PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}}


@pytest.fixture
def make_bot(llm_client: LLMClient, store: DatabaseHistoryStore) -> MakeBot:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry

    def make(
        tools: Sequence[Tool] = (), max_tool_rounds: int = 8, send_images: bool = False
    ) -> ChatBot:
        return ChatBot(
            KEY,
            llm=llm_client,
            store=store,
            counter=EstimatingCounter(),
            system_prompt=SYSTEM_PROMPT,
            tools=ToolRegistry(tools),
            max_tool_rounds=max_tool_rounds,
            send_images=send_images,
        )

    return make


def weather_tool(seen: list[dict[str, Any]] | None = None) -> Tool:
    from nonebot_plugin_aimemory.engine.tools import Tool

    async def get_weather(arguments: dict[str, Any]) -> str:
        if seen is not None:
            seen.append(arguments)
        return "晴，25 度"

    return Tool("get_weather", "查询城市天气", get_weather, WEATHER_PARAMETERS)


def roles(messages: Sequence[Message]) -> list[str]:
    return [m.role for m in messages]


async def wait_for(condition: Callable[[], bool], timeout_seconds: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


# --------------------------------------------------------------------------- a plain turn


async def test_turn_returns_the_reply_and_stores_the_exchange(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, user

    # given a fresh conversation
    llm.script(text("你好呀！"))
    bot = make_bot()
    # when the user says hello
    result = await bot.turn(user("你好"))
    # then the reply comes back and both messages are kept, in memory and on disk
    assert result.reply == "你好呀！"
    assert result.tool_rounds == 0
    assert await store.load(KEY) == [user("你好"), assistant("你好呀！")]
    assert bot.window.messages == [user("你好"), assistant("你好呀！")]


async def test_request_starts_with_the_system_prompt_and_ends_with_the_user_message(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    bot = make_bot()

    await bot.turn(user("你好"))

    assert llm.last_messages() == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "你好"},
    ]


async def test_history_loaded_from_the_store_is_sent(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, user

    await store.append(KEY, [user("我叫小明"), assistant("你好，小明！")])
    bot = make_bot()
    await bot.load()

    await bot.turn(user("我叫什么？"))

    assert [m["content"] for m in llm.last_messages()[1:]] == [
        "我叫小明",
        "你好，小明！",
        "我叫什么？",
    ]


# --------------------------------------------------------------------------- tools


async def test_tool_round_trip_sends_the_call_and_its_result(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that first asks for the weather, then answers
    seen: list[dict[str, Any]] = []
    llm.script(tool_calls(("get_weather", {"city": "北京"})), text("北京今天晴，25 度。"))
    bot = make_bot(tools=[weather_tool(seen)])
    # when the user asks
    result = await bot.turn(user("北京天气怎么样？"))
    # then the tool ran with the model's arguments and its result went back to the model
    assert seen == [{"city": "北京"}]
    assert result.reply == "北京今天晴，25 度。"
    assert result.tool_rounds == 1
    second = llm.chat_requests[1]["messages"]
    call = second[-2]["tool_calls"][0]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "北京"}'}
    assert second[-1] == {
        "role": "tool",
        "content": "晴，25 度",
        "tool_call_id": call["id"],
        "name": "get_weather",
    }
    # and the whole round is stored in order
    assert roles(await store.load(KEY)) == ["user", "assistant", "tool", "assistant"]


async def test_tools_are_offered_in_the_request(llm: FakeOpenAI, make_bot: MakeBot) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    bot = make_bot(tools=[weather_tool()])

    await bot.turn(user("你好"))

    assert [t["function"]["name"] for t in llm.chat_requests[0]["tools"]] == ["get_weather"]


async def test_unknown_tool_gets_an_error_result_and_the_turn_still_answers(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(tool_calls(("search_web", {"q": "天气"})), text("抱歉，我查不了网页。"))
    bot = make_bot(tools=[weather_tool()])

    result = await bot.turn(user("帮我搜一下天气"))

    assert result.reply == "抱歉，我查不了网页。"
    fed_back = llm.chat_requests[1]["messages"][-1]
    assert fed_back["role"] == "tool"
    assert "search_web" in fed_back["content"]
    assert "get_weather" in fed_back["content"]


async def test_last_call_after_max_tool_rounds_forbids_tools(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that keeps calling tools
    llm.script(
        tool_calls(("get_weather", {"city": "北京"})),
        tool_calls(("get_weather", {"city": "上海"})),
        text("北京和上海都是晴天。"),
    )
    bot = make_bot(tools=[weather_tool()], max_tool_rounds=2)
    # when it has used up its rounds
    result = await bot.turn(user("北京和上海天气？"))
    # then the last call carries tool_choice "none" and the turn answers
    assert [r.get("tool_choice") for r in llm.chat_requests] == [None, None, "none"]
    assert result.tool_rounds == 2
    assert result.reply == "北京和上海都是晴天。"


async def test_a_model_ignoring_tool_choice_none_is_asked_once_more_without_tools(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that ignores tool_choice "none" but answers when offered no tools
    llm.script(
        tool_calls(("get_weather", {"city": "北京"})),
        tool_calls(("get_weather", {"city": "上海"})),
        text("北京晴。"),
    )
    bot = make_bot(tools=[weather_tool()], max_tool_rounds=1)
    # when the turn runs out of rounds
    result = await bot.turn(user("天气？"))
    # then the last request lists no tools at all, and its text is the answer
    requests = llm.chat_requests
    assert [r.get("tool_choice") for r in requests] == [None, "none", None]
    assert ["tools" in r for r in requests] == [True, True, False]
    assert result.reply == "北京晴。"


async def test_only_tool_calls_even_without_tools_fails_but_keeps_finished_rounds(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.messages import user

    # given a model that answers with tool calls whatever it is asked
    llm.script(
        tool_calls(("get_weather", {"city": "北京"})),
        tool_calls(("get_weather", {"city": "上海"})),
        tool_calls(("get_weather", {"city": "广州"})),
    )
    bot = make_bot(tools=[weather_tool()], max_tool_rounds=1)
    # when the turn runs out of rounds
    with pytest.raises(LLMError):
        await bot.turn(user("天气？"))
    # then the finished round is kept and the next request is still valid
    assert roles(await store.load(KEY)) == ["user", "assistant", "tool"]
    llm.script(text("晴"))
    assert (await bot.turn(user("所以呢？"))).reply == "晴"


# --------------------------------------------------------------------------- failures


async def test_failed_turn_keeps_the_user_message(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(error(503), error(503), error(503))
    bot = make_bot()

    with pytest.raises(LLMError):
        await bot.turn(user("第一句"))

    assert bot.window.messages == [user("第一句")]
    assert await store.load(KEY) == [user("第一句")]


async def test_turn_after_a_failed_one_merges_the_two_user_messages(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.messages import user

    # given a turn that failed after the user spoke
    llm.script(error(503), error(503), error(503))
    bot = make_bot()
    with pytest.raises(LLMError):
        await bot.turn(user("第一句"))
    # when the user speaks again
    llm.script(text("两句都收到了"))
    result = await bot.turn(user("第二句"))
    # then the strict fake accepted a request with both sentences in one user message
    assert result.reply == "两句都收到了"
    assert llm.last_messages()[1:] == [{"role": "user", "content": "第一句\n第二句"}]


async def test_cancelled_turn_keeps_the_user_message(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a turn waiting on a slow model
    llm.script(delay(2.0, text("太迟了")))
    bot = make_bot()
    task = asyncio.create_task(bot.turn(user("在吗")))
    await wait_for(lambda: len(llm.requests) == 1)
    # when it is cancelled
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # then the user's message is still there
    assert bot.window.messages == [user("在吗")]
    assert await store.load(KEY) == [user("在吗")]


async def test_broken_emoji_does_not_poison_the_conversation(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a message carrying half of a surrogate pair (OneBot JSON may hold "\ud83d" alone)
    bot = make_bot()
    # when it and a normal message are answered
    first = await bot.turn(user("看这个\ud83d"))
    second = await bot.turn(user("你好"))
    # then both turns reach the model
    assert first.reply.startswith("ECHO: 看这个")
    assert second.reply == "ECHO: 你好"


# --------------------------------------------------------------------------- what is kept


async def test_persist_user_text_is_kept_while_the_full_text_is_sent(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    bot = make_bot()

    await bot.turn(user("[群聊 12:00 小明] 你好"), persist_user_text="小明：你好")

    assert llm.last_messages()[-1] == {"role": "user", "content": "[群聊 12:00 小明] 你好"}
    assert bot.window.messages[0] == user("小明：你好")
    assert (await store.load(KEY))[0] == user("小明：你好")


@pytest.fixture
def cat() -> ImagePart:
    """A picture of a cat, sent by URL."""
    from nonebot_plugin_aimemory.engine.messages import ImagePart

    return ImagePart.from_source("https://example.com/cat.png", identity="file-cat")


async def test_image_is_sent_but_kept_as_its_marker(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore, cat: ImagePart
) -> None:
    from nonebot_plugin_aimemory.engine.messages import TextPart, user

    # given a bot for a model that takes images, and a message with a picture
    bot = make_bot(send_images=True)
    # when it is answered
    await bot.turn(user((TextPart("看看这只猫"), cat)))
    # then the model saw the picture, but only its marker is remembered
    assert llm.last_messages()[-1]["content"] == [
        {"type": "text", "text": "看看这只猫"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]
    assert re.fullmatch(r"\[图片 [0-9a-f]{8}\]", cat.marker)
    kept = (await store.load(KEY))[0]
    assert kept == user("看看这只猫" + cat.marker)
    assert bot.window.messages[0] == kept


async def test_image_is_not_sent_again_on_the_next_turn(
    llm: FakeOpenAI, make_bot: MakeBot, cat: ImagePart
) -> None:
    from nonebot_plugin_aimemory.engine.messages import TextPart, user

    bot = make_bot(send_images=True)
    await bot.turn(user((TextPart("看看这只猫"), cat)))

    await bot.turn(user("可爱吗？"))

    assert llm.last_messages()[1]["content"] == "看看这只猫" + cat.marker


async def test_text_only_model_sees_the_image_marker(
    llm: FakeOpenAI, make_bot: MakeBot, cat: ImagePart
) -> None:
    from nonebot_plugin_aimemory.engine.messages import TextPart, user

    bot = make_bot(send_images=False)

    await bot.turn(user((TextPart("看看这只猫"), cat)))

    assert llm.last_messages()[-1]["content"] == "看看这只猫" + cat.marker


# --------------------------------------------------------------------------- context size


async def test_context_tokens_are_the_prompt_tokens_reported_by_the_api(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(text("好", usage={"prompt_tokens": 1234, "completion_tokens": 1}))
    bot = make_bot()

    await bot.turn(user("你好"))

    assert bot.context_tokens == 1234


async def test_context_tokens_are_estimated_when_usage_is_missing(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(text("好", usage=None))
    bot = make_bot()

    await bot.turn(user("你好"))

    assert bot.context_tokens > 0


async def test_usage_is_summed_over_tool_rounds(llm: FakeOpenAI, make_bot: MakeBot) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(
        tool_calls(("get_weather", {}), usage={"prompt_tokens": 100, "completion_tokens": 10}),
        text("晴", usage={"prompt_tokens": 150, "completion_tokens": 5}),
    )
    bot = make_bot(tools=[weather_tool()])

    result = await bot.turn(user("天气？"))

    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (250, 15)
    assert bot.context_tokens == 150


# --------------------------------------------------------------------------- prompt caching


async def test_system_message_is_byte_identical_across_turns(
    make_bot: MakeBot, sent_bodies: list[bytes]
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    bot = make_bot(tools=[weather_tool()])

    await bot.turn(user("你好"))
    await bot.turn(user("在吗"))

    head = b'{"model":"m","messages":[' + bot.system_message.api_json() + b","
    assert len(sent_bodies) == 2
    assert all(body.startswith(head) for body in sent_bodies)
    tools = b',"tools":' + (bot.tools.specs_json() or b"") + b"}"
    assert all(body.endswith(tools) for body in sent_bodies)


async def test_each_request_extends_the_previous_one_byte_for_byte(
    make_bot: MakeBot, sent_bodies: list[bytes]
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a conversation of a few turns (no tools, so bodies end with the messages)
    bot = make_bot()
    for said in ("你好", "今天吃什么？", "那就火锅吧"):
        await bot.turn(user(said))
    # then every request is the previous one's messages plus new ones: a cacheable prefix
    for previous, current in itertools.pairwise(sent_bodies):
        assert current.startswith(previous.removesuffix(b"]}") + b",")
