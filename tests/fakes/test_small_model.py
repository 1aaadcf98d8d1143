"""The small-model responders: each misbehaves only while tools are allowed, answers a
forced or bare request with text (or an empty message when told to), and what it writes
is what the real model wrote."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import (
    FakeOpenAI,
    RawReply,
    Reply,
    TextReply,
    ToolCallsReply,
)
from tests.fakes.small_model import (
    ANSWER,
    INVENTED_TOOL,
    CallsAsText,
    EmptyAfterTools,
    EmptyAnswerer,
    FakeToolResponse,
    RepeatingCaller,
    TextCallStyle,
    ToolInventor,
    ToolLooper,
    calls_this_turn,
    results_this_turn,
    situation,
)

TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("memory_save", "memory_search")
]
SAVE = {"content": "小红下周三去杭州出差"}


def request(
    messages: list[dict[str, Any]], *, tools: bool = True, tool_choice: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "small", "messages": messages}
    if tools:
        body["tools"] = TOOLS
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    return body


def asked(question: str = "记住：我下周三去杭州出差") -> list[dict[str, Any]]:
    return [{"role": "system", "content": "你是小忆。"}, {"role": "user", "content": question}]


def after_round(
    messages: list[dict[str, Any]], name: str, arguments: dict[str, Any], result: str
) -> list[dict[str, Any]]:
    """`messages` followed by one call the model made and its result."""
    call_id = f"call_{len(messages)}"
    function = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
    call = {"id": call_id, "type": "function", "function": function}
    return [
        *messages,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def called(reply: Reply) -> list[tuple[str, Any]]:
    """The (name, parsed arguments) of a tool-calls reply."""
    assert isinstance(reply, ToolCallsReply), reply
    return [(name, json.loads(arguments)) for name, arguments in reply.calls]


def said(reply: Reply) -> str | None:
    """The content of a text reply (raw completions included)."""
    if isinstance(reply, TextReply):
        return reply.content
    assert isinstance(reply, RawReply), reply
    (choice,) = json.loads(reply.body)["choices"]
    assert "tool_calls" not in choice["message"]
    return choice["message"]["content"]


# --------------------------------------------------------------------------- shared


@pytest.mark.parametrize(
    ("tools", "tool_choice", "expected"),
    [
        (True, None, "tools"),
        (True, "auto", "tools"),
        (True, "none", "forced"),
        (False, None, "bare"),
    ],
)
def test_a_request_is_told_apart_by_its_tools_and_tool_choice(
    tools: bool, tool_choice: str | None, expected: str
) -> None:
    assert situation(request(asked(), tools=tools, tool_choice=tool_choice)) == expected


def test_only_the_calls_and_results_after_the_last_user_message_count_as_this_turn() -> None:
    earlier = after_round(asked("第一句"), "memory_search", {"query": "旧"}, "旧结果")
    messages = after_round(
        [*earlier, {"role": "assistant", "content": "好"}, {"role": "user", "content": "第二句"}],
        "memory_search",
        {"query": "新"},
        "新结果",
    )

    assert [c["function"]["arguments"] for c in calls_this_turn(messages)] == ['{"query": "新"}']
    assert results_this_turn(messages) == ["新结果"]


@pytest.mark.parametrize(
    "model",
    [ToolLooper(), RepeatingCaller(), ToolInventor(), EmptyAfterTools(), CallsAsText()],
    ids=lambda model: type(model).__name__,
)
def test_every_responder_answers_a_forced_or_bare_request_with_its_answer(model) -> None:
    forced = model(request(asked(), tool_choice="none"))
    bare = model(request(asked(), tools=False))

    assert said(forced) == said(bare) == ANSWER
    assert model.seen == ["forced", "bare"]


def test_a_responder_told_to_stay_empty_answers_forced_and_bare_requests_with_nothing() -> None:
    model = ToolLooper(empty_when_forced=True, empty_without_tools=True, empty_content=None)

    assert said(model(request(asked(), tool_choice="none"))) is None
    assert said(model(request(asked(), tools=False))) is None


def test_a_server_that_ignores_tool_choice_lets_the_model_call_when_forced() -> None:
    model = ToolLooper(obeys_tool_choice=False)

    reply = model(request(asked(), tool_choice="none"))

    assert called(reply) == [("memory_search", {"query": "出差"})]
    assert said(model(request(asked(), tools=False))) == ANSWER


# --------------------------------------------------------------------------- misbehaviours


def test_the_looper_searches_again_with_a_new_query_after_every_result() -> None:
    model = ToolLooper()
    messages = asked()
    queries = []
    for _ in range(6):
        ((name, arguments),) = called(model(request(messages)))
        assert name == "memory_search"
        queries.append(arguments["query"])
        messages = after_round(messages, name, arguments, "没有找到相关记忆。")

    assert len(set(queries)) == 6
    assert model.seen == ["tools"] * 6


def test_the_looper_only_calls_a_tool_the_request_offers() -> None:
    with pytest.raises(ValueError, match="read_recent_chat"):
        ToolLooper(tool="read_recent_chat")(request(asked()))


def test_the_repeater_writes_the_same_arguments_differently_each_time() -> None:
    model = RepeatingCaller()
    first = model(request(asked()))
    again = model(request(after_round(asked(), "memory_save", model.arguments, "已保存")))

    assert called(first) == called(again) == [("memory_save", model.arguments)]
    assert isinstance(first, ToolCallsReply)
    assert isinstance(again, ToolCallsReply)
    assert first.calls[0][1] != again.calls[0][1]


def test_the_inventor_calls_a_tool_the_request_does_not_offer_never_twice_alike() -> None:
    model = ToolInventor()
    first = called(model(request(asked("17 + 25 等于几"))))
    messages = after_round(asked("17 + 25 等于几"), *first[0], "错误：没有名为 math_add 的工具。")
    second = called(model(request(messages)))

    assert first[0][0] == second[0][0] == INVENTED_TOOL
    assert INVENTED_TOOL not in [t["function"]["name"] for t in TOOLS]
    assert first != second


@pytest.mark.parametrize("content", ["", None])
def test_empty_after_tools_calls_first_then_says_nothing_once_a_result_is_in(
    content: str | None,
) -> None:
    model = EmptyAfterTools(name="memory_save", arguments=SAVE, empty_content=content)

    first = model(request(asked()))
    after = model(request(after_round(asked(), "memory_save", SAVE, "已保存")))

    assert called(first) == [("memory_save", SAVE)]
    assert said(after) == content


def test_the_empty_answerer_says_nothing_while_tools_are_allowed() -> None:
    assert said(EmptyAnswerer()(request(asked()))) == ""


@pytest.mark.parametrize(
    ("style", "pattern"),
    [
        ("object", r'^\{"name": "memory_save", "arguments": \{"content": "[^"]+"\}\}$'),
        ("parameters", r'^\{"name": "memory_save", "parameters": \{"content": "[^"]+"\}\}$'),
        ("string_arguments", r'^\{"name": "memory_save", "arguments": "\{\\"content\\": .+"\}$'),
        ("tagged", r'^<tool_call>\n\{"name": "memory_save", .+\}\n</tool_call>$'),
        ("fenced", r'^```json\n\{"name": "memory_save", .+\}\n```$'),
        ("code", r'^memory_save\(\{"content": "[^"]+"\}\)$'),
        ("keywords", r'^memory_save\(content="[^"]+"\)$'),
    ],
)
def test_calls_as_text_writes_the_call_in_content_the_way_small_models_do(
    style: TextCallStyle, pattern: str
) -> None:
    model = CallsAsText(style=style)

    content = said(model(request(asked())))

    assert content == model.written
    assert re.match(pattern, content or ""), content


def test_calls_as_text_writes_several_calls_one_per_line() -> None:
    calls = (("memory_save", SAVE), ("memory_save", {"content": "小红喜欢草莓"}))
    model = CallsAsText(calls=calls)

    lines = (said(model(request(asked()))) or "").splitlines()

    assert [json.loads(line) for line in lines] == [
        {"name": name, "arguments": arguments} for name, arguments in calls
    ]


def test_calls_as_text_answers_once_a_result_is_in() -> None:
    model = CallsAsText(answer="记住啦")

    assert said(model(request(after_round(asked(), "memory_save", SAVE, "已保存")))) == "记住啦"


def test_the_fake_tool_response_is_the_whole_reply_or_follows_what_was_said() -> None:
    alone = said(FakeToolResponse()(request(asked())))
    after_words = said(FakeToolResponse(said="记住啦！")(request(asked())))

    assert alone is not None
    assert re.fullmatch(r"<tool_response>\n\{.+\}\n</tool_response>", alone)
    assert after_words == f"记住啦！\n{alone}"


# --------------------------------------------------------------------------- over HTTP


@pytest.fixture
def client() -> Iterator[tuple[FakeOpenAI, httpx.Client]]:
    with (
        FakeOpenAI() as server,
        httpx.Client(base_url=server.base_url, timeout=2.0, trust_env=False) as http,
    ):
        yield server, http


@pytest.mark.parametrize("content", ["", None])
def test_an_empty_message_reaches_the_client_with_neither_text_nor_tool_calls(
    client: tuple[FakeOpenAI, httpx.Client], content: str | None
) -> None:
    server, http = client
    server.responder = EmptyAnswerer(empty_content=content)

    response = http.post("/chat/completions", json=request(asked()))

    assert response.status_code == 200
    message = response.json()["choices"][0]["message"]
    assert message["content"] == content
    assert not message.get("tool_calls")


def test_a_looper_behind_the_server_gets_each_round_validated(
    client: tuple[FakeOpenAI, httpx.Client],
) -> None:
    server, http = client
    server.responder = ToolLooper()
    messages = asked()
    for _ in range(3):
        response = http.post("/chat/completions", json=request(messages))
        (call,) = response.json()["choices"][0]["message"]["tool_calls"]
        result = {"role": "tool", "tool_call_id": call["id"], "content": "没有找到相关记忆。"}
        messages = [*messages, {"role": "assistant", "content": None, "tool_calls": [call]}, result]

    forced = http.post("/chat/completions", json=request(messages, tool_choice="none"))

    assert forced.json()["choices"][0]["message"] == {"role": "assistant", "content": ANSWER}
    assert len(server.chat_requests) == 4
