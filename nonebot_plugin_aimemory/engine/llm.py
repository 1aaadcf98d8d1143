"""OpenAI-compatible chat-completions client: httpx with capped answers, bounded retries,
strict parsing."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import httpx

from .errors import (
    BODY_EXCERPT_CHARS,
    LLMError,
    error_from_response,
)
from .messages import Message, parse_tool_call
from .model_traffic import ModelTraffic, is_background_call, server_of
from .output_cap import CUT_WHILE_THINKING, ROLE_OUTPUT_TOKENS, OutputCap
from .prompt_warmup import Warmup, opening_of
from .shared_http import MAX_RESPONSE_BYTES, CappedAnswer, SharedHttp, TransportFailure
from .usage import NO_METER, Usage, UsageMeter

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_RETRY_AFTER_SECONDS = 10.0
EMPTY_REASONING_PLACEHOLDER = " "
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
    # Whether the model reasoned before answering (`reasoning_content`, a `<think>` block).
    thought: bool = False


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
        self.cap = OutputCap(role, max_output_tokens)

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
            max_output_tokens=ROLE_OUTPUT_TOKENS.get(role) if self.cap.thinking_tokens else None,
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
            completion = await call()
        # A turn's full request (tools offered), not a plain re-ask after it.
        if self.role == "main" and tools_json and self.traffic.warms_up(server):
            warm = partial(self._warm, tuple(messages), tools_json, extra, context)
            self.traffic.answered(server, Warmup(opening_of(messages), warm))
        return completion

    async def _warm(
        self,
        messages: Sequence[Message],
        tools_json: bytes,
        extra: dict[str, Any] | None,
        context: str,
    ) -> None:
        """Send a member's request again asking for one token (prompt_warmup.py): the same
        prompt, which the server reads whole; a failure only costs the next turn its cached
        prompt."""
        one_token = {self.cap.field: 1} if self.cap.field else {}
        body = build_request_body(self.model, messages, tools_json, {**(extra or {}), **one_token})
        try:
            response = await self.http.post_capped(
                self.endpoint.chat_url,
                content=body,
                headers=self.endpoint.json_headers,
                timeout_seconds=self.timeout_seconds,
                max_bytes=self.max_response_bytes,
            )
        except TransportFailure as exc:
            logger.info("prompt warm-up failed (%s model=%s): %s", context, self.model, exc)
            return
        if response.status_code >= 400:
            logger.info(
                "prompt warm-up refused with %d (%s model=%s)",
                response.status_code,
                context,
                self.model,
            )
            return
        logger.debug("prompt warm-up done (%s model=%s)", context, self.model)

    async def _complete(
        self,
        messages: Sequence[Message],
        tools_json: bytes | None,
        context: str,
        extra: dict[str, Any] | None,
    ) -> Completion:
        model = self.endpoint.model
        while True:
            fields = {**self.cap.fields(), **(extra or {})}
            body = build_request_body(model, messages, tools_json, fields)
            try:
                response = await self._post_with_retries(body, context)
                completion = parse_completion(response, context=f"{context} model={model}")
            except LLMError as exc:
                if self.cap.refused(exc, model):
                    continue
                if exc.code == CUT_WHILE_THINKING and self.cap.saw_thinking(model):
                    continue
                raise
            self.meter.record(self.role, completion.usage)
            grew = completion.thought and self.cap.saw_thinking(model)
            if grew and completion.finish_reason == "length":
                continue  # its answer was cut by the cap for a model answering straight away
            return completion

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
    reasoning = _reasoning_content(raw_message.get("reasoning_content"))
    thought = bool(reasoning and reasoning.strip()) or "<think" in (content or "").lower()
    if not text and not calls:
        cut = thought and choice.get("finish_reason") == "length"
        code = CUT_WHILE_THINKING if cut else None
        raise LLMError("empty", f"no content and no tool calls ({context})", code=code)
    message = Message("assistant", text if text else None, tool_calls=calls, reasoning=reasoning)
    return Completion(
        message,
        _parse_usage(data.get("usage")),
        choice.get("finish_reason"),
        choice.get("logprobs"),
        thought=thought,
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
