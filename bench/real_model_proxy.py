"""The real-model bench's recording proxy: the fake OpenAI server of tests/fakes (which
validates every request as real providers do) forwarding each chat completion to a real
OpenAI-compatible server, and keeping every request with its response, its role (main,
compressor, extractor, reviewer) and the turn it was made in."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from bench import harness as h
from tests.fakes.openai_server import (
    FakeOpenAI,
    Reply,
    client_gone_check,
    drop,
    error,
    raw,
    validate_chat_request,
)

# The system-prompt phrases that tell the plugin's background roles apart; a request whose
# system prompt has none of them is the main chat's.
ROLE_MARKS = (
    ("compressor", "对话压缩器"),
    ("extractor", "提取值得长期记住"),
    ("reviewer", "整理长期记忆"),
    ("guard", "You classify notes for a chat bot's shared memory"),
)
ROLES: tuple[str, ...] = ("main", "compressor", "extractor", "reviewer", "guard")
CHAT_PATH = "/v1/chat/completions"
FORWARD_TIMEOUT_SECONDS = 600.0
# How often a forwarded request checks that the plugin still waits for it (llama.cpp's
# server checks its own clients every second), and the status kept when it did not.
HANG_UP_CHECK_SECONDS = 0.5
HUNG_UP = 499


@dataclass(frozen=True)
class Upstream:
    """Where one role's requests go: an OpenAI-compatible base URL and the model it serves,
    and fields every request is sent with (`{"temperature": 0}` for answers that do not
    change from run to run)."""

    url: str
    model: str
    fields: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """`model @ url`, printed beside every figure."""
        return f"{self.model} @ {self.url}"


@dataclass
class Exchange:
    """One chat-completions request as forwarded, with the real server's answer."""

    role: str
    request: dict[str, Any]
    status: int
    response: dict[str, Any] | None
    seconds: float
    turn: int | None
    error: str | None = None

    @property
    def message(self) -> dict[str, Any]:
        """The assistant message of the answer ({} when there is none)."""
        choices = (self.response or {}).get("choices") or [{}]
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        return message if isinstance(message, dict) else {}

    @property
    def tool_names(self) -> set[str]:
        """The names of the tools the request offered."""
        tools = self.request.get("tools") or []
        return {str((tool.get("function") or {}).get("name")) for tool in tools}

    @property
    def tool_calls(self) -> list[tuple[str, str]]:
        """(name, raw arguments) of every tool call in the answer."""
        calls = self.message.get("tool_calls") or []
        return [
            (str(f.get("name")), str(f.get("arguments") or ""))
            for f in (call.get("function") or {} for call in calls)
        ]

    @property
    def content(self) -> str:
        """The answer's text content."""
        return str(self.message.get("content") or "")

    def usage(self) -> Usage:
        """Prompt, completion and cached prompt tokens as the server reported them."""
        return Usage.of(self.response or {})


@dataclass
class Usage:
    """Tokens of one or more answers; `cached` only where the server says (None: never)."""

    prompt: int = 0
    completion: int = 0
    cached: int | None = None

    @classmethod
    def of(cls, response: dict[str, Any]) -> Usage:
        """The `usage` of a response; cached tokens from llama-server's `timings.prompt_n`
        (prompt tokens it did not have to evaluate) or OpenAI's `cached_tokens`."""
        usage = response.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        cached: int | None = None
        details = usage.get("prompt_tokens_details") or {}
        if isinstance(details, dict) and details.get("cached_tokens") is not None:
            cached = int(details["cached_tokens"])
        timings = response.get("timings") or {}
        if isinstance(timings, dict) and timings.get("prompt_n") is not None:
            cached = max(0, prompt - int(timings["prompt_n"]))
        return cls(prompt, int(usage.get("completion_tokens") or 0), cached)

    def __add__(self, other: Usage) -> Usage:
        cached = None
        if self.cached is not None or other.cached is not None:
            cached = (self.cached or 0) + (other.cached or 0)
        return Usage(self.prompt + other.prompt, self.completion + other.completion, cached)


def role_counts(exchanges: Iterable[Exchange]) -> dict[str, int]:
    """How many requests each role made."""
    return dict.fromkeys(ROLES, 0) | Counter(exchange.role for exchange in exchanges)


def classify_role(body: dict[str, Any]) -> str:
    """The plugin's role that made a request, from its system prompt (main when unknown)."""
    messages = body.get("messages") or []
    system = next((m for m in messages if isinstance(m, dict) and m.get("role") == "system"), {})
    content = system.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return next((role for role, mark in ROLE_MARKS if mark in text), "main")


