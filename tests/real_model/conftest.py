"""The plugin talking to a real model: the fake OpenAI server still receives every request
and validates it as real providers do, then forwards it to the server named by
AIMEMORY_TEST_MODEL_URL and returns that server's answer byte for byte. Every exchange is
kept, and printed after the test (`-rP` shows it for passing tests too)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply, raw
from tests.fakes.small_model import situation

if TYPE_CHECKING:
    from tests.fakes.harness import PluginHarness

NO_MODEL = "AIMEMORY_TEST_MODEL_URL is not set: no real model to talk to"
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct"
# About 13 generated tokens/s on one slot shared with others: a request may wait its turn.
FORWARD_TIMEOUT_SECONDS = 600.0
REAL_MODEL_SETTINGS: dict[str, Any] = {
    "aimemory_request_timeout": 300.0,
    "aimemory_llm_max_retries": 0,
    # The server's context (llama-server -c 8192), so the plugin compresses before it.
    "aimemory_max_context_tokens": 8192,
    # Reviews run when a test asks for one, never in the middle of a turn.
    "aimemory_review_tick_seconds": 3600.0,
}


@dataclass(frozen=True)
class Upstream:
    """The real server: its OpenAI-compatible base URL and the model it serves."""

    url: str
    model: str


@dataclass
class Exchange:
    """One forwarded chat request and the real server's answer."""

    request: dict[str, Any]
    status: int
    answer: dict[str, Any] | None
    seconds: float

    def summary(self) -> str:
        """One line: the request's situation, then what the model sent back."""
        where = situation(self.request)
        if self.answer is None or not self.answer.get("choices"):
            return f"[{where}] HTTP {self.status} {json.dumps(self.answer, ensure_ascii=False)}"
        message = self.answer["choices"][0].get("message") or {}
        calls = [
            f"{c['function']['name']}({c['function']['arguments']})"
            for c in message.get("tool_calls") or ()
        ]
        said = json.dumps(message.get("content"), ensure_ascii=False)
        return f"[{where}] {self.seconds:.0f}s content={said} calls={calls}"


@dataclass
class Forwarder:
    """A `FakeOpenAI` responder that sends each validated chat request to the real server
    and answers with exactly what came back."""

    upstream: Upstream
    exchanges: list[Exchange] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> Reply:
        started = time.monotonic()
        # The fake serves each request on a thread of its own: a blocking client is right here.
        with httpx.Client(timeout=FORWARD_TIMEOUT_SECONDS, trust_env=False) as client:
            response = client.post(f"{self.upstream.url}/chat/completions", json=body)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        seconds = time.monotonic() - started
        self.exchanges.append(Exchange(body, response.status_code, answer, seconds))
        content_type = response.headers.get("content-type", "application/json")
        return raw(response.status_code, response.content, content_type)


@pytest.fixture(scope="session")
def upstream() -> Upstream:
    """The real model server from the environment; the test is skipped without one."""
    url = os.environ.get("AIMEMORY_TEST_MODEL_URL", "").rstrip("/")
    if not url:
        pytest.skip(NO_MODEL)
    return Upstream(url, os.environ.get("AIMEMORY_TEST_MODEL") or DEFAULT_MODEL)


@pytest.fixture
def forwarder(upstream: Upstream) -> Iterator[Forwarder]:
    """The forwarding responder; prints the test's exchanges when the test ends."""
    forwarding = Forwarder(upstream)
    yield forwarding
    print(f"\n{len(forwarding.exchanges)} exchanges with {upstream.model} @ {upstream.url}:")
    for exchange in forwarding.exchanges:
        print("  " + exchange.summary())


@pytest.fixture
def llm(forwarder: Forwarder) -> Iterator[FakeOpenAI]:
    """The fake server, validating every request, forwarding it to the real model."""
    with FakeOpenAI(api_key="sk-test") as server:
        server.responder = forwarder
        yield server


@pytest.fixture
async def plugin(tmp_path, llm: FakeOpenAI, upstream: Upstream) -> AsyncIterator[PluginHarness]:
    """The plugin's runtime on the real model, with timeouts for a slow one."""
    from tests.fakes.harness import PluginHarness

    harness = PluginHarness(db_path=str(tmp_path / "aimemory.db"), llm=llm)
    await harness.start(aimemory_model=upstream.model, **REAL_MODEL_SETTINGS)
    yield harness
    await harness.stop()
