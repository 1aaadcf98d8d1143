"""In-process fake of the OpenAI HTTP API (chat completions, embeddings) for tests and benchmarks.

Start it with ``with FakeOpenAI() as llm:`` and point a client at ``llm.base_url``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import math
import re
import selectors
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

__all__ = [
    "DUPLICATE_TOOL_CALL_ID_MESSAGE",
    "EMBEDDING_DIM",
    "FAKE_MODEL",
    "MISSING_TOOL_RESPONSE_MESSAGE",
    "ORPHAN_TOOL_MESSAGE",
    "REASONING_NOT_PASSED_BACK_MESSAGE",
    "SUCCESSIVE_MESSAGES_MESSAGE",
    "ContentFilter",
    "DelayReply",
    "DropReply",
    "ErrorReply",
    "FakeOpenAI",
    "HeldReply",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "TextReply",
    "ToolCallsReply",
    "check_reasoning_passed_back",
    "client_gone_check",
    "cosine",
    "dashscope_refusal",
    "deepseek_bad_key",
    "deepseek_no_balance",
    "deepseek_refusal",
    "delay",
    "drop",
    "echo_responder",
    "embed_text",
    "error",
    "error_in_body",
    "estimate_tokens",
    "held",
    "last_user_text",
    "raw",
    "reported_usage",
    "text",
    "tool_calls",
    "validate_chat_request",
]

EMBEDDING_DIM = 64
FAKE_MODEL = "fake-model"
CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"

ORPHAN_TOOL_MESSAGE = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
MISSING_TOOL_RESPONSE_MESSAGE = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)
# DeepSeek's 400 when one tool_call id appears twice (checked here within one assistant
# message; DeepSeek also refuses an id repeated in a later round).
DUPLICATE_TOOL_CALL_ID_MESSAGE = "Duplicate value for 'tool_call_id' of "
SUCCESSIVE_MESSAGES_MESSAGE = "does not support successive user or assistant messages"
SYSTEM_NOT_FIRST_MESSAGE = "System message must be at the beginning."
FIRST_NOT_USER_MESSAGE = "The first non-system message must be a user message."
# DeepSeek's 400 in thinking mode (see `check_reasoning_passed_back`).
REASONING_NOT_PASSED_BACK_MESSAGE = (
    "The `reasoning_content` in the thinking mode must be passed back to the API."
)

_ROLES = ("system", "user", "assistant", "tool")
_TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_STREAM_PIECE = 8

# A reply's `usage` object as sent (see `reported_usage` for cached prompt tokens).
UsageSpec: TypeAlias = dict[str, Any] | Literal["auto"] | None
# (message, param, code) of an OpenAI-style invalid_request_error.
_Problem: TypeAlias = tuple[str, str | None, str | None]


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class TextReply:
    """A normal assistant completion with text content."""

    content: str
    usage: UsageSpec = "auto"
    reasoning: str | None = None
    finish_reason: str = "stop"


@dataclass(frozen=True)
class ToolCallsReply:
    """An assistant completion requesting tool calls; ``calls`` holds (name, raw arguments)."""

    calls: tuple[tuple[str, str], ...]
    content: str | None = None
    usage: UsageSpec = "auto"
    reasoning: str | None = None


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with OpenAI's error JSON body."""

    status: int
    message: str
    code: str | None = None
    type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RawReply:
    """Exactly these bytes with this status (garbage, HTML pages, empty bodies...)."""

    status: int
    body: bytes
    content_type: str | None = "application/json"


@dataclass(frozen=True)
class DelayReply:
    """Sleep in the server thread, then send ``then``."""

    seconds: float
    then: Reply


@dataclass(frozen=True)
class HeldReply:
    """Wait in the server thread until the test opens ``gate`` (at most
    HOLD_TIMEOUT_SECONDS), then send ``then``: a call in flight for exactly as long as the
    test needs, however slow the machine."""

    gate: threading.Event
    then: Reply


@dataclass(frozen=True)
class DropReply:
    """Close the connection without sending any response."""


Reply: TypeAlias = (
    TextReply | ToolCallsReply | ErrorReply | RawReply | DelayReply | HeldReply | DropReply
)
HOLD_TIMEOUT_SECONDS = 30.0


def text(
    content: str,
    *,
    usage: UsageSpec = "auto",
    reasoning: str | None = None,
    finish_reason: str = "stop",
) -> TextReply:
    """Reply with a text completion; ``usage="auto"`` computes it, ``usage=None`` omits it."""
    return TextReply(content, usage=usage, reasoning=reasoning, finish_reason=finish_reason)


