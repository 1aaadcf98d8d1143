"""OpenAI-compatible chat-completions client: pooled HTTP, bounded retries, strict parsing."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from .messages import Message, parse_tool_call

logger = logging.getLogger("nonebot_plugin_aimemory")

# Besides every 5xx: request timeout, conflict (OpenAI's transient lock) and rate limits.
RETRY_STATUSES = frozenset({408, 409, 429})
# Failures of the service rather than of the request (besides retryable HTTP statuses).
_TRANSIENT_KINDS = frozenset({"timeout", "unreachable", "garbage", "empty"})
MAX_RETRY_AFTER_SECONDS = 10.0
BODY_EXCERPT_CHARS = 300
EMPTY_REASONING_PLACEHOLDER = " "
_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
# How servers say a request is over the model's context window, lower-cased. A 400 matching
# none of these is an ordinary bad request, which compressing the history would not fix.
_CONTEXT_PHRASES = (
    "context_length_exceeded",  # OpenAI's error code
    "exceed_context_size_error",  # llama.cpp server's (and Ollama's) error type
    "context length",  # OpenAI, DeepSeek, vLLM: "This model's maximum context length is N"
    "context window",  # OpenAI: "Your input exceeds the context window of this model"
    "context size",  # llama.cpp: "the request exceeds the available context size"
    "range of input length",  # DashScope (Qwen): "Range of input length should be [1, N]"
    "maximum model length",  # vLLM: "The decoder prompt (length N) is longer than the ..."
    "too long to fit into the model",  # older vLLM
    "prompt is too long",
    "input is too long",
    "exceeds the maximum number of tokens",  # Gemini's OpenAI-compatible endpoint
    "exceeded model token limit",  # Moonshot (Kimi)
    "reduce the length",
    "too many tokens",
)
# llama.cpp answers some overflows with a 500, which a retry would only repeat; any other 500
# is a server error worth retrying, whatever its text says.
_SERVER_ERROR_CONTEXT_PHRASES = ("exceed_context_size_error", "context size has been exceeded")
# How providers say they refused a request for its content: error codes or types, and
# phrases of the error message, lower-cased. Whatever the status, a retry would be refused too.
_REFUSAL_CODES = frozenset(
    {
        "content_filter",  # OpenAI-compatible gateways, Azure OpenAI
        "data_inspection_failed",  # DashScope (Qwen)
        "1301",  # Zhipu (GLM)
        "content_policy_violation",
    }
)
_REFUSAL_PHRASES = (
    "content exists risk",  # DeepSeek
    "inappropriate content",  # DashScope: "Input data may contain inappropriate content."
    "datainspectionfailed",  # DashScope: "InternalError.Algo.DataInspectionFailed: ..."
    "不安全或敏感内容",  # Zhipu 1301: "系统检测到输入或生成内容可能包含不安全或敏感内容…"
    "content management policy",  # Azure OpenAI
    "considered high risk",  # Moonshot (Kimi)
)
# Key and billing problems: only the administrator can fix them, so no retry (OpenAI and
# Zhipu send an exhausted quota as a 429, which would otherwise be retried as a rate limit).
_ACCOUNT_STATUSES = frozenset({401, 402, 403})
_ACCOUNT_CODES = frozenset(
    {
        "invalid_api_key",  # OpenAI, DashScope
        "insufficient_quota",  # OpenAI (429)
        "insufficient_user_quota",  # one-api / new-api gateways
        "arrearage",  # DashScope: the account is in arrears
        "exceeded_current_quota_error",  # Moonshot (Kimi)
        "1113",  # Zhipu: 您的账户已欠费
    }
)
_ACCOUNT_PHRASES = (
    "insufficient balance",  # DeepSeek's 402
    "exceeded your current quota",  # OpenAI
    "insufficient credits",  # OpenRouter
    "balance is insufficient",  # SiliconFlow
    "quota exhausted",
    "余额不足",
    "欠费",
    "额度不足",
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and as whom to call: an OpenAI-compatible base URL, key and model."""

    api_base: str
    api_key: str
    model: str

    @property
    def chat_url(self) -> str:
        """The chat-completions URL under `api_base`."""
        return self.api_base.rstrip("/") + "/chat/completions"


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported by the API for one or more calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class Completion:
    """The assistant message of one call (`<think>` blocks removed, `reasoning_content` kept
    on the message) and the reported usage, if any."""

    message: Message
    usage: Usage | None
    finish_reason: str | None


