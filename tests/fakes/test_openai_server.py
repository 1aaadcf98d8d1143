"""Tests of the fake OpenAI-compatible server used by the rest of the suite."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import (
    CHAT_PATH,
    EMBEDDING_DIM,
    MISSING_TOOL_RESPONSE_MESSAGE,
    ORPHAN_TOOL_MESSAGE,
    SUCCESSIVE_MESSAGES_MESSAGE,
    FakeOpenAI,
    cosine,
    delay,
    drop,
    embed_text,
    error,
    estimate_tokens,
    raw,
    text,
    tool_calls,
    validate_chat_request,
)

USER = {"role": "user", "content": "hello"}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def client(llm: FakeOpenAI) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=llm.base_url, timeout=2.0) as http:
        yield http


def chat(client: httpx.Client, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    return client.post("/chat/completions", json={"model": "m", "messages": messages, **extra})


def assistant_calls(*ids: str) -> dict[str, Any]:
    calls = [
        {"id": i, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        for i in ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def tool_result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "sunny"}


def error_message(response: httpx.Response) -> str:
    payload = response.json()
    assert payload["error"]["type"] == "invalid_request_error"
    return payload["error"]["message"]


def test_text_reply_is_returned_with_computed_usage(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(text("hi there"))
    messages = [{"role": "system", "content": "be nice"}, USER]
    response = chat(client, messages)
    assert response.status_code == 200
    payload = response.json()
    assert payload["object"] == "chat.completion"
    assert payload["id"] == "chatcmpl-1"
    assert payload["model"] == "m"
    choice = payload["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "hi there"}
    assert choice["finish_reason"] == "stop"
    prompt = estimate_tokens(messages)
    assert payload["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": len("hi there") // 3 + 1,
        "total_tokens": prompt + len("hi there") // 3 + 1,
    }


def test_usage_none_omits_usage_field(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(text("x", usage=None))
    assert "usage" not in chat(client, [USER]).json()


def test_explicit_usage_and_reasoning_are_sent(llm: FakeOpenAI, client: httpx.Client) -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    llm.script(text("x", usage=usage, reasoning="thinking", finish_reason="length"))
    payload = chat(client, [USER]).json()
    assert payload["usage"] == usage
    assert payload["choices"][0]["message"]["reasoning_content"] == "thinking"
    assert payload["choices"][0]["finish_reason"] == "length"


def test_default_responder_echoes_last_user_text(llm: FakeOpenAI, client: httpx.Client) -> None:
    parts = [{"type": "text", "text": "look "}, {"type": "text", "text": "here"}]
    response = chat(client, [{"role": "user", "content": parts}])
    assert response.json()["choices"][0]["message"]["content"] == "ECHO: look here"


def test_custom_responder_is_used_when_queue_empty(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.responder = lambda body: text(f"{len(body['messages'])} messages")
    assert chat(client, [USER]).json()["choices"][0]["message"]["content"] == "1 messages"


def test_scripted_replies_are_fifo(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(text("one"), text("two"))
    contents = [chat(client, [USER]).json()["choices"][0]["message"]["content"] for _ in "abc"]
    assert contents == ["one", "two", "ECHO: hello"]
    assert llm.pending == 0


def test_orphan_tool_message_is_rejected(client: httpx.Client) -> None:
    response = chat(client, [USER, {"role": "assistant", "content": "ok"}, tool_result("c1")])
    assert response.status_code == 400
    assert error_message(response) == ORPHAN_TOOL_MESSAGE


def test_duplicate_tool_response_is_rejected() -> None:
    messages = [USER, assistant_calls("c1"), tool_result("c1"), tool_result("c1")]
    assert validate_chat_request({"model": "m", "messages": messages}) == ORPHAN_TOOL_MESSAGE


def test_missing_response_for_one_of_two_parallel_calls_is_rejected(
    client: httpx.Client,
) -> None:
    messages = [
        USER,
        assistant_calls("c1", "c2"),
        tool_result("c1"),
        {"role": "user", "content": "?"},
    ]
    response = chat(client, messages)
    assert response.status_code == 400
    assert error_message(response) == MISSING_TOOL_RESPONSE_MESSAGE + "c2"


def test_system_message_not_first_is_rejected(client: httpx.Client) -> None:
    response = chat(client, [USER, {"role": "system", "content": "late"}])
    assert response.status_code == 400
    assert error_message(response) == "System message must be at the beginning."


def test_first_non_system_message_must_be_user(client: httpx.Client) -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "assistant", "content": "hi"}, USER]
    response = chat(client, messages)
    assert response.status_code == 400
    assert error_message(response) == "The first non-system message must be a user message."


def test_successive_user_messages_are_rejected(client: httpx.Client) -> None:
    response = chat(client, [USER, USER])
    assert response.status_code == 400
    assert SUCCESSIVE_MESSAGES_MESSAGE in error_message(response)


def test_successive_assistant_messages_are_rejected() -> None:
    assistant = {"role": "assistant", "content": "a"}
    problem = validate_chat_request({"model": "m", "messages": [USER, assistant, assistant]})
    assert problem is not None
    assert SUCCESSIVE_MESSAGES_MESSAGE in problem


def test_successive_users_allowed_without_strict_alternation() -> None:
    body = {"model": "m", "messages": [USER, USER]}
    assert validate_chat_request(body, strict_alternation=False) is None


def test_unknown_role_and_bad_content_are_rejected() -> None:
    assert validate_chat_request({"model": "m", "messages": [{"role": "bot", "content": "x"}]})
    assert validate_chat_request({"model": "m", "messages": [{"role": "user", "content": 3}]})
    assert validate_chat_request({"model": "m", "messages": []})
    assert validate_chat_request({"messages": [USER]})


def test_invalid_tool_definition_is_rejected() -> None:
    bad = {"type": "function", "function": {"name": "has space"}}
    assert validate_chat_request({"model": "m", "messages": [USER], "tools": [bad]})
    assert (
        validate_chat_request({"model": "m", "messages": [USER], "tools": [WEATHER_TOOL]}) is None
    )


def test_valid_tool_round_trip_is_accepted(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(tool_calls(("get_weather", {"city": "北京"}), ("get_weather", "{broken")))
    first = chat(client, [USER], tools=[WEATHER_TOOL]).json()["choices"][0]
    assert first["finish_reason"] == "tool_calls"
    calls = first["message"]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_1", "call_2"]
    assert calls[0]["function"] == {"name": "get_weather", "arguments": '{"city": "北京"}'}
    assert calls[1]["function"]["arguments"] == "{broken"
    history = [USER, first["message"], tool_result("call_1"), tool_result("call_2")]
    second = chat(client, history, tools=[WEATHER_TOOL])
    assert second.status_code == 200
    assert llm.last_messages() == history


def test_bad_json_is_rejected(client: httpx.Client) -> None:
    response = client.post("/chat/completions", content=b"{not json")
    assert response.status_code == 400
    assert "parse the JSON" in error_message(response)


def send_cut_off(port: int, body: bytes, sent_bytes: int) -> bytes:
    """POST a chat request's head and its body's first `sent_bytes`, then stop sending, as a
    client whose call was cancelled; returns whatever the server answers before closing."""
    head = (
        f"POST {CHAT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=5.0) as sock:
        sock.sendall(head.encode() + body[:sent_bytes])
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("sent_bytes", [0, 20])
def test_request_cut_off_before_its_body_ends_is_recorded_unanswered(
    llm: FakeOpenAI, client: httpx.Client, sent_bytes: int
) -> None:
    # given: a valid chat request whose client goes away after its head and part of its
    # body (a background call stopped for a member's turn, engine/model_traffic.py)
    body = json.dumps({"model": "m", "messages": [USER]}).encode()

    # when
    answer = send_cut_off(llm.port, body, sent_bytes)

    # then: like a real server, the fake neither validates nor answers the incomplete
    # request: it is recorded with no status, not as a rejection, and the fake serves on
    assert answer == b""
    [record] = llm.wait_for_requests(1)
    assert (record.path, record.status, record.body) == (CHAT_PATH, 0, None)
    assert chat(client, [USER]).status_code == 200
    assert llm.chat_requests == [{"model": "m", "messages": [USER]}]


def test_scripted_error_is_sent_with_headers(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(error(429, "slow down", code="rate_limit_exceeded", headers={"Retry-After": "1"}))
    response = chat(client, [USER])
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"]["message"] == "slow down"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    assert llm.chat_requests == [{"model": "m", "messages": [USER]}]


def test_scripted_raw_body_is_sent_verbatim(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(raw(502, "<html>Bad Gateway</html>", content_type="text/html"))
    response = chat(client, [USER])
    assert response.status_code == 502
    assert response.text == "<html>Bad Gateway</html>"
    assert response.headers["content-type"] == "text/html"


def test_scripted_drop_closes_connection(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(drop())
    with pytest.raises(httpx.RemoteProtocolError):
        chat(client, [USER])
    assert chat(client, [USER]).status_code == 200


def test_scripted_delay_waits_before_reply(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(delay(0.2, text("late")))
    started = time.monotonic()
    response = chat(client, [USER])
    assert time.monotonic() - started >= 0.2
    assert response.json()["choices"][0]["message"]["content"] == "late"


def test_delay_longer_than_client_timeout_times_out(llm: FakeOpenAI) -> None:
    llm.script(delay(0.5, text("late")))
    with httpx.Client(base_url=llm.base_url, timeout=0.1) as http, pytest.raises(httpx.ReadTimeout):
        chat(http, [USER])


def test_invalid_request_does_not_consume_scripted_reply(
    llm: FakeOpenAI, client: httpx.Client
) -> None:
    llm.script(text("kept"))
    assert chat(client, [USER, USER]).status_code == 400
    assert llm.pending == 1
    assert llm.chat_requests == []
    assert llm.requests[0].status == 400
    assert chat(client, [USER]).json()["choices"][0]["message"]["content"] == "kept"


def test_api_key_is_required() -> None:
    with FakeOpenAI(api_key="sk-test") as llm, httpx.Client(base_url=llm.base_url) as http:
        missing = chat(http, [USER])
        wrong = http.post(
            "/chat/completions",
            json={"model": "m", "messages": [USER]},
            headers={"Authorization": "Bearer nope"},
        )
        good = http.post(
            "/chat/completions",
            json={"model": "m", "messages": [USER]},
            headers={"Authorization": "Bearer sk-test"},
        )
    assert missing.status_code == 401
    assert wrong.status_code == 401
    assert wrong.json()["error"]["code"] == "invalid_api_key"
    assert good.status_code == 200


def test_context_length_exceeded() -> None:
    messages = [{"role": "user", "content": "x" * 300}]
    tokens = estimate_tokens(messages)
    with FakeOpenAI(context_limit_tokens=50) as llm, httpx.Client(base_url=llm.base_url) as http:
        response = chat(http, messages)
        assert chat(http, [USER]).status_code == 200
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": (
            f"This model's maximum context length is 50 tokens. However, your messages "
            f"resulted in {tokens} tokens."
        ),
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }


def test_embeddings_are_deterministic_and_normalised(llm: FakeOpenAI, client: httpx.Client) -> None:
    body = {"model": "emb", "input": ["我喜欢猫", "I like cats"]}
    first = client.post("/embeddings", json=body).json()
    second = client.post("/embeddings", json=body).json()
    assert first["data"] == second["data"]
    assert first["object"] == "list"
    assert first["model"] == "emb"
    vector = first["data"][1]["embedding"]
    assert vector == embed_text("I like cats")
    assert len(vector) == EMBEDDING_DIM
    assert sum(v * v for v in vector) == pytest.approx(1.0)
    assert len(llm.embedding_requests) == 2


def test_similar_texts_are_closer_than_unrelated() -> None:
    base = embed_text("my cat likes to sleep on the sofa")
    similar = embed_text("my cat likes sleeping on the sofa")
    unrelated = embed_text("quarterly tax report deadline")
    assert cosine(base, similar) > 0.8
    assert cosine(base, similar) > cosine(base, unrelated) + 0.3


def test_embeddings_fail_returns_500(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.embeddings_fail = True
    response = client.post("/embeddings", json={"model": "emb", "input": "hi"})
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"


def test_models_and_unknown_path(client: httpx.Client) -> None:
    assert client.get("/models").json()["data"][0]["id"] == "fake-model"
    missing = client.post("/nope", json={})
    assert missing.status_code == 404
    assert "Invalid URL" in missing.json()["error"]["message"]


def test_streaming_reply_is_sent_as_sse(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(text("a fairly long streamed answer"))
    response = chat(client, [USER], stream=True, stream_options={"include_usage": True})
    assert response.headers["content-type"] == "text/event-stream"
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert content == "a fairly long streamed answer"
    assert chunks[-1]["usage"]["completion_tokens"] > 0


def test_wait_for_requests_and_reset(llm: FakeOpenAI, client: httpx.Client) -> None:
    llm.script(text("a"), text("b"))
    chat(client, [USER])
    records = llm.wait_for_requests(1, timeout=1.0)
    assert records[0].status == 200
    assert records[0].headers["content-type"] == "application/json"
    llm.reset()
    assert llm.requests == []
    assert llm.pending == 0
    with pytest.raises(TimeoutError):
        llm.wait_for_requests(1, timeout=0.05)
