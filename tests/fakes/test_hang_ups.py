"""A request whose client hangs up is noticed by a forwarding responder, and the real-model
bench's proxy closes its upstream request too: llama.cpp's server stops a request whose
client is gone, so a background call that steps aside for a member's turn frees the one
slot it held (engine/model_traffic.py). Without this the bench measured member turns
waiting behind reviews the plugin had already given up."""

from __future__ import annotations

import threading
import time

import httpx

from bench.harness import API_KEY
from bench.real_model_proxy import HUNG_UP, RecordingProxy, Upstream
from tests.fakes.openai_server import FakeOpenAI, Reply, client_gone_check, text

USER = {"role": "user", "content": "hello"}
WAIT_SECONDS = 5.0


class WaitsForHangUp:
    """A responder that answers only after its client hung up (or WAIT_SECONDS), noting
    how long it took to notice."""

    def __init__(self) -> None:
        self.noticed_after: float | None = None
        self.done = threading.Event()

    def __call__(self, body: dict) -> Reply:
        gone, started = client_gone_check(), time.monotonic()
        while time.monotonic() - started < WAIT_SECONDS:
            if gone():
                self.noticed_after = time.monotonic() - started
                break
            time.sleep(0.05)
        self.done.set()
        return text("too late")


def ask(base_url: str, timeout: float) -> httpx.Response:
    """A chat request to `base_url` (the fake's key, the proxy's too)."""
    return httpx.post(
        f"{base_url}/chat/completions",
        json={"model": "m", "messages": [USER]},
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=timeout,
    )


def hang_up_on(base_url: str) -> None:
    """A chat request given up after 0.3 s, as a background call stepping aside."""
    try:
        ask(base_url, 0.3)
    except httpx.TimeoutException:
        return
    raise AssertionError("the request was answered")


def test_a_responder_notices_its_client_hang_up() -> None:
    waiting = WaitsForHangUp()
    with FakeOpenAI(api_key=API_KEY) as llm:
        llm.responder = waiting
        hang_up_on(llm.base_url)
        assert waiting.done.wait(WAIT_SECONDS + 1)
    assert waiting.noticed_after is not None
    assert waiting.noticed_after < 2.0


def test_a_client_that_waits_is_not_taken_for_gone() -> None:
    with FakeOpenAI(api_key=API_KEY) as llm:
        seen: list[bool] = []

        def responder(body: dict) -> Reply:
            gone = client_gone_check()
            time.sleep(0.3)
            seen.append(gone())
            return text("ok")

        llm.responder = responder
        answer = ask(llm.base_url, 5)
    assert answer.status_code == 200
    assert seen == [False]


def test_the_bench_proxy_hangs_up_upstream_when_the_plugin_does() -> None:
    waiting = WaitsForHangUp()
    with FakeOpenAI() as upstream:  # a local model server asks for no key
        upstream.responder = waiting
        with RecordingProxy({"main": Upstream(upstream.base_url, "m")}) as proxy:
            hang_up_on(proxy.base_url)
            assert waiting.done.wait(WAIT_SECONDS + 1)
            deadline = time.monotonic() + 3
            while not proxy.exchanges and time.monotonic() < deadline:
                time.sleep(0.05)
    # the upstream saw its client go within a second or two, as llama.cpp's server would
    assert waiting.noticed_after is not None
    assert waiting.noticed_after < 3.0
    (exchange,) = proxy.exchanges
    assert (exchange.status, exchange.response) == (HUNG_UP, None)


def test_the_bench_proxy_still_forwards_an_answer() -> None:
    with FakeOpenAI() as upstream:  # a local model server asks for no key
        upstream.responder = lambda body: text("你好")
        with RecordingProxy({"main": Upstream(upstream.base_url, "m")}) as proxy:
            answer = ask(proxy.base_url, 5)
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "你好"
    (exchange,) = proxy.exchanges
    assert (exchange.status, exchange.content) == (200, "你好")