class LLMError(Exception):
    """The model could not give a usable answer; `kind` says why, `detail` is for the log.

    Kinds: "timeout", "unreachable", "garbage", "empty", "http", "context_length", "refused"
    (the provider's content filter) and "account" (key, balance or quota). `code` and
    `provider_message` are what the provider's error object said, when it said anything."""

    def __init__(
        self,
        kind: str,
        detail: str,
        status: int | None = None,
        *,
        code: str | None = None,
        provider_message: str | None = None,
    ) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.status = status
        self.code = code
        self.provider_message = provider_message

    @property
    def transient(self) -> bool:
        """The service failed, not the request: the same request may well succeed later
        (a timeout, a lost connection, 408/409/429, a 5xx, an unusable or empty answer)."""
        if self.kind == "http":
            return self.status is None or _retryable_status(self.status)
        return self.kind in _TRANSIENT_KINDS


class ContextLengthError(LLMError):
    """The request was larger than the model's context window."""


def is_reasoning_missing_error(error: LLMError) -> bool:
    """A thinking model's 400 for a history whose tool exchanges lack their reasoning
    (DeepSeek: "The `reasoning_content` in the thinking mode must be passed back")."""
    said = f"{error.detail} {error.provider_message or ''}".lower()
    return error.status == 400 and "reasoning_content" in said and "pass" in said


def strip_reasoning(text: str) -> str:
    """Remove `<think>…</think>` blocks (an unclosed one runs to the end)."""
    if "<think" not in text.lower():
        return text.strip()
    return _THINK_BLOCK.sub("", text).strip()


class LLMClient:
    """Calls one endpoint through a shared `httpx.AsyncClient`."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        endpoint: Endpoint,
        *,
        timeout_seconds: float = 120.0,
        max_retries: int = 2,
        backoff_seconds: float = 1.0,
    ) -> None:
        self.http = http
        self.endpoint = endpoint
        self.timeout_seconds = timeout_seconds
        self.max_retries = max_retries
        self.backoff_seconds = backoff_seconds

    @property
    def model(self) -> str:
        """The model this client calls."""
        return self.endpoint.model

    async def complete(
        self,
        messages: Sequence[Message],
        tools_json: bytes | None = None,
        *,
        context: str = "",
        extra: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion; raises LLMError (or ContextLengthError) when none can be had."""
        body = build_request_body(self.endpoint.model, messages, tools_json, extra)
        response = await self._post_with_retries(body, context)
        return parse_completion(response, context=f"{context} model={self.endpoint.model}")

    async def _post_with_retries(self, body: bytes, context: str) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        if self.endpoint.api_key:
            headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
        attempt = 0
        while True:
            try:
                response = await self.http.post(
                    self.endpoint.chat_url,
                    content=body,
                    headers=headers,
                    timeout=self.timeout_seconds,
                )
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                # Connection-level failures (refused, reset, closed early) are worth a retry;
                # a read timeout is not: the model is just slow, retrying doubles the wait.
                retryable = isinstance(
                    exc, httpx.NetworkError | httpx.RemoteProtocolError | httpx.ConnectTimeout
                )
                kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "unreachable"
                if not retryable or attempt >= self.max_retries:
                    raise LLMError(kind, f"{type(exc).__name__}: {exc}") from exc
                delay = self.backoff_seconds * 2**attempt
            else:
                if response.status_code < 400:
                    return response
                failure = error_from_response(response.status_code, response.text)
                if not failure.transient or attempt >= self.max_retries:
                    raise failure
                delay = _retry_delay(response, self.backoff_seconds * 2**attempt)
            attempt += 1
            logger.warning(
                "LLM call failed, retry %d/%d in %.1fs (%s model=%s)",
                attempt,
                self.max_retries,
                delay,
                context,
                self.endpoint.model,
            )
            await asyncio.sleep(delay)


def build_request_body(
    model: str,
    messages: Sequence[Message],
    tools_json: bytes | None,
    extra: dict[str, Any] | None = None,
) -> bytes:
    """The request JSON, joined from each message's cached JSON instead of re-encoding it."""
    head = b'{"model":' + json.dumps(model).encode() + b',"messages":['
    parts = [head, b",".join(m.api_json() for m in messages), b"]"]
    if tools_json:
        parts.append(b',"tools":' + tools_json)
    for key, value in (extra or {}).items():
        parts.append(b"," + json.dumps(key).encode() + b":" + json.dumps(value).encode())
    parts.append(b"}")
    return b"".join(parts)