def tool_calls(
    *calls: tuple[str, dict[str, Any] | str],
    content: str | None = None,
    usage: UsageSpec = "auto",
    reasoning: str | None = None,
) -> ToolCallsReply:
    """Reply with tool calls ``(name, args)``; dict args are JSON-dumped, str args sent raw."""
    if not calls:
        raise ValueError("tool_calls() needs at least one (name, arguments) pair")
    encoded = tuple(
        (name, args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))
        for name, args in calls
    )
    return ToolCallsReply(encoded, content=content, usage=usage, reasoning=reasoning)


def error(
    status: int,
    message: str = "Scripted error from FakeOpenAI.",
    code: str | None = None,
    headers: dict[str, str] | None = None,
    *,
    type: str | None = None,
) -> ErrorReply:
    """Reply with ``status`` and an OpenAI error body; ``type`` defaults from the status."""
    return ErrorReply(status, message, code=code, type=type, headers=dict(headers or {}))


def raw(status: int, body: bytes | str, content_type: str | None = "application/json") -> RawReply:
    """Reply with exactly ``body`` (str is UTF-8 encoded); ``content_type=None`` omits it."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    return RawReply(status, data, content_type)


def delay(seconds: float, then: Reply) -> DelayReply:
    """Sleep ``seconds`` in the server thread before sending ``then``."""
    return DelayReply(seconds, then)


def held(gate: threading.Event, then: Reply) -> HeldReply:
    """Answer ``then`` once the test sets ``gate``."""
    return HeldReply(gate, then)


def drop() -> DropReply:
    """Close the connection without answering."""
    return DropReply()


# --------------------------------------------------------------------------- helpers


def reported_usage(
    prompt: int,
    completion: int,
    *,
    cached: int = 0,
    style: Literal["openai", "deepseek"] = "openai",
) -> dict[str, Any]:
    """A completion's `usage` as a provider reports it, `cached` of the prompt tokens from
    its prompt cache: OpenAI-style in `prompt_tokens_details.cached_tokens`, DeepSeek's in
    `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if style == "deepseek":
        usage["prompt_cache_hit_tokens"] = cached
        usage["prompt_cache_miss_tokens"] = prompt - cached
    else:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


def estimate_tokens(messages: Any) -> int:
    """Rough token estimate of a messages list: JSON length // 3."""
    return len(json.dumps(messages, ensure_ascii=False)) // 3


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """Text of the last user message ("" if none); list content joins its text parts."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


# The connection of the request a handler thread is answering (see `client_gone_check`).
_ANSWERING = threading.local()


def client_gone_check() -> Callable[[], bool]:
    """For a responder that forwards a long request (bench/real_model_proxy.py): a check,
    callable from any thread, of whether the client of the request this thread answers has
    closed its connection, as llama.cpp's server checks every second to stop a request
    whose client hung up (a background call stepping aside for a member's turn)."""
    connection = getattr(_ANSWERING, "connection", None)
    if connection is None:
        return lambda: False
    return functools.partial(_closed_by_peer, connection)


def _closed_by_peer(connection: socket.socket) -> bool:
    # A request's body is read whole before the responder runs: the only thing the
    # client can still send is its end of the connection.
    try:
        return connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def echo_responder(body: dict[str, Any]) -> Reply:
    """Default responder: ``text("ECHO: " + <last user text>)``."""
    return text("ECHO: " + last_user_text(body.get("messages", [])))


@functools.lru_cache(maxsize=65536)
def _bigram_slot(bigram: str) -> tuple[int, float]:
    digest = hashlib.blake2b(bigram.encode("utf-8"), digest_size=4).digest()
    return digest[0] % EMBEDDING_DIM, 1.0 if digest[1] & 1 else -1.0


def embed_text(value: str) -> list[float]:
    """Deterministic L2-normalised 64-dim embedding from hashed character bigrams."""
    padded = f" {value.lower()} "
    vector = [0.0] * EMBEDDING_DIM
    for first, second in itertools.pairwise(padded):
        slot, sign = _bigram_slot(first + second)
        vector[slot] += sign
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two vectors."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _error_body(
    message: str,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _default_error_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    if status == 429:
        return "requests"
    return "invalid_request_error"


# --------------------------------------------------------------------------- validation


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _invalid_type(where: str, expected: str, value: Any) -> _Problem:
    message = (
        f"Invalid type for '{where}': expected {expected}, but got {_type_name(value)} instead."
    )
    return message, where, "invalid_type"


def _check_parts(where: str, parts: list[Any]) -> _Problem | None:
    if not parts:
        message = f"Invalid '{where}': empty array. Expected an array with minimum length 1."
        return message, where, "empty_array"
    for j, part in enumerate(parts):
        at = f"{where}[{j}]"
        if not isinstance(part, dict):
            return _invalid_type(at, "an object", part)
        kind = part.get("type")
        if kind == "text":
            if not isinstance(part.get("text"), str):
                return _invalid_type(f"{at}.text", "a string", part.get("text"))
        elif kind == "image_url":
            image = part.get("image_url")
            if not isinstance(image, dict) or not isinstance(image.get("url"), str):
                message = f"Invalid '{at}.image_url': expected an object with a string 'url'."
                return message, f"{at}.image_url", "invalid_value"
        else:
            message = f"Invalid value: {kind!r}. Supported values are: 'text' and 'image_url'."
            return message, f"{at}.type", "invalid_value"
    return None


def _check_tool_call(where: str, call: Any) -> _Problem | None:
    if not isinstance(call, dict):
        return _invalid_type(where, "an object", call)
    if not isinstance(call.get("id"), str) or not call["id"]:
        return (
            f"Missing required parameter: '{where}.id'.",
            f"{where}.id",
            "missing_required_parameter",
        )
    if call.get("type") != "function":
        message = f"Invalid value: {call.get('type')!r}. Supported values are: 'function'."
        return message, f"{where}.type", "invalid_value"
    function = call.get("function")
    if not isinstance(function, dict):
        return _invalid_type(f"{where}.function", "an object", function)
    if not isinstance(function.get("name"), str) or not function["name"]:
        return _invalid_type(f"{where}.function.name", "a string", function.get("name"))
    if not isinstance(function.get("arguments"), str):
        arguments = function.get("arguments")
        return _invalid_type(f"{where}.function.arguments", "a string", arguments)
    return None


def _check_message(i: int, message: Any) -> _Problem | None:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        return _invalid_type(where, "an object", message)
    role = message.get("role")
    if role not in _ROLES:
        text_ = (
            f"Invalid value: {role!r}. Supported values are: "
            "'system', 'user', 'assistant' and 'tool'."
        )
        return text_, f"{where}.role", "invalid_value"
    content = message.get("content")
    if role in ("system", "user"):
        if "content" not in message:
            return (
                f"Missing required parameter: '{where}.content'.",
                f"{where}.content",
                "missing_required_parameter",
            )
        if isinstance(content, list):
            return _check_parts(f"{where}.content", content)
        if not isinstance(content, str):
            return _invalid_type(f"{where}.content", "one of a string or array of objects", content)
        return None
    if role == "tool":
        if not isinstance(content, str):
            return _invalid_type(f"{where}.content", "a string", content)
        if not isinstance(message.get("tool_call_id"), str) or not message["tool_call_id"]:
            return (
                f"Missing required parameter: '{where}.tool_call_id'.",
                f"{where}.tool_call_id",
                "missing_required_parameter",
            )
        return None
    # assistant
    if content is not None and not isinstance(content, str):
        return _invalid_type(f"{where}.content", "a string or null", content)
    calls = message.get("tool_calls")
    if calls is None:
        if content is None:
            text_ = f"Invalid '{where}': an assistant message must have 'content' or 'tool_calls'."
            return text_, f"{where}.content", "missing_required_parameter"
        return None
    if not isinstance(calls, list):
        return _invalid_type(f"{where}.tool_calls", "an array", calls)
    if not calls:
        text_ = (
            f"Invalid '{where}.tool_calls': empty array. Expected an array with minimum length 1."
        )
        return text_, f"{where}.tool_calls", "empty_array"
    for j, call in enumerate(calls):
        problem = _check_tool_call(f"{where}.tool_calls[{j}]", call)
        if problem:
            return problem
    return None


def _check_tool_links(messages: list[dict[str, Any]]) -> _Problem | None:
    open_ids: list[str] | None = None  # ids of the assistant tool_calls block being answered
    answered: set[str] = set()

    def missing() -> _Problem | None:
        if open_ids is None:
            return None
        left = [call_id for call_id in open_ids if call_id not in answered]
        if not left:
            return None
        return MISSING_TOOL_RESPONSE_MESSAGE + ", ".join(left), "messages", None

    for i, message in enumerate(messages):
        if message["role"] == "tool":
            call_id = message["tool_call_id"]
            if open_ids is None or call_id not in open_ids or call_id in answered:
                return ORPHAN_TOOL_MESSAGE, f"messages.[{i}].role", None
            answered.add(call_id)
            continue
        problem = missing()
        if problem:
            return problem
        answered = set()
        calls = message.get("tool_calls") if message["role"] == "assistant" else None
        open_ids = [call["id"] for call in calls] if calls else None
        repeated = _first_repeated(open_ids or ())
        if repeated is not None:
            return f"{DUPLICATE_TOOL_CALL_ID_MESSAGE}{repeated} in message[{i}]", "messages", None
    return missing()


def _first_repeated(ids: Iterable[str]) -> str | None:
    seen: set[str] = set()
    for call_id in ids:
        if call_id in seen:
            return call_id
        seen.add(call_id)
    return None


def _check_alternation(messages: list[dict[str, Any]]) -> _Problem | None:
    previous: tuple[int, str] | None = None
    for i, message in enumerate(messages):
        role = message["role"]
        if previous and previous[1] == role and role in ("user", "assistant"):
            text_ = (
                f"This model {SUCCESSIVE_MESSAGES_MESSAGE} (messages[{previous[0]}] and "
                f"messages[{i}] in your input). You should interleave the user/assistant "
                "messages in the message sequence."
            )
            return text_, "messages", None
        previous = (i, role)
    return None


def _check_tools(tools: Any) -> _Problem | None:
    if not isinstance(tools, list):
        return _invalid_type("tools", "an array", tools)
    if not tools:
        text_ = "Invalid 'tools': empty array. Expected an array with minimum length 1."
        return text_, "tools", "empty_array"
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            return _invalid_type(where, "an object", tool)
        if tool.get("type") != "function":
            text_ = f"Invalid value: {tool.get('type')!r}. Supported values are: 'function'."
            return text_, f"{where}.type", "invalid_value"
        function = tool.get("function")
        if not isinstance(function, dict):
            return _invalid_type(f"{where}.function", "an object", function)
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME_RE.match(name):
            text_ = (
                f"Invalid '{where}.function.name': string does not match pattern. "
                f"Expected a string that matches the pattern '^[a-zA-Z0-9_-]{{1,64}}$'."
            )
            return text_, f"{where}.function.name", "invalid_value"
        if "description" in function and not isinstance(function["description"], str):
            return _invalid_type(
                f"{where}.function.description", "a string", function["description"]
            )
        if "parameters" in function and not isinstance(function["parameters"], dict):
            return _invalid_type(
                f"{where}.function.parameters", "an object", function["parameters"]
            )
    return None


def _check_chat_request(body: Any, *, strict_alternation: bool) -> _Problem | None:
    if not isinstance(body, dict):
        return _invalid_type("body", "an object", body)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return "you must provide a model parameter", "model", None
    messages = body.get("messages")
    if not isinstance(messages, list):
        return "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"
    if not messages:
        text_ = "Invalid 'messages': empty array. Expected an array with minimum length 1."
        return text_, "messages", "empty_array"
    for i, message in enumerate(messages):
        problem = _check_message(i, message)
        if problem:
            return problem
    for i, message in enumerate(messages):
        if message["role"] == "system" and i != 0:
            return SYSTEM_NOT_FIRST_MESSAGE, f"messages.[{i}].role", None
    first = next((m for m in messages if m["role"] != "system"), None)
    if first is None or first["role"] != "user":
        return FIRST_NOT_USER_MESSAGE, "messages", None
    problem = _check_tool_links(messages)
    if problem is None and strict_alternation:
        problem = _check_alternation(messages)
    if problem is None and "tools" in body:
        problem = _check_tools(body["tools"])
    return problem


# --------------------------------------------------------------------------- thinking model


def check_reasoning_passed_back(messages: list[dict[str, Any]]) -> str | None:
    """DeepSeek's thinking-mode rule: between two user messages, if the model made tool calls,
    every assistant message there must carry its `reasoning_content` (an empty one counts as
    missing, as on DeepSeek V4). Returns the 400 message, or None when the rule holds."""
    exchange: list[dict[str, Any]] = []
    for message in [*messages, {"role": "user"}]:
        if message.get("role") != "user":
            exchange.append(message)
            continue
        assistants = [m for m in exchange if m.get("role") == "assistant"]
        if any(m.get("tool_calls") for m in assistants) and not all(
            isinstance(m.get("reasoning_content"), str) and m["reasoning_content"]
            for m in assistants
        ):
            return REASONING_NOT_PASSED_BACK_MESSAGE
        exchange = []
    return None


def _thought(completion_id: str) -> str:
    """The reasoning a thinking-model fake invents when a reply scripts none."""
    return f"【思考 {completion_id}】先想清楚用户要什么，再决定要不要用工具。"


def validate_chat_request(body: dict[str, Any], *, strict_alternation: bool = True) -> str | None:
    """Return the 400 error message the fake would send for this chat request, or None."""
    problem = _check_chat_request(body, strict_alternation=strict_alternation)
    return problem[0] if problem else None


# --------------------------------------------------------------------------- provider refusals, keys, balance

# The bodies as the providers send them (DeepSeek's code is always "invalid_request_error":
# only the message tells a refusal or an empty balance from another bad request).
DEEPSEEK_REFUSAL_BODY: dict[str, Any] = {
    "error": {
        "message": "Content Exists Risk",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
}
DASHSCOPE_REFUSAL_BODY: dict[str, Any] = {
    "error": {
        "code": "data_inspection_failed",
        "param": None,
        "message": "Input data may contain inappropriate content.",
        "type": "data_inspection_failed",
    },
    "id": "chatcmpl-0b3ed5c1-9a87-9d6a-a0c4-1c2d3e4f5a6b",
    "request_id": "0b3ed5c1-9a87-9d6a-a0c4-1c2d3e4f5a6b",
}
ZHIPU_REFUSAL_BODY: dict[str, Any] = {
    "error": {
        "code": "1301",
        "message": "系统检测到输入或生成内容可能包含不安全或敏感内容，请您避免输入易产生敏感内容的提示语，感谢您的配合。",
    }
}
DEEPSEEK_BAD_KEY_BODY: dict[str, Any] = {
    "error": {
        "message": "Authentication Fails, Your api key: ****abcd is invalid",
        "type": "authentication_error",
        "param": None,
        "code": "invalid_request_error",
    }
}
DEEPSEEK_NO_BALANCE_BODY: dict[str, Any] = {
    "error": {
        "message": "Insufficient Balance",
        "type": "unknown_error",
        "param": None,
        "code": "invalid_request_error",
    }
}
_REFUSAL_BODIES = {
    "deepseek": DEEPSEEK_REFUSAL_BODY,
    "dashscope": DASHSCOPE_REFUSAL_BODY,
    "zhipu": ZHIPU_REFUSAL_BODY,
}


@dataclass(frozen=True)
class ContentFilter:
    """A provider's content filter: every chat request whose messages still contain
    ``phrase`` anywhere (user text, tool results, tool-call arguments) is answered 400 with
    that provider's body, as long as the phrase stays in the history."""

    phrase: str
    provider: Literal["deepseek", "dashscope", "zhipu"] = "deepseek"

    def refuses(self, messages: list[dict[str, Any]]) -> bool:
        """Whether a request with these messages is refused."""
        return self.phrase in json.dumps(messages, ensure_ascii=False)

    @property
    def body(self) -> dict[str, Any]:
        """The 400 body this provider sends."""
        return _REFUSAL_BODIES[self.provider]


def _json_reply(status: int, body: dict[str, Any]) -> RawReply:
    return raw(status, json.dumps(body, ensure_ascii=False))


def deepseek_refusal() -> RawReply:
    """DeepSeek's content-filter 400, once."""
    return _json_reply(400, DEEPSEEK_REFUSAL_BODY)


def dashscope_refusal() -> RawReply:
    """DashScope's (Qwen) content-filter 400, once."""
    return _json_reply(400, DASHSCOPE_REFUSAL_BODY)


def deepseek_bad_key() -> RawReply:
    """DeepSeek's 401 for an invalid API key."""
    return _json_reply(401, DEEPSEEK_BAD_KEY_BODY)


def deepseek_no_balance() -> RawReply:
    """DeepSeek's 402 when the account has no balance left."""
    return _json_reply(402, DEEPSEEK_NO_BALANCE_BODY)


def error_in_body(message: str, code: str | None = None, *, type: str | None = None) -> RawReply:
    """A gateway's 200 whose body is an error object instead of a completion."""
    error_type = type or "invalid_request_error"
    return _json_reply(200, _error_body(message, error_type, code=code))


# --------------------------------------------------------------------------- server


@dataclass
class RecordedRequest:
    """One HTTP request seen by the fake (header names lower-cased; status 0 = no response,
    as for a request whose client went away before sending its whole body)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0
    accepted: bool = False
    done: bool = False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 512  # benchmarks open many connections at once

    def __init__(self, fake: FakeOpenAI) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake
        self.timeout = 0.05
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # client went away (timeouts, drops, stop()): not interesting
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.connections_lock:
                self.server.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self.server.fake._dispatch(self, "GET")

    def do_POST(self) -> None:
        self.server.fake._dispatch(self, "POST")

    def read_body(self) -> bytes | None:
        """The request's body; None when the client went away before sending all of it
        (a stopped call: RFC 9112 §6.3 makes such a message incomplete, never processed)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunks()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        return body if len(body) == length else None

    def _read_chunks(self) -> bytes | None:
        parts: list[bytes] = []
        while True:
            line = self.rfile.readline()
            if not line:
                return None
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            part = self.rfile.read(size)
            if len(part) < size:
                return None
            parts.append(part)
            self.rfile.readline()


class FakeOpenAI:
    """OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies and request recording."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        strict_alternation: bool = True,
        context_limit_tokens: int | None = None,
        thinking_model: bool = False,
    ) -> None:
        self.api_key = api_key
        self.strict_alternation = strict_alternation
        self.context_limit_tokens = context_limit_tokens
        # Behave like DeepSeek in thinking mode: every completion carries `reasoning_content`
        # (invented when the script gives none), and a request with tools whose history drops
        # the reasoning of a tool-call exchange is answered 400.
        self.thinking_model = thinking_model
        self.responder: Callable[[dict[str, Any]], Reply] = echo_responder
        self.embeddings_fail = False
        # When set, requests still holding the filter's phrase are refused (see ContentFilter).
        self.content_filter: ContentFilter | None = None
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._cond = threading.Condition()
        self._completion_seq = 0
        self._call_seq = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._wake: tuple[socket.socket, socket.socket] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeOpenAI:
        """Bind a free port and serve in a background daemon thread."""
        if self._server is not None:
            raise RuntimeError("FakeOpenAI already started")
        self._stopping.clear()
        self._server = _Server(self)
        self._wake = socket.socketpair()
        self._thread = threading.Thread(
            target=self._serve, args=(self._server, self._wake[0]), name="FakeOpenAI", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket and all open connections."""
        server, thread, wake = self._server, self._thread, self._wake
        if server is None or thread is None or wake is None:
            return
        self._stopping.set()
        wake[1].send(b"x")
        thread.join(timeout=5)
        server.server_close()
        with server.connections_lock:
            connections = list(server.connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for end in wake:
            end.close()
        self._server = self._thread = self._wake = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _serve(self, server: _Server, wake: socket.socket) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(server.socket, selectors.EVENT_READ)
            selector.register(wake, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is server.socket and not self._stopping.is_set():
                        server.handle_request()

    @property
    def port(self) -> int:
        """The bound TCP port (server must be started)."""
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, the value for an OpenAI client's base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ scripting & records

    def script(self, *replies: Reply) -> None:
        """Append replies to the FIFO queue used before falling back to ``responder``."""
        with self._cond:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Number of scripted replies not consumed yet."""
        with self._cond:
            return len(self._queue)

    def reset(self) -> None:
        """Clear the queue, records, counters and failure flags; restore the echo responder."""
        with self._cond:
            self._queue.clear()
            self.requests.clear()
            self._completion_seq = 0
            self._call_seq = 0
        self.responder = echo_responder
        self.embeddings_fail = False
        self.content_filter = None

    @staticmethod
    def estimate_tokens(messages: Any) -> int:
        """Rough token estimate of a messages list: JSON length // 3."""
        return estimate_tokens(messages)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of chat-completion requests that passed validation."""
        with self._cond:
            return [r.body for r in self.requests if r.path == CHAT_PATH and r.accepted]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        """Bodies of embedding requests that passed validation."""
        with self._cond:
            return [r.body for r in self.requests if r.path == EMBEDDINGS_PATH and r.accepted]

    def last_messages(self) -> list[dict[str, Any]]:
        """Messages of the last accepted chat request (LookupError if none)."""
        bodies = self.chat_requests
        if not bodies:
            raise LookupError("FakeOpenAI has not accepted any chat request")
        return list(bodies[-1]["messages"])

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least ``n`` requests (of any path) have been fully handled."""

        def enough() -> bool:
            return sum(1 for r in self.requests if r.done) >= n

        with self._cond:
            if not self._cond.wait_for(enough, timeout):
                done = sum(1 for r in self.requests if r.done)
                raise TimeoutError(f"expected {n} requests, got {done} within {timeout}s")
            return list(self.requests)

    # ------------------------------------------------------------------ request handling

    def _dispatch(self, handler: _Handler, method: str) -> None:
        path = urlsplit(handler.path).path
        payload = handler.read_body()
        headers = {name.lower(): value for name, value in handler.headers.items()}
        if payload is None:
            # Cut off: recorded, never validated nor answered, as a real server drops it.
            handler.close_connection = True
            with self._cond:
                self.requests.append(RecordedRequest(method, path, headers, None, done=True))
                self._cond.notify_all()
            return
        body: Any = None
        bad_json = False
        if payload:
            try:
                body = json.loads(payload)
            except ValueError:
                bad_json = True
        record = RecordedRequest(method, path, headers, body)
        with self._cond:
            self.requests.append(record)
        try:
            self._route(handler, record, bad_json)
        except OSError:
            raise
        except Exception as exc:
            traceback.print_exc()
            if record.status == 0:
                message = f"FakeOpenAI internal error: {exc!r}"
                self._send_json(handler, record, 500, _error_body(message, "server_error"))
        finally:
            with self._cond:
                record.done = True
                self._cond.notify_all()

    def _route(self, handler: _Handler, record: RecordedRequest, bad_json: bool) -> None:
        if self.api_key is not None and not self._authorized(handler, record):
            return
        if bad_json and record.method == "POST":
            message = (
                "We could not parse the JSON body of your request. (HINT: This likely means "
                "you aren't using your HTTP library correctly.)"
            )
            self._send_json(handler, record, 400, _error_body(message))
        elif record.method == "POST" and record.path == CHAT_PATH:
            self._chat(handler, record)
        elif record.method == "POST" and record.path == EMBEDDINGS_PATH:
            self._embeddings(handler, record)
        elif record.method == "GET" and record.path == MODELS_PATH:
            data = [{"id": FAKE_MODEL, "object": "model", "created": 0, "owned_by": "fake"}]
            self._send_json(handler, record, 200, {"object": "list", "data": data})
        else:
            message = f"Invalid URL ({record.method} {record.path})"
            self._send_json(handler, record, 404, _error_body(message))

    def _authorized(self, handler: _Handler, record: RecordedRequest) -> bool:
        header = record.headers.get("authorization")
        if header == f"Bearer {self.api_key}":
            return True
        if header is None:
            message = (
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            )
            body = _error_body(message)
        else:
            key = header.removeprefix("Bearer ").strip()
            body = _error_body(f"Incorrect API key provided: {key}.", code="invalid_api_key")
        self._send_json(handler, record, 401, body)
        return False

    def _chat(self, handler: _Handler, record: RecordedRequest) -> None:
        body = record.body
        problem = _check_chat_request(body, strict_alternation=self.strict_alternation)
        if problem is not None:
            message, param, code = problem
            self._send_json(handler, record, 400, _error_body(message, param=param, code=code))
            return
        if self.thinking_model and "tools" in body:
            message = check_reasoning_passed_back(body["messages"])
            if message is not None:
                error_body = _error_body(message, code="invalid_request_error")
                self._send_json(handler, record, 400, error_body)
                return
        limit = self.context_limit_tokens
        if limit is not None:
            tokens = estimate_tokens(body["messages"])
            if tokens > limit:
                message = (
                    f"This model's maximum context length is {limit} tokens. However, your "
                    f"messages resulted in {tokens} tokens."
                )
                error_body = _error_body(message, param="messages", code="context_length_exceeded")
                self._send_json(handler, record, 400, error_body)
                return
        content_filter = self.content_filter
        if content_filter is not None and content_filter.refuses(body["messages"]):
            self._send_json(handler, record, 400, content_filter.body)
            return
        with self._cond:
            record.accepted = True
            reply = self._queue.popleft() if self._queue else None
        if reply is None:
            _ANSWERING.connection = handler.connection
            try:
                reply = self.responder(body)
            finally:
                _ANSWERING.connection = None
        self._send_reply(handler, record, reply)

    def _send_reply(self, handler: _Handler, record: RecordedRequest, reply: Reply) -> None:
        while isinstance(reply, (DelayReply, HeldReply)):
            if isinstance(reply, HeldReply):
                reply.gate.wait(HOLD_TIMEOUT_SECONDS)
            else:
                time.sleep(reply.seconds)
            reply = reply.then
        if isinstance(reply, DropReply):
            handler.close_connection = True
        elif isinstance(reply, ErrorReply):
            type_ = reply.type or _default_error_type(reply.status)
            body = _error_body(reply.message, type_, code=reply.code)
            self._send_json(handler, record, reply.status, body, reply.headers)
        elif isinstance(reply, RawReply):
            self._send(handler, record, reply.status, reply.body, reply.content_type)
        elif isinstance(reply, (TextReply, ToolCallsReply)):
            completion = self._completion(record.body, reply)
            if record.body.get("stream"):
                options = record.body.get("stream_options") or {}
                events = _stream_events(completion, bool(options.get("include_usage")))
                self._send(handler, record, 200, events, "text/event-stream")
            else:
                self._send_json(handler, record, 200, completion)
        else:
            raise TypeError(f"not a FakeOpenAI reply: {reply!r}")

    def _completion(
        self, request: dict[str, Any], reply: TextReply | ToolCallsReply
    ) -> dict[str, Any]:
        with self._cond:
            self._completion_seq += 1
            completion_id = f"chatcmpl-{self._completion_seq}"
            call_ids: list[str] = []
            if isinstance(reply, ToolCallsReply):
                for _ in reply.calls:
                    self._call_seq += 1
                    call_ids.append(f"call_{self._call_seq}")
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        produced = reply.content or ""
        finish_reason = "tool_calls"
        if isinstance(reply, ToolCallsReply):
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
                for call_id, (name, args) in zip(call_ids, reply.calls, strict=True)
            ]
            produced += json.dumps(message["tool_calls"], ensure_ascii=False)
        else:
            finish_reason = reply.finish_reason
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        elif self.thinking_model:
            message["reasoning_content"] = _thought(completion_id)
        completion: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        }
        if reply.usage == "auto":
            prompt = estimate_tokens(request["messages"])
            generated = len(produced) // 3 + 1
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": generated,
                "total_tokens": prompt + generated,
            }
        elif reply.usage is not None:
            completion["usage"] = dict(reply.usage)
        return completion

    def _embeddings(self, handler: _Handler, record: RecordedRequest) -> None:
        body = record.body
        problem = _check_embeddings_request(body)
        if problem is not None:
            message, param, code = problem
            self._send_json(handler, record, 400, _error_body(message, param=param, code=code))
            return
        with self._cond:
            record.accepted = True
        if self.embeddings_fail:
            message = "The server had an error while processing your request. Sorry about that!"
            self._send_json(handler, record, 500, _error_body(message, "server_error"))
            return
        inputs = [body["input"]] if isinstance(body["input"], str) else body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": embed_text(item)}
            for i, item in enumerate(inputs)
        ]
        tokens = sum(len(item) // 3 + 1 for item in inputs)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        payload = {"object": "list", "data": data, "model": body["model"], "usage": usage}
        self._send_json(handler, record, 200, payload)

    def _send_json(
        self,
        handler: _Handler,
        record: RecordedRequest,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self._send(handler, record, status, data, "application/json", headers)

    def _send(
        self,
        handler: _Handler,
        record: RecordedRequest,
        status: int,
        data: bytes,
        content_type: str | None,
        headers: dict[str, str] | None = None,
    ) -> None:
        with self._cond:
            record.status = status
        handler.send_response(status)
        if content_type is not None:
            handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()


def _check_embeddings_request(body: Any) -> _Problem | None:
    if not isinstance(body, dict):
        return _invalid_type("body", "an object", body)
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter", "model", None
    value = body.get("input")
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        return "'input' must be a non-empty string or array of strings.", "input", "invalid_value"
    for item in items:
        if not isinstance(item, str) or not item:
            return "'$.input' is invalid. Please check the API reference.", "input", None
    return None


def _pieces(value: str) -> list[str]:
    return [value[i : i + _STREAM_PIECE] for i in range(0, len(value), _STREAM_PIECE)]


def _stream_events(completion: dict[str, Any], include_usage: bool) -> bytes:
    head = {key: completion[key] for key in ("id", "created", "model")}
    message = completion["choices"][0]["message"]
    deltas: list[tuple[dict[str, Any], str | None]] = [({"role": "assistant", "content": ""}, None)]
    deltas += [
        ({"reasoning_content": p}, None) for p in _pieces(message.get("reasoning_content") or "")
    ]
    deltas += [({"content": p}, None) for p in _pieces(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = {"name": call["function"]["name"], "arguments": ""}
        start = {"index": index, "id": call["id"], "type": "function", "function": function}
        deltas.append(({"tool_calls": [start]}, None))
        for piece in _pieces(call["function"]["arguments"]):
            part = {"index": index, "function": {"arguments": piece}}
            deltas.append(({"tool_calls": [part]}, None))
    deltas.append(({}, completion["choices"][0]["finish_reason"]))
    chunks: list[dict[str, Any]] = [
        {
            **head,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        for delta, finish in deltas
    ]
    if include_usage and "usage" in completion:
        chunks.append(
            {**head, "object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]}
        )
    lines = [f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n" for chunk in chunks]
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode("utf-8")
