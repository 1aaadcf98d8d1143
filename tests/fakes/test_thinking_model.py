"""The fake server's thinking-model mode: DeepSeek's `reasoning_content` and its 400 when the
reasoning of a tool-call exchange is not passed back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import (
    REASONING_NOT_PASSED_BACK_MESSAGE,
    FakeOpenAI,
    text,
    tool_calls,
)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(thinking_model=True) as server:
        yield server


@pytest.fixture
def client(llm: FakeOpenAI) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=llm.base_url, timeout=2.0, trust_env=False) as http:
        yield http


def chat(client: httpx.Client, messages: list[dict[str, Any]]) -> httpx.Response:
    body = {"model": "m", "messages": messages, "tools": [WEATHER_TOOL]}
    return client.post("/chat/completions", json=body)


def tool_exchange(reasoning: str | None, final_reasoning: str | None) -> list[dict[str, Any]]:
    """A user asks, the model calls get_weather, gets the result and answers."""
    call: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    answer: dict[str, Any] = {"role": "assistant", "content": "晴"}
    if reasoning is not None:
        call["reasoning_content"] = reasoning
    if final_reasoning is not None:
        answer["reasoning_content"] = final_reasoning
    result = {"role": "tool", "tool_call_id": "call_1", "content": "晴"}
    return [{"role": "user", "content": "天气？"}, call, result, answer]


def test_thinking_model_gives_every_completion_reasoning_content(
    llm: FakeOpenAI, client: httpx.Client
) -> None:
    llm.script(text("你好"), tool_calls(("get_weather", {})))

    plain = chat(client, [{"role": "user", "content": "hi"}]).json()
    calling = chat(client, [{"role": "user", "content": "天气？"}]).json()

    assert plain["choices"][0]["message"]["reasoning_content"]
    assert calling["choices"][0]["message"]["reasoning_content"]


def test_thinking_model_answers_deepseeks_400_when_a_tool_call_lost_its_reasoning(
    client: httpx.Client,
) -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "晴"}

    response = chat(client, [{"role": "user", "content": "天气？"}, call, result])

    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": REASONING_NOT_PASSED_BACK_MESSAGE,
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }


def test_thinking_model_wants_the_reasoning_of_an_earlier_tool_exchange_too(
    client: httpx.Client,
) -> None:
    history = tool_exchange("想查天气", final_reasoning=None)

    response = chat(client, [*history, {"role": "user", "content": "谢谢"}])

    assert response.status_code == 400
    assert response.json()["error"]["message"] == REASONING_NOT_PASSED_BACK_MESSAGE


def test_thinking_model_accepts_a_tool_exchange_sent_back_whole(client: httpx.Client) -> None:
    history = tool_exchange("想查天气", final_reasoning="查到了")

    response = chat(client, [*history, {"role": "user", "content": "谢谢"}])

    assert response.status_code == 200


def test_thinking_model_needs_no_reasoning_of_an_exchange_without_tool_calls(
    client: httpx.Client,
) -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "你好"}]

    response = chat(client, [*history, {"role": "user", "content": "再见"}])

    assert response.status_code == 200


def test_thinking_model_counts_an_empty_reasoning_as_missing(client: httpx.Client) -> None:
    history = tool_exchange("", final_reasoning="查到了")

    response = chat(client, [*history, {"role": "user", "content": "谢谢"}])

    assert response.status_code == 400


def test_thinking_model_checks_only_requests_that_carry_tools(client: httpx.Client) -> None:
    history = tool_exchange(None, final_reasoning=None)
    body = {"model": "m", "messages": [*history, {"role": "user", "content": "谢谢"}]}

    response = client.post("/chat/completions", json=body)

    assert response.status_code == 200


def test_plain_fake_never_asks_for_reasoning(client: httpx.Client, llm: FakeOpenAI) -> None:
    llm.thinking_model = False
    history = tool_exchange(None, final_reasoning=None)

    response = chat(client, [*history, {"role": "user", "content": "谢谢"}])

    assert response.status_code == 200
    assert "reasoning_content" not in response.json()["choices"][0]["message"]
