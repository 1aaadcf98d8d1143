"""What a provider's failure means: the LLMError kinds, and how error bodies of OpenAI,
DeepSeek, DashScope, Zhipu, Moonshot and gateways are read (refusal, key or balance,
context overflow, or a plain failure), and which failures are worth a retry."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Besides every 5xx: request timeout, conflict (OpenAI's transient lock) and rate limits.
RETRY_STATUSES = frozenset({408, 409, 429})
# Failures of the service rather than of the request (besides retryable HTTP statuses).
_TRANSIENT_KINDS = frozenset({"timeout", "unreachable", "garbage", "empty"})
BODY_EXCERPT_CHARS = 300
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
            return self.status is None or retryable_status(self.status)
        return self.kind in _TRANSIENT_KINDS


class ContextLengthError(LLMError):
    """The request was larger than the model's context window."""


def is_reasoning_missing_error(error: LLMError) -> bool:
    """A thinking model's 400 for a history whose tool exchanges lack their reasoning
    (DeepSeek: "The `reasoning_content` in the thinking mode must be passed back")."""
    said = f"{error.detail} {error.provider_message or ''}".lower()
    return error.status == 400 and "reasoning_content" in said and "pass" in said


def retryable_status(status: int) -> bool:
    return status in RETRY_STATUSES or 500 <= status <= 599


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
