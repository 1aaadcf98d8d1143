"""The fake server refuses what DeepSeek refuses about tool-call ids, so engine tests that
pass against it would pass against the real API."""

from __future__ import annotations

from typing import Any

from tests.fakes.openai_server import (
    DUPLICATE_TOOL_CALL_ID_MESSAGE,
    MISSING_TOOL_RESPONSE_MESSAGE,
    validate_chat_request,
)

USER = {"role": "user", "content": "数两次"}


def call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "count", "arguments": "{}"}}


def answer(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "content": "1", "tool_call_id": call_id}


def request(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "messages": [USER, *messages]}


def test_one_id_for_two_calls_answered_once_is_refused_as_a_duplicate() -> None:
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("a"), call("a")]}

    problem = validate_chat_request(request(assistant, answer("a")))

    assert problem is not None
    assert problem.startswith(DUPLICATE_TOOL_CALL_ID_MESSAGE)


def test_one_id_for_two_calls_answered_twice_is_refused() -> None:
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("a"), call("a")]}

    problem = validate_chat_request(request(assistant, answer("a"), answer("a")))

    assert problem is not None
    assert problem.startswith(DUPLICATE_TOOL_CALL_ID_MESSAGE)


def test_an_unanswered_call_is_refused() -> None:
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]}

    problem = validate_chat_request(request(assistant, answer("a")))

    assert problem == MISSING_TOOL_RESPONSE_MESSAGE + "b"


def test_distinct_ids_each_answered_once_are_accepted() -> None:
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("a"), call("a_2")]}

    assert validate_chat_request(request(assistant, answer("a"), answer("a_2"))) is None
