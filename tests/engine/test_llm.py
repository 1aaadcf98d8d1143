"""`LLMClient` against the fake OpenAI server over real HTTP: parsing, retries, failures."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.engine.conftest import MODEL
from tests.fakes.openai_server import (
    ErrorReply,
    FakeOpenAI,
    delay,
    drop,
    error,
    raw,
    text,
    tool_calls,
)
from tests.fakes.raw_http import Served, completion_json, ok, read_request, serving

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient
    from nonebot_plugin_aimemory.engine.messages import Message


def question() -> list[Message]:
    """The conversation every request here sends."""
    from nonebot_plugin_aimemory.engine.messages import system, user

    return [system("你是小忆"), user("你好")]


def completion_body(message: dict[str, Any]) -> str:
    """A bare chat-completion response around one assistant message."""
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "choices": [choice]})


# --------------------------------------------------------------------------- parsing


async def test_text_reply_is_parsed_with_usage(llm: FakeOpenAI, llm_client: LLMClient) -> None:
    from nonebot_plugin_aimemory.engine.llm import Usage
    from nonebot_plugin_aimemory.engine.messages import assistant

    llm.script(text("你好呀", usage={"prompt_tokens": 12, "completion_tokens": 3}))

    completion = await llm_client.complete(question())

    assert completion.message == assistant("你好呀")
    assert completion.usage == Usage(prompt_tokens=12, completion_tokens=3)
    assert completion.finish_reason == "stop"


async def test_missing_usage_gives_none(llm: FakeOpenAI, llm_client: LLMClient) -> None:
    llm.script(text("你好呀", usage=None))

    completion = await llm_client.complete(question())

    assert completion.usage is None


async def test_think_block_is_not_in_the_reply(llm: FakeOpenAI, llm_client: LLMClient) -> None:
    llm.script(text("<think>用户在打招呼，我该热情一点。</think>\n你好呀！"))

    completion = await llm_client.complete(question())

    assert completion.message.text == "你好呀！"


async def test_unclosed_think_block_is_cut_to_the_end(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    llm.script(text("你好呀！<think>后面还有没想完的"))

    completion = await llm_client.complete(question())

    assert completion.message.text == "你好呀！"


async def test_reasoning_content_is_not_in_the_reply(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    llm.script(text("你好呀！", reasoning="用户在打招呼，我该热情一点。"))

    completion = await llm_client.complete(question())

    assert completion.message.text == "你好呀！"


async def test_tool_calls_are_parsed(llm: FakeOpenAI, llm_client: LLMClient) -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall

    llm.script(tool_calls(("get_weather", {"city": "北京"}), ("get_time", {})))

    completion = await llm_client.complete(question())

    assert completion.message.content is None
    assert completion.message.tool_calls == (
        ToolCall("call_1", "get_weather", '{"city": "北京"}'),
        ToolCall("call_2", "get_time", "{}"),
    )


async def test_tool_call_arguments_given_as_an_object_become_json_text(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    call = {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": {"n": 1}}}
    llm.script(raw(200, completion_body({"role": "assistant", "tool_calls": [call]})))

    completion = await llm_client.complete(question())

    (parsed,) = completion.message.tool_calls
    assert isinstance(parsed.arguments, str)
    assert json.loads(parsed.arguments) == {"n": 1}


async def test_tool_calls_without_ids_get_distinct_generated_ids(
    llm: FakeOpenAI, llm_client: LLMClient
) -> None:
    calls = [{"type": "function", "function": {"name": "f", "arguments": "{}"}}] * 2
    llm.script(raw(200, completion_body({"role": "assistant", "tool_calls": calls})))

    completion = await llm_client.complete(question())

    first, second = (call.id for call in completion.message.tool_calls)
    assert first
    assert second
    assert first != second


# --------------------------------------------------------------------------- request body


async def test_request_body_is_exactly_build_request_body(
    llm: FakeOpenAI, llm_client: LLMClient, sent_bodies: list[bytes]
) -> None:
    from nonebot_plugin_aimemory.engine.llm import build_request_body
    from nonebot_plugin_aimemory.engine.messages import (
        ImagePart,
        TextPart,
        ToolCall,
        assistant,
        system,
        tool_result,
        user,
    )

    call = ToolCall("call_1", "get_weather", '{"city":"北京"}')
    messages = [
        system("你是小忆"),
        user('他说："你好"\n<b>&</b> 😀 \\ \t'),
        assistant(None, (call,)),
        tool_result(call, "晴"),
        assistant("北京晴"),
        user((TextPart("看"), ImagePart.from_source("https://example.com/cat.png"))),
    ]

    await llm_client.complete(messages)

    assert sent_bodies == [build_request_body(MODEL, messages, None)]
    compact = json.dumps(
        {"model": MODEL, "messages": [m.to_api() for m in messages]},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert sent_bodies[0] == compact.encode()
    assert llm.chat_requests == [{"model": MODEL, "messages": [m.to_api() for m in messages]}]


async def test_request_body_carries_tools_and_extra_fields(
    llm: FakeOpenAI, llm_client: LLMClient, sent_bodies: list[bytes]
) -> None:
    spec = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
    tools_json = json.dumps([spec]).encode()

    await llm_client.complete(question(), tools_json, extra={"tool_choice": "none"})

    assert json.loads(sent_bodies[0]) == {
        "model": MODEL,
        "messages": [m.to_api() for m in question()],
        "tools": [spec],
        "tool_choice": "none",
    }


async def test_wrong_api_key_is_an_account_error_without_retry(
    llm: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient

    client = LLMClient(http, Endpoint(llm.base_url, "sk-wrong", MODEL), backoff_seconds=0.01)

    with pytest.raises(LLMError) as raised:
        await client.complete(question())

    assert (raised.value.kind, raised.value.status) == ("account", 401)
    assert len(llm.requests) == 1


# --------------------------------------------------------------------------- retries


@pytest.mark.parametrize("status", [500, 501, 502, 503, 504, 507, 521, 529, 408, 409, 429])
async def test_server_error_is_retried_once_then_succeeds(
    llm: FakeOpenAI, llm_client: LLMClient, status: int
) -> None:
    llm.script(error(status), text("好了"))

    completion = await llm_client.complete(question())

    assert completion.message.text == "好了"
    assert len(llm.chat_requests) == 2


async def test_retry_after_of_a_429_is_honoured(llm: FakeOpenAI, llm_client: LLMClient) -> None:
    # given a rate limit asking for 0.3 s while the client's own backoff is 0.01 s
    llm.script(error(429, "Rate limit reached", headers={"Retry-After": "0.3"}), text("好了"))
    loop = asyncio.get_running_loop()
    started = loop.time()
    # when a completion is requested
    completion = await llm_client.complete(question())
    # then it waited as asked before the successful retry
    assert loop.time() - started >= 0.29  # asyncio may wake a hair early
    assert completion.message.text == "好了"


async def test_server_error_beyond_max_retries_raises_http_error(
    llm: FakeOpenAI, http: httpx.AsyncClient, endpoint: Endpoint
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.llm import LLMClient

    client = LLMClient(http, endpoint, timeout_seconds=0.5, max_retries=1, backoff_seconds=0.01)
    llm.script(error(500), error(500), text("不会用到"))

    with pytest.raises(LLMError) as raised:
        await client.complete(question())

    assert (raised.value.kind, raised.value.status) == ("http", 500)
    assert llm.pending == 1


async def test_slow_reply_raises_timeout(
    llm: FakeOpenAI, http: httpx.AsyncClient, endpoint: Endpoint
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.llm import LLMClient

    client = LLMClient(http, endpoint, timeout_seconds=0.2, max_retries=0, backoff_seconds=0.01)
    llm.script(delay(1.0, text("太迟了")))

    with pytest.raises(LLMError) as raised:
        await client.complete(question())

    assert raised.value.kind == "timeout"


async def test_dropped_connection_is_retried(llm: FakeOpenAI, llm_client: LLMClient) -> None:
    llm.script(drop(), text("好了"))

    completion = await llm_client.complete(question())

    assert completion.message.text == "好了"
    assert len(llm.chat_requests) == 2


@contextlib.asynccontextmanager
async def server_resetting_first_connection() -> AsyncIterator[str]:
    """A server that resets the first connection after reading the request (as a crashing
    proxy does) and answers later ones with a normal completion. Yields its base URL."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, served: Served):
        await read_request(reader, served)
        if served.connections == 1:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return
        writer.write(ok(completion_json("好了"), b"Connection: close"))
        await writer.drain()

    async with serving(answer) as served:
        yield served.base_url