@dataclass
class RecordingProxy:
    """FakeOpenAI forwarding to `upstreams` by role; every exchange is kept in `exchanges`
    (`turn` is the driver's current turn), requests the fake refused in `rejections`."""

    upstreams: dict[str, Upstream]
    role_of: Callable[[dict[str, Any]], str] = classify_role
    exchanges: list[Exchange] = field(default_factory=list)
    turn: int | None = None
    fake: FakeOpenAI = field(default_factory=lambda: FakeOpenAI(api_key=h.API_KEY))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _in_flight: int = 0
    _last_activity: float = field(default_factory=time.monotonic)
    _requests_seen: int = 0

    def __enter__(self) -> RecordingProxy:
        self.fake.responder = self.forward
        self.fake.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.fake.stop()

    @property
    def base_url(self) -> str:
        """The URL the plugin is pointed at."""
        return self.fake.base_url

    def forward(self, body: dict[str, Any]) -> Reply:
        """The fake's responder: send `body` to the role's upstream, return its bytes. When
        the plugin hangs up first (a background call stepping aside for a member's turn),
        the upstream request is closed too, as it is without the proxy: llama.cpp's server
        then stops it within a second instead of holding its one slot."""
        role = self.role_of(body)
        upstream = self.upstreams.get(role) or self.upstreams["main"]
        sent = {**body, "model": upstream.model, **dict(upstream.fields)}
        turn, started = self.turn, time.monotonic()
        with self._busy():
            try:
                answer = _post(f"{upstream.url}/chat/completions", sent, client_gone_check())
            except (OSError, http.client.HTTPException) as exc:
                self._keep(
                    Exchange(role, sent, 0, None, time.monotonic() - started, turn, repr(exc))
                )
                return error(502, f"real-model bench proxy: {exc!r}")
        seconds = time.monotonic() - started
        if answer is None:
            self._keep(Exchange(role, sent, HUNG_UP, None, seconds, turn, "the plugin hung up"))
            return drop()
        status, content, content_type = answer
        parsed: dict[str, Any] | None = None
        with contextlib.suppress(ValueError):
            loaded = json.loads(content)
            parsed = loaded if isinstance(loaded, dict) else None
        failure = None if 200 <= status < 300 else content[:500].decode("utf-8", "replace")
        self._keep(Exchange(role, sent, status, parsed, seconds, turn, failure))
        return raw(status, content, content_type)

    @contextlib.contextmanager
    def _busy(self) -> Iterator[None]:
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
                self._last_activity = time.monotonic()

    def _keep(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def new_rejections(self) -> list[str]:
        """Why the fake refused each chat request it refused since the last call."""
        reasons = []
        for request in self.fake.requests[self._requests_seen :]:
            if not request.done:
                break  # looked at again next time
            self._requests_seen += 1
            if request.path == CHAT_PATH and not request.accepted:
                body = request.body
                why = validate_chat_request(body) if isinstance(body, dict) else "not JSON"
                reasons.append(f"HTTP {request.status}: {why}")
        return reasons

    async def settle(self, quiet_seconds: float = 8.0, max_seconds: float = 600.0) -> bool:
        """Wait until no request is in flight and none ended for `quiet_seconds` (background
        extraction and reviews done); False when `max_seconds` ran out first."""
        deadline = time.monotonic() + max_seconds
        while time.monotonic() < deadline:
            with self._lock:
                idle = self._in_flight == 0
                quiet = time.monotonic() - self._last_activity >= quiet_seconds
            if idle and quiet:
                return True
            await asyncio.sleep(0.25)
        return False

    def mark_activity(self) -> None:
        """Start the quiet period now (a turn just ended: background work may follow)."""
        with self._lock:
            self._last_activity = time.monotonic()


def _post(
    url: str, body: dict[str, Any], gone: Callable[[], bool]
) -> tuple[int, bytes, str] | None:
    """POST `body` as JSON to `url`: status, body and content type; None when `gone()`
    turned true first, the upstream connection then shut so the server sees its client go."""
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.netloc, timeout=FORWARD_TIMEOUT_SECONDS)
    hung_up, finished = threading.Event(), threading.Event()

    def watch() -> None:
        while not finished.wait(HANG_UP_CHECK_SECONDS):
            if gone():
                hung_up.set()
                with contextlib.suppress(OSError, AttributeError):
                    connection.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked read
                return

    threading.Thread(target=watch, daemon=True).start()
    payload = json.dumps(body, ensure_ascii=False).encode()
    try:
        connection.request("POST", parts.path, payload, {"Content-Type": "application/json"})
        response = connection.getresponse()
        content = response.read()
        return response.status, content, response.getheader("content-type", "application/json")
    except (OSError, http.client.HTTPException):
        if hung_up.is_set():
            return None
        raise
    finally:
        finished.set()
        connection.close()
