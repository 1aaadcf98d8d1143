"""What `ChatBot.turn` keeps when the provider says no: a refused or otherwise bad request
must not stay in the window (it would fail again with every later message), while what the
provider already accepted stays, as a history every API accepts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from tests.engine.conftest import KEY
from tests.fakes.openai_server import (
    ContentFilter,
    FakeOpenAI,
    deepseek_no_balance,
    deepseek_refusal,
    error,
    text,
    tool_calls,
)

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tools import Tool
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

    MakeBot = Callable[..., ChatBot]

PHRASE = "敏感词"


def lookup_tool(results: list[str], ran: list[dict[str, Any]]) -> Tool:
    """A tool answering each call with the next of `results`, recording its arguments."""
    from nonebot_plugin_aimemory.engine.tools import Tool

    async def look_up(arguments: dict[str, Any]) -> str:
        ran.append(arguments)
        return results.pop(0)

    parameters = {"type": "object", "properties": {"q": {"type": "string"}}}
    return Tool("look_up", "查资料", look_up, parameters)


def roles(messages: Sequence[Message]) -> list[str]:
    return [m.role for m in messages]


def roles_of_last_request(llm: FakeOpenAI) -> list[str]:
    """Roles of the last accepted request, system prompt left out."""
    return [m["role"] for m in llm.last_messages()[1:]]


def requests_text(llm: FakeOpenAI) -> list[str]:
    """Every chat request the fake saw (refused ones too), as text."""
    return [str(r.body) for r in llm.requests if r.path.endswith("/chat/completions")]


async def failed_turn(bot: ChatBot, message: Message) -> str:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    with pytest.raises(LLMError) as raised:
        await bot.turn(message)
    return raised.value.kind


async def test_a_refused_message_is_not_kept(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(deepseek_refusal())
    bot = make_bot()

    assert await failed_turn(bot, user(f"说个{PHRASE}")) == "refused"

    assert bot.window.messages == []
    assert await store.load(KEY) == []


async def test_after_a_refusal_the_next_message_is_answered_alone(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.content_filter = ContentFilter(PHRASE, provider="deepseek")
    bot = make_bot()
    await failed_turn(bot, user(f"说个{PHRASE}"))

    result = await bot.turn(user("今天天气怎么样"))

    assert result.reply == "ECHO: 今天天气怎么样"
    assert llm.last_messages()[1:] == [{"role": "user", "content": "今天天气怎么样"}]


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(deepseek_no_balance(), id="account"),
        pytest.param(error(400, "Invalid value for 'temperature'."), id="bad-request"),
        pytest.param(error(404, "The model `m` does not exist."), id="not-found"),
    ],
)
async def test_a_message_failing_for_a_non_transient_reason_is_not_kept(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore, reply: Any
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(reply)
    bot = make_bot()

    await failed_turn(bot, user("在吗"))

    assert await store.load(KEY) == []


async def test_a_refusal_mid_tool_loop_keeps_the_accepted_rounds_and_drops_the_newest(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    # given a lookup whose second result trips the provider's filter
    llm.content_filter = ContentFilter(PHRASE, provider="dashscope")
    ran: list[dict[str, Any]] = []
    bot = make_bot(tools=[lookup_tool(["第一条资料", f"第二条资料：{PHRASE}"], ran)])
    llm.script(tool_calls(("look_up", {"q": "一"})), tool_calls(("look_up", {"q": "二"})))
    # when the request carrying that result is refused
    assert await failed_turn(bot, user("帮我查查")) == "refused"
    # then both tools ran, and the window keeps what the provider had accepted
    assert ran == [{"q": "一"}, {"q": "二"}]
    kept = await store.load(KEY)
    assert roles(kept) == ["user", "assistant", "tool"]
    assert kept[-1].text == "第一条资料"


async def test_after_a_refusal_mid_tool_loop_the_next_request_is_valid_and_answered(
    llm: FakeOpenAI, make_bot: MakeBot
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.content_filter = ContentFilter(PHRASE, provider="deepseek")
    bot = make_bot(tools=[lookup_tool(["第一条资料", f"第二条资料：{PHRASE}"], [])])
    llm.script(tool_calls(("look_up", {"q": "一"})), tool_calls(("look_up", {"q": "二"})))
    await failed_turn(bot, user("帮我查查"))

    llm.script(text("查到了第一条"))
    result = await bot.turn(user("结果呢"))

    # the strict fake checks tool links and roles: the kept round is a valid history
    assert result.reply == "查到了第一条"
    assert roles_of_last_request(llm) == ["user", "assistant", "tool", "user"]
    assert PHRASE not in str(llm.last_messages())


async def test_a_refusal_of_the_first_tool_result_keeps_only_the_users_message(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.content_filter = ContentFilter(PHRASE, provider="deepseek")
    bot = make_bot(tools=[lookup_tool([f"资料：{PHRASE}"], [])])
    llm.script(tool_calls(("look_up", {"q": "一"})))

    await failed_turn(bot, user("帮我查查"))

    # the user's message was accepted with the first request; the round it led to was not
    assert await store.load(KEY) == [user("帮我查查")]


async def test_a_refused_reply_after_tools_ran_keeps_their_effects_not_their_round(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    ran: list[dict[str, Any]] = []
    bot = make_bot(tools=[lookup_tool(["资料"], ran)])
    llm.script(
        tool_calls(("look_up", {"q": "一"})),
        text("根据资料，", finish_reason="content_filter"),
    )

    assert await failed_turn(bot, user("帮我查查")) == "refused"

    assert ran == [{"q": "一"}]
    assert await store.load(KEY) == [user("帮我查查")]
    llm.script(text("好的"))
    assert (await bot.turn(user("那算了"))).reply == "好的"
    assert "根据资料" not in "".join(requests_text(llm))


async def test_a_transient_failure_mid_tool_loop_still_keeps_every_finished_round(
    llm: FakeOpenAI, make_bot: MakeBot, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    bot = make_bot(tools=[lookup_tool(["资料"], [])])
    llm.script(tool_calls(("look_up", {"q": "一"})), error(503), error(503), error(503))

    assert await failed_turn(bot, user("帮我查查")) == "http"

    assert roles(await store.load(KEY)) == ["user", "assistant", "tool"]