async def test_connection_reset_is_retried(http: httpx.AsyncClient) -> None:
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient

    # given a server whose first connection is reset by peer
    async with server_resetting_first_connection() as base_url:
        client = LLMClient(http, Endpoint(base_url, "", MODEL), backoff_seconds=0.01)
        # when a completion is requested
        completion = await client.complete(question())
    # then the client tried again, like it does for a closed connection
    assert completion.message.text == "好了"


async def test_unreachable_server_raises_unreachable(http: httpx.AsyncClient) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient

    with FakeOpenAI() as stopped:
        base_url = stopped.base_url
    client = LLMClient(http, Endpoint(base_url, "", MODEL), max_retries=1, backoff_seconds=0.01)

    with pytest.raises(LLMError) as raised:
        await client.complete(question())

    assert raised.value.kind == "unreachable"


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    "reply",
    [
        raw(200, "this is not json"),
        raw(200, '{"id": "chatcmpl-1", "object": "chat.completion"}'),
        raw(200, '{"choices": []}'),
        raw(200, completion_body({"role": "assistant", "content": ["a", "b"]})),
        raw(200, "<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
        raw(200, b"\xff\xfe not utf-8", None),
    ],
    ids=["not-json", "no-choices", "empty-choices", "list-content", "html", "binary"],
)
async def test_unusable_body_raises_garbage(
    llm: FakeOpenAI, llm_client: LLMClient, reply: Any
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    llm.script(reply)

    with pytest.raises(LLMError) as raised:
        await llm_client.complete(question())

    assert raised.value.kind == "garbage"


@pytest.mark.parametrize(
    "reply",
    [text(""), text("   \n"), text("<think>只在想，没说话</think>")],
    ids=["empty", "blank", "only-thinking"],
)
async def test_reply_without_content_or_tool_calls_raises_empty(
    llm: FakeOpenAI, llm_client: LLMClient, reply: Any
) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    llm.script(reply)

    with pytest.raises(LLMError) as raised:
        await llm_client.complete(question())

    assert raised.value.kind == "empty"


async def test_context_length_400_raises_context_length_error(
    http: httpx.AsyncClient, sent_bodies: list[bytes]
) -> None:
    from nonebot_plugin_aimemory.engine.errors import ContextLengthError
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient

    # given a server whose context window is smaller than the request
    with FakeOpenAI(context_limit_tokens=5) as small:
        client = LLMClient(http, Endpoint(small.base_url, "", MODEL), backoff_seconds=0.01)
        # when a completion is requested
        with pytest.raises(ContextLengthError) as raised:
            await client.complete(question())
    # then it is reported as such, once, without retrying
    assert raised.value.status == 400
    assert len(sent_bodies) == 1


async def test_other_400_is_a_plain_http_error(llm: FakeOpenAI, llm_client: LLMClient) -> None:
    from nonebot_plugin_aimemory.engine.errors import ContextLengthError, LLMError

    llm.script(error(400, "Invalid value for 'temperature'."), text("不会用到"))

    with pytest.raises(LLMError) as raised:
        await llm_client.complete(question())

    assert not isinstance(raised.value, ContextLengthError)
    assert (raised.value.kind, raised.value.status) == ("http", 400)
    assert llm.pending == 1


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(
            error(400, "Range of max_tokens should be [1, 8192]"), id="dashscope-max-tokens"
        ),
        pytest.param(error(400, "Invalid value for 'temperature'."), id="bad-parameter"),
    ],
)
async def test_a_400_about_something_else_is_not_a_context_length_error(
    llm: FakeOpenAI, llm_client: LLMClient, reply: ErrorReply
) -> None:
    from nonebot_plugin_aimemory.engine.errors import ContextLengthError, LLMError

    # given a bad request that shrinking the history would not fix
    llm.script(reply)
    # when a completion is requested
    with pytest.raises(LLMError) as raised:
        await llm_client.complete(question())
    # then it is a plain HTTP error, so the turn does not compress for nothing
    assert not isinstance(raised.value, ContextLengthError)
    assert (raised.value.kind, raised.value.status) == ("http", 400)


LLAMA_CPP_OVERFLOW_500 = (
    '{"error":{"code":500,"message":"the request exceeds the available context size. '
    'try increasing the context size or enable context shift",'
    '"type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}'
)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(LLAMA_CPP_OVERFLOW_500, id="exceed-context-size"),
        pytest.param(
            '{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}',
            id="context-size-exceeded",
        ),
    ],
)
async def test_a_llama_cpp_overflow_sent_as_500_is_a_context_error_and_not_retried(
    llm: FakeOpenAI, llm_client: LLMClient, body: str
) -> None:
    from nonebot_plugin_aimemory.engine.errors import ContextLengthError

    # given llama.cpp's overflow answer with a 500 status (some versions send it so)
    llm.script(raw(500, body), text("不会用到"))
    # when a completion is requested
    with pytest.raises(ContextLengthError):
        await llm_client.complete(question())
    # then the identical request is not sent again as if the server had hiccupped
    assert len(llm.chat_requests) == 1