def parse_completion(response: httpx.Response, *, context: str = "") -> Completion:
    """Parse a chat-completions response; anything unusable raises LLMError('garbage')."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LLMError("garbage", f"not JSON: {response.text[:BODY_EXCERPT_CHARS]!r}") from exc
    if isinstance(data, dict) and data.get("error") and not data.get("choices"):
        # Some gateways answer 200 and put the provider's error in the body.
        raise error_from_response(None, response.text)
    try:
        choice = data["choices"][0]
        raw_message = choice["message"]
        if not isinstance(raw_message, dict):
            raise TypeError("message is not an object")
        content = raw_message.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError("content is not a string")
        calls = tuple(parse_tool_call(c) for c in raw_message.get("tool_calls") or ())
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        excerpt = response.text[:BODY_EXCERPT_CHARS]
        raise LLMError("garbage", f"{exc!r} in {excerpt!r} ({context})") from exc
    if choice.get("finish_reason") == "content_filter":
        # The answer was filtered: whatever part of it came back is not to be shown.
        raise LLMError(
            "refused",
            f"finish_reason content_filter ({context})",
            code="content_filter",
            provider_message="finish_reason: content_filter",
        )
    text = strip_reasoning(content) if content else None
    if not text and not calls:
        raise LLMError("empty", f"no content and no tool calls ({context})")
    reasoning = _reasoning_content(raw_message.get("reasoning_content"))
    message = Message("assistant", text if text else None, tool_calls=calls, reasoning=reasoning)
    return Completion(message, _parse_usage(data.get("usage")), choice.get("finish_reason"))


def _reasoning_content(raw: Any) -> str | None:
    """A thinking model's `reasoning_content`, kept whole to be sent back verbatim; anything
    but a string is ignored. An empty one becomes a space: DeepSeek V4 rejects an empty
    `reasoning_content` as missing, and this server has shown it speaks the field."""
    if not isinstance(raw, str):
        return None
    return raw or EMPTY_REASONING_PLACEHOLDER


def _parse_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    prompt = raw.get("prompt_tokens")
    completion = raw.get("completion_tokens", 0)
    if not isinstance(prompt, int) or prompt <= 0:
        return None
    return Usage(prompt, completion if isinstance(completion, int) else 0)


@dataclass(frozen=True, slots=True)
class ProviderError:
    """What a provider's error body says: its code (or type) and its message."""

    code: str | None = None
    message: str | None = None
    codes: frozenset[str] = frozenset()  # every code and type given, lower-cased


def provider_error(body: str) -> ProviderError:
    """The code and message of an error body: OpenAI's `{"error": {...}}`, a bare
    `{"error": "..."}`, DashScope's top-level `code`/`message`, or `{"detail": "..."}`."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ProviderError()
    if not isinstance(data, dict):
        return ProviderError()
    error = data.get("error")
    if isinstance(error, str):
        return ProviderError(message=error)
    fields: dict[str, Any] = error if isinstance(error, dict) else data
    given = [fields.get(name) for name in ("code", "type")]
    codes = frozenset(str(value).lower() for value in given if value not in (None, ""))
    code = next((str(value) for value in given if value not in (None, "")), None)
    message = next(
        (fields[name] for name in ("message", "detail") if isinstance(fields.get(name), str)),
        None,
    )
    return ProviderError(code, message, codes)


def error_from_response(status: int | None, body: str) -> LLMError:
    """The LLMError a failed response stands for: "refused", "account", "context_length"
    or plain "http". `status` is None for an error object inside a 200 response."""
    info = provider_error(body)
    excerpt = body[:BODY_EXCERPT_CHARS]
    if status is None:
        excerpt = f"error object in a 200 response: {excerpt}"
    said = {"code": info.code, "provider_message": info.message}
    message = (info.message or "").lower()
    if info.codes & _REFUSAL_CODES or any(p in message for p in _REFUSAL_PHRASES):
        return LLMError("refused", excerpt, status, **said)
    if (
        status in _ACCOUNT_STATUSES
        or info.codes & _ACCOUNT_CODES
        or any(p in message for p in _ACCOUNT_PHRASES)
    ):
        return LLMError("account", excerpt, status, **said)
    if _is_context_length_error(status or 400, body):
        return ContextLengthError("context_length", excerpt, status, **said)
    return LLMError("http", excerpt, status, **said)


def _is_context_length_error(status: int, body: str) -> bool:
    lowered = body.lower()
    if status == 500:
        return any(phrase in lowered for phrase in _SERVER_ERROR_CONTEXT_PHRASES)
    return status in (400, 413, 422) and any(phrase in lowered for phrase in _CONTEXT_PHRASES)


def _retryable_status(status: int) -> bool:
    return status in RETRY_STATUSES or 500 <= status <= 599


def _retry_delay(response: httpx.Response, default: float) -> float:
    retry_after = response.headers.get("retry-after")
    if retry_after is None:
        return default
    try:
        return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER_SECONDS)
    except ValueError:
        return default
