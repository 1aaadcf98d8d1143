"""OpenAI-compatible chat-completions client: httpx with capped answers, bounded retries,
strict parsing."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from .errors import (
    BODY_EXCERPT_CHARS,
    LLMError,
    error_from_response,
)
from .messages import Message, parse_tool_call
from .model_traffic import ModelTraffic, is_background_call, server_of
from .shared_http import MAX_RESPONSE_BYTES, CappedAnswer, SharedHttp, TransportFailure
from .usage import NO_METER, Usage, UsageMeter

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_RETRY_AFTER_SECONDS = 10.0
EMPTY_REASONING_PLACEHOLDER = " "
_NEXT_CAP_FIELD = {"max_tokens": "max_completion_tokens"}
# Each role's output cap, in tokens: several times what the role writes (a reply within
# AIMEMORY_REPLY_MAX_CHARS, a summary within its cap, a few JSON operations), with room for
# a thinking model's reasoning where the provider counts it in; what it stops is a model
# that loops on its own words, which on a CPU server runs for minutes.
ROLE_OUTPUT_TOKENS = {
    "main": 4096,
    "compressor": 3072,
    "extractor": 2048,
    "reviewer": 2048,
    "vision": 1024,
    # One word, or a thinking model's reasoning before it.
    "guard": 512,
}
_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and as whom to call: an OpenAI-compatible base URL, key and model."""

    api_base: str
    api_key: str = field(repr=False)  # never in a log line or a traceback's locals
    model: str

    @property
    def chat_url(self) -> str:
        """The chat-completions URL under `api_base`."""
        return self.api_base.rstrip("/") + "/chat/completions"

    @property
    def json_headers(self) -> dict[str, str]:
        """Headers of a JSON request to it: the content type, and the key when there is one."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers


@dataclass(frozen=True, slots=True)
class Completion:
    """The assistant message of one call (`<think>` blocks removed, `reasoning_content` kept
    on the message) and the reported usage, if any."""

    message: Message
    usage: Usage | None
    finish_reason: str | None
    # The choice's `logprobs` as the server sent them, when asked for (guard/model_check.py).
    logprobs: Any = None


def strip_reasoning(text: str) -> str:
    """Remove `<think>…</think>` blocks (an unclosed one runs to the end)."""
    if "<think" not in text.lower():
        return text.strip()
    return _THINK_BLOCK.sub("", text).strip()


class LLMClient:
    """Calls one endpoint through a shared `httpx.AsyncClient`, each attempt bounded by
    `timeout_seconds` as a whole and its answer by `max_response_bytes`; each answered
    call's usage goes to `meter` under `role` (engine/usage.py)."""

    def __init__(
        self,
        http: httpx.AsyncClient | SharedHttp,
        endpoint: Endpoint,
        *,
        timeout_seconds: float = 120.0,
        max_retries: int = 2,
        backoff_seconds: float = 1.0,
        role: str = "main",
        meter: UsageMeter = NO_METER,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        traffic: ModelTraffic | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        self.http = SharedHttp.of(http, timeout_seconds)
        self.endpoint = endpoint
        self.timeout_seconds = timeout_seconds
        self.max_retries = max_retries
        self.backoff_seconds = backoff_seconds
        self.role = role
        self.meter = meter
        self.max_response_bytes = max_response_bytes
        self.traffic = traffic or ModelTraffic()
        self.max_output_tokens = max_output_tokens
        # The request field the cap goes in: OpenAI's reasoning models refuse `max_tokens`
        # and want `max_completion_tokens`; a server refusing both gets no cap.
        self._cap_field: str | None = "max_tokens"

    def for_role(self, role: str) -> LLMClient:
        """The same endpoint, its calls counted under another role (the extractor uses the
        compressor's model)."""
        return LLMClient(
            self.http,
            self.endpoint,
            timeout_seconds=self.timeout_seconds,
            max_retries=self.max_retries,
            backoff_seconds=self.backoff_seconds,
            role=role,
            meter=self.meter,
            max_response_bytes=self.max_response_bytes,
            traffic=self.traffic,
            max_output_tokens=ROLE_OUTPUT_TOKENS.get(role) if self.max_output_tokens else None,
        )

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
        """One chat completion; raises LLMError (or ContextLengthError) when none can be had.
        A background call (a background role's, or any made in background work) gives way
        to members' calls to the same server."""
        server = server_of(self.endpoint.api_base)

        async def call() -> Completion:
            return await self._complete(messages, tools_json, context, extra)

        if is_background_call(self.role):
            return await self.traffic.background(server, call, f"{self.role} {context}")
        async with self.traffic.foreground(server):
            return await call()

    async def _complete(
        self,
        messages: Sequence[Message],
        tools_json: bytes | None,
        context: str,
        extra: dict[str, Any] | None,
    ) -> Completion:
        while True:
            body = build_request_body(self.endpoint.model, messages, tools_json, self._extra(extra))
            try:
                response = await self._post_with_retries(body, context)
            except LLMError as exc:
                if not self._drop_refused_cap(exc):
                    raise
                continue
            completion = parse_completion(
                response, context=f"{context} model={self.endpoint.model}"
            )
            self.meter.record(self.role, completion.usage)
            return completion

    def _extra(self, extra: dict[str, Any] | None) -> dict[str, Any] | None:
        """The request's extra fields with the output cap, when this role has one."""
        if self.max_output_tokens is None or self._cap_field is None:
            return extra
        return {self._cap_field: self.max_output_tokens, **(extra or {})}

    def _drop_refused_cap(self, error: LLMError) -> bool:
        """After a 400 that names the cap's field, use the next field (or none); whether
        the request is worth sending again."""
        if self._cap_field is None or self.max_output_tokens is None or error.status != 400:
            return False
        said = f"{error.provider_message or ''} {error.detail}"
        if self._cap_field not in said:
            return False
        refused, self._cap_field = self._cap_field, _NEXT_CAP_FIELD.get(self._cap_field)
        logger.warning(
            "%s model=%s refuses %s; the output cap goes in %s",
            self.role,
            self.endpoint.model,
            refused,
            self._cap_field or "no field",
        )
        return True

    async def _post_with_retries(self, body: bytes, context: str) -> CappedAnswer:
        headers = self.endpoint.json_headers
        attempt = 0
        while True:
            try:
                response = await self.http.post_capped(
                    self.endpoint.chat_url,
                    content=body,
                    headers=headers,
                    timeout_seconds=self.timeout_seconds,
                    max_bytes=self.max_response_bytes,
                )
            except TransportFailure as exc:
                if not exc.retryable or attempt >= self.max_retries:
                    raise LLMError(exc.kind, str(exc)) from exc
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
    parts = [head, b",".join([m.api_json() for m in messages]), b"]"]
    if tools_json:
        parts.append(b',"tools":' + tools_json)
    for key, value in (extra or {}).items():
        parts.append(b"," + json.dumps(key).encode() + b":" + json.dumps(value).encode())
    parts.append(b"}")
    return b"".join(parts)


def parse_completion(response: CappedAnswer, *, context: str = "") -> Completion:
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
    return Completion(
        message,
        _parse_usage(data.get("usage")),
        choice.get("finish_reason"),
        choice.get("logprobs"),
    )


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
    cached = min(cached_prompt_tokens(raw), prompt)
    return Usage(prompt, completion if isinstance(completion, int) else 0, cached)


def cached_prompt_tokens(raw: dict[str, Any]) -> int:
    """Prompt tokens served from the provider's cache: OpenAI-style APIs say it in
    `prompt_tokens_details.cached_tokens`, DeepSeek in `prompt_cache_hit_tokens`; 0 when
    neither is there."""
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if not isinstance(cached, int):
        cached = raw.get("prompt_cache_hit_tokens")
    return cached if isinstance(cached, int) and cached > 0 else 0


def _retry_delay(response: CappedAnswer, default: float) -> float:
    retry_after = response.headers.get("retry-after")
    if retry_after is None:
        return default
    try:
        return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER_SECONDS)
    except ValueError:
        return default
