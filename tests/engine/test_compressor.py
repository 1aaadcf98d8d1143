"""Rolling compression of the window: when it triggers, what it keeps, how it falls back."""

from __future__ import annotations

import asyncio
import functools
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply, error, raw, text, tool_calls
from tests.fakes.responders import FactKeepingLLM, count_prompt_tokens, is_compression_request

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.hooks import PreCompactHooks
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter
    from nonebot_plugin_aimemory.engine.tools import Tool
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

LINE = "今天群里聊了很多关于周末去爬山的安排，大家各有想法，讨论得很热烈。"


@functools.cache
def cl100k() -> TiktokenCounter:
    """The tokenizer every budget here is measured with, loaded once."""
    from nonebot_plugin_aimemory.engine.tokens import TiktokenCounter

    counter = TiktokenCounter()
    counter.load()
    return counter


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def make_bot(
    llm: FakeOpenAI,
    http: httpx.AsyncClient,
    store: DatabaseHistoryStore,
    *,
    budget: int = 2000,
    hooks: PreCompactHooks | None = None,
    compressor_model: str = "fake-model",
    tools: Sequence[Tool] = (),
    system_prompt: str = "你是测试助手。",
    **policy: int,
) -> ChatBot:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy, Compressor
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    client = LLMClient(
        http,
        Endpoint(llm.base_url, "sk-test", "fake-model"),
        timeout_seconds=2,
        max_retries=0,
        backoff_seconds=0.01,
    )
    compressor_client = LLMClient(
        http,
        Endpoint(llm.base_url, "sk-test", compressor_model),
        timeout_seconds=2,
        max_retries=0,
    )
    compressor = Compressor(
        compressor_client,
        cl100k(),
        CompressionPolicy.for_budget(budget, **policy),
        hooks,
        prompts=SUMMARY_PROMPTS,
    )
    return ChatBot(
        "g:1",
        llm=client,
        store=store,
        counter=cl100k(),
        system_prompt=system_prompt,
        tools=ToolRegistry(tools),
        compressor=compressor,
    )


def compression_requests(llm: FakeOpenAI) -> list[dict]:
    return [body for body in llm.chat_requests if is_compression_request(body)]


def chat_requests(llm: FakeOpenAI) -> list[dict]:
    return [body for body in llm.chat_requests if not is_compression_request(body)]


async def chat(bot: ChatBot, content: str):
    from nonebot_plugin_aimemory.engine.messages import Message

    return await bot.turn(Message("user", content))


def scripted(
    *, chat: Sequence[Reply] = (), compress: Sequence[Reply] = ()
) -> Callable[[dict[str, Any]], Reply]:
    """A responder playing `chat` to chat requests and `compress` to compression requests, in
    order, then behaving as FactKeepingLLM: a failure can be aimed at one kind of call."""
    fallback = FactKeepingLLM()
    queues = {True: deque(compress), False: deque(chat)}

    def respond(body: dict[str, Any]) -> Reply:
        queue = queues[is_compression_request(body)]
        return queue.popleft() if queue else fallback(body)

    return respond


def weather_tool() -> Tool:
    from nonebot_plugin_aimemory.engine.tools import Tool

    async def get_weather(arguments: dict[str, Any]) -> str:
        return "晴，25 度"

    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    return Tool("get_weather", "查询城市天气", get_weather, parameters)


@pytest.fixture
def llm() -> FakeOpenAI:
    with FakeOpenAI(api_key="sk-test") as server:
        server.responder = FactKeepingLLM()
        yield server


async def test_compression_fires_on_the_first_turn_after_a_prompt_over_the_threshold(
    llm, http, store
) -> None:
    # given a 2000-token budget: compression is due once a prompt exceeds 80 % of it
    budget = 2000
    trigger_tokens = budget * 0.8
    bot = make_bot(llm, http, store, budget=budget)
    turns_below = 0
    for turn in range(40):
        # the prompt size the server reported for the last request (FactKeepingLLM's usage)
        sent = chat_requests(llm)
        last_prompt = count_prompt_tokens(sent[-1]["messages"]) if sent else 0
        assert bot.context_tokens == last_prompt
        # when the next turn is taken
        await chat(bot, f"{LINE} 第{turn}轮")
        compressed = bool(compression_requests(llm))
        # then no turn compresses while the last prompt was within the threshold...
        if last_prompt <= trigger_tokens:
            assert not compressed, f"turn {turn} compressed after a {last_prompt}-token prompt"
            turns_below += 1
            continue
        # ...and the first turn after a prompt over it does, before sending its own request
        assert compressed, f"turn {turn} did not compress after a {last_prompt}-token prompt"
        break
    else:
        pytest.fail("no prompt crossed the threshold within 40 turns")
    assert turns_below > 3
    assert len(compression_requests(llm)) == 1
    assert is_compression_request(llm.chat_requests[-2])
    assert bot.stats.count == 1


async def test_next_request_carries_the_summary_and_acknowledgment(llm, http, store) -> None:
    from nonebot_plugin_aimemory.prompts import SUMMARY_ACK, SUMMARY_PREFIX

    bot = make_bot(llm, http, store, budget=2000)
    await chat(bot, f"#fact1:小明吃素 {LINE}")
    for i in range(30):
        await chat(bot, f"{LINE} {i}")
        if bot.stats.count:
            break
    messages = chat_requests(llm)[-1]["messages"]
    assert messages[0]["role"] == "system"
    assert messages[1]["role"] == "user"
    assert messages[1]["content"].startswith(SUMMARY_PREFIX)
    assert "#fact1:小明吃素" in messages[1]["content"]
    assert messages[2] == {"role": "assistant", "content": SUMMARY_ACK}
    assert sum(1 for m in messages if m["role"] == "system") == 1


async def test_verbatim_tail_is_kept_and_starts_with_a_user_message(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000)
    for i in range(30):
        await chat(bot, f"{LINE} 编号{i}")
        if bot.stats.count:
            last_turn = i
            break
    window = bot.window.messages
    assert window[2].role == "user"
    # The turn that triggered compression and the one before it are verbatim.
    assert window[-2].text.endswith(f"编号{last_turn}")
    assert any(m.text.endswith(f"编号{last_turn - 1}") for m in window[2:])
    tail_tokens = sum(m.tokens for m in window[2:-2])
    assert tail_tokens <= 2000 // 5


async def test_compressed_window_is_what_loads_after_a_restart(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000)
    for i in range(30):
        await chat(bot, f"#fact{i}:事{i} {LINE}")
        if bot.stats.count:
            break
    reloaded = make_bot(llm, http, store, budget=2000)
    await reloaded.load()
    assert [m.to_api() for m in reloaded.window.messages] == [
        m.to_api() for m in bot.window.messages
    ]
    assert reloaded.stats.count == 1
    assert reloaded.summary is not None


async def test_a_fact_survives_three_compressions(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000)
    await chat(bot, f"#fact0:小红的生日是三月三日 {LINE}")
    turns = 0
    while bot.stats.count < 3 and turns < 200:
        await chat(bot, f"{LINE} {turns}")
        turns += 1
    assert bot.stats.count >= 3
    assert "#fact0:小红的生日是三月三日" in (bot.summary or "")
    assert "#fact0:小红的生日是三月三日" in chat_requests(llm)[-1]["messages"][1]["content"]


async def test_summary_stays_under_its_cap_over_twenty_compressions(llm, http, store) -> None:
    llm.responder = FactKeepingLLM(padding="\n- 冗长的重复内容" * 400)
    bot = make_bot(llm, http, store, budget=2000, summary_max_tokens=150)
    turns = 0
    while bot.stats.count < 20 and turns < 600:
        await chat(bot, f"#fact{turns}:事项{turns} {LINE}")
        turns += 1
    assert bot.stats.count >= 20
    assert cl100k().count(bot.summary or "") <= 150


async def test_compressor_failure_truncates_and_the_next_request_is_valid(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000)
    for i in range(12):
        await chat(bot, f"{LINE} {i}")
    before = len(bot.window)
    bot.context_tokens = 1900  # over the threshold: the next turn compresses first
    llm.script(error(500))  # the compressor call fails
    result = await chat(bot, "还记得吗")
    assert result.reply == "好的"
    assert bot.stats.count == 0
    assert len(bot.window) < before + 2
    assert bot.window.messages[0].role == "user"
    # The request after the truncation was accepted by the strict fake server.
    assert chat_requests(llm)[-1]["messages"][1]["role"] == "user"


async def test_garbage_compressor_output_also_falls_back(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000)
    for i in range(12):
        await chat(bot, f"{LINE} {i}")
    bot.context_tokens = 1900
    llm.script(raw(200, "not json at all"))
    result = await chat(bot, "继续")
    assert result.reply == "好的"
    assert bot.context_tokens > 0  # the reply's usage set it again after the fallback


async def test_context_length_error_is_recovered_by_compressing(llm, http, store) -> None:
    from nonebot_plugin_aimemory.prompts import SUMMARY_PREFIX

    bot = make_bot(llm, http, store, budget=100_000)
    for i in range(8):
        await chat(bot, f"#fact{i}:事{i} {LINE}")
    llm.script(
        error(
            400,
            "This model's maximum context length is 1000 tokens.",
            code="context_length_exceeded",
        )
    )
    result = await chat(bot, "现在呢？")
    assert result.reply == "好的"
    assert result.compressions == 1
    messages = chat_requests(llm)[-1]["messages"]
    assert messages[1]["content"].startswith(SUMMARY_PREFIX)
    assert messages[-1]["content"] == "现在呢？"


async def test_unrecoverable_context_length_error_raises_a_context_error(llm, http, store) -> None:
    from nonebot_plugin_aimemory.engine.errors import LLMError

    bot = make_bot(llm, http, store, budget=100_000)
    await chat(bot, LINE)
    too_long = error(400, "maximum context length exceeded", code="context_length_exceeded")
    llm.script(too_long, text("摘要"), too_long)
    with pytest.raises(LLMError) as caught:
        await chat(bot, "很长的消息")
    assert caught.value.kind == "context_length"


async def test_a_request_estimated_over_budget_compresses_inside_the_turn(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000)
    for i in range(4):
        await chat(bot, f"#fact{i}:事{i} {LINE}")
    assert bot.stats.count == 0
    paste = "这是一段很长的粘贴内容。" * 130  # ~1800 tokens: window + paste exceed the budget
    await chat(bot, paste)
    assert bot.stats.count == 1
    assert chat_requests(llm)[-1]["messages"][-1]["content"] == paste


async def test_oversize_input_is_folded_in_chunks(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=4000, chunk_tokens=300, keep_recent_tokens=0)
    for i in range(12):
        await chat(bot, f"#fact{i}:事项{i} {LINE}")
    await bot.compact(reason="test")
    calls = compression_requests(llm)
    assert len(calls) >= 3
    # Each chunk's call carries the summary so far: the last summary has every fact.
    for i in range(12):
        assert f"#fact{i}:事项{i}" in (bot.summary or "")


async def test_precompact_receives_exactly_the_folded_messages_and_not_the_tail(
    llm, http, store
) -> None:
    from nonebot_plugin_aimemory.engine.hooks import PreCompactHooks
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tokens import message_tokens

    # given a verbatim tail of exactly the last two turns
    hooks = PreCompactHooks(wait_seconds=1)
    received: list[tuple[str, list[Message]]] = []

    @hooks.register
    async def remember(key, messages):
        received.append((key, list(messages)))

    said = [f"{LINE} 编号{i}" for i in range(6)]
    last_two_turns = [
        message
        for line in said[-2:]
        for message in (Message("user", line), Message("assistant", "好的"))
    ]
    keep = sum(message_tokens(m, cl100k()) for m in last_two_turns)
    bot = make_bot(llm, http, store, budget=4000, hooks=hooks, keep_recent_tokens=keep)
    for line in said:
        await chat(bot, line)
    window_before = list(bot.window.messages)
    assert window_before[-4:] == last_two_turns
    # when the window is compressed
    await bot.compact(reason="test")
    # then the hook saw the folded messages, exactly, and none of the tail
    assert len(received) == 1
    key, folded = received[0]
    assert key == "g:1"
    assert folded == window_before[:-4]
    assert [m.text for m in folded if m.role == "user"] == said[:-2]
    assert bot.window.messages[2:] == last_two_turns


async def test_precompact_is_told_every_message_a_failed_fold_drops_once(llm, http, store) -> None:
    from nonebot_plugin_aimemory.engine.hooks import PreCompactHooks
    from nonebot_plugin_aimemory.engine.tokens import message_tokens

    hooks = PreCompactHooks(wait_seconds=1)
    told: list = []

    @hooks.register
    async def remember(key, messages):
        told.extend(messages)

    # given a fold of the two oldest of eight turns that fails, so the window is truncated
    # instead: its oldest half dropped, two turns more than the fold had announced
    bot = make_bot(llm, http, store, budget=4000, hooks=hooks)
    for i in range(8):
        await chat(bot, f"{LINE} 编号{i}")
    before = list(bot.window.messages)
    tail = sum(message_tokens(m, cl100k()) for m in before[4:])
    llm.script(error(500))
    await bot._compact(reason="test", keep_recent_tokens=tail)

    # then every message that left the window was told, and none twice
    kept = {m.text for m in bot.window.messages if m.role == "user"}
    left = [m.text for m in before if m.role == "user" and m.text not in kept]
    told_users = [m.text for m in told if m.role == "user"]
    assert len(left) == 4
    assert set(left) <= set(told_users)
    assert len(told_users) == len(set(told_users))


async def test_a_raising_or_slow_precompact_callback_does_not_stop_compression(
    llm, http, store
) -> None:
    from nonebot_plugin_aimemory.engine.hooks import PreCompactHooks

    hooks = PreCompactHooks(wait_seconds=0.1)

    @hooks.register
    async def broken(key, messages):
        raise RuntimeError("boom")

    @hooks.register
    async def slow(key, messages):
        await asyncio.sleep(5)

    bot = make_bot(llm, http, store, budget=4000, hooks=hooks, keep_recent_tokens=0)
    for i in range(3):
        await chat(bot, f"{LINE} {i}")
    started = asyncio.get_running_loop().time()
    await bot.compact(reason="test")
    assert asyncio.get_running_loop().time() - started < 2
    assert bot.stats.count == 1
    await hooks._background.close(cancel=True)


async def test_nothing_is_folded_when_the_window_fits_in_the_tail(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000)
    await chat(bot, LINE)
    bot.context_tokens = 1900  # e.g. a huge system prompt: folding the window cannot help
    await chat(bot, "继续")
    assert compression_requests(llm) == []
    assert bot.window.messages[0].text == LINE
    assert bot.stats.count == 0


async def test_compressor_usage_is_counted_in_the_turn(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000)
    for i in range(12):
        await chat(bot, f"{LINE} {i}")
    bot.context_tokens = 1900
    result = await chat(bot, "继续")
    assert result.compressions == 1
    chat_prompt = chat_requests(llm)[-1]
    reply_usage = FactKeepingLLM().count_tokens(chat_prompt["messages"])
    assert result.usage.prompt_tokens == reply_usage + 100
    assert result.tool_rounds == 0


async def test_a_separate_compressor_model_is_used_for_compression(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=2000, compressor_model="cheap-model")
    for i in range(3):
        await chat(bot, f"{LINE} {i}")
    await bot.compact(reason="test", keep_recent_tokens=0)
    assert compression_requests(llm)[-1]["model"] == "cheap-model"
    assert all(b["model"] == "fake-model" for b in chat_requests(llm))


async def test_an_over_long_summary_is_shortened_by_the_model_first(llm, http, store) -> None:
    llm.responder = FactKeepingLLM(padding="\n- 冗长的重复内容" * 200)
    bot = make_bot(llm, http, store, budget=4000, summary_max_tokens=300)
    for i in range(6):
        await chat(bot, f"#fact{i}:事项{i} {LINE}")
    llm.responder = FactKeepingLLM()  # the shortening call obeys
    llm.script(
        text("事实：\n" + "\n".join(f"- #fact{i}:事项{i}" for i in range(6)) + "\n- 冗长" * 300)
    )
    await bot.compact(reason="test", keep_recent_tokens=0)
    shorten_calls = [
        b for b in compression_requests(llm) if "太长了" in b["messages"][0]["content"]
    ]
    assert len(shorten_calls) == 1
    for i in range(6):
        assert f"#fact{i}:事项{i}" in (bot.summary or "")
    assert cl100k().count(bot.summary or "") <= 300


async def test_a_shortened_summary_that_lost_the_details_gives_way_to_a_hard_cut(
    llm, http, store
) -> None:
    llm.responder = FactKeepingLLM(padding="\n- 冗长的重复内容" * 200)
    bot = make_bot(llm, http, store, budget=4000, summary_max_tokens=300)
    for i in range(6):
        await chat(bot, f"#fact{i}:杭州{i}号 {LINE}")
    long_summary = "事实：\n" + "\n".join(f"- #fact{i}:杭州{i}号" for i in range(6))
    # The fold answers too long; the shortening call then drops every concrete detail.
    llm.script(
        text(long_summary + "\n- 冗长" * 300), text("事实：\n- 大家聊了几件事，有人要出差。")
    )
    await bot.compact(reason="test", keep_recent_tokens=0)
    summary = bot.summary or ""
    assert "有人要出差" not in summary
    assert "#fact" in summary
    assert cl100k().count(summary) <= 300


def test_details_kept_counts_numbers_latin_words_and_han_pairs() -> None:
    from nonebot_plugin_aimemory.engine.summary_cap import details_kept

    original = "小明下周三去杭州出差，住 Hilton 酒店 1203 房。"
    assert details_kept(original, original) > details_kept(original, "小明要出差。")
    assert details_kept(original, "小明周三去杭州，住 hilton 1203。") > details_kept(
        original, "小明下周要出差，住酒店。"
    )
    assert details_kept(original, "") == 0


def test_hard_cut_keeps_section_headers_and_drops_the_oldest_items_first() -> None:
    from nonebot_plugin_aimemory.engine.compressor import cap_summary

    facts = "\n".join(f"- 第{i}条事实，内容比较长一些" for i in range(40))
    summary = f"事实：\n{facts}\n决定：\n- 周五聚餐\n待办与未决：\n- 订餐厅"
    cut = cap_summary(summary, 120, cl100k())
    assert cl100k().count(cut) <= 120
    assert "事实：" in cut
    assert "决定：\n- 周五聚餐" in cut
    assert "待办与未决：\n- 订餐厅" in cut
    assert "第39条" in cut
    assert "第0条" not in cut


# --------------------------------------------------------------------------- context-length errors


def vllm_error(message: str) -> Reply:
    """vLLM's own error body (not OpenAI's `{"error": ...}` wrapper)."""
    body = {"object": "error", "message": message, "type": "BadRequestError", "param": None}
    return raw(400, json.dumps({**body, "code": 400}))


CONTEXT_LENGTH_ERRORS = [
    pytest.param(
        raw(
            400,
            json.dumps(
                {
                    "code": "InvalidParameter",
                    "message": "<400> InternalError.Algo.InvalidParameter: "
                    "Range of input length should be [1, 30720]",
                    "request_id": "0f4b2c1e",
                }
            ),
        ),
        id="dashscope",
    ),
    pytest.param(
        error(400, "Range of input length should be [1, 30720]", code="invalid_parameter_error"),
        id="dashscope-compatible-mode",
    ),
    pytest.param(
        vllm_error(
            "This model's maximum context length is 2048 tokens. However, you requested 2136 "
            "tokens (2036 in the messages, 100 in the completion). Please reduce the length of "
            "the messages or completion."
        ),
        id="vllm",
    ),
    pytest.param(
        vllm_error(
            "The decoder prompt (length 2136) is longer than the maximum model length of 2048. "
            "Make sure that `max_model_len` is no smaller than the number of text tokens."
        ),
        id="vllm-decoder-prompt",
    ),
    pytest.param(
        error(
            400,
            "Input length (2136) exceeds maximum context length (2048).",
            type="BadRequestError",
        ),
        id="vllm-input-length",
    ),
    pytest.param(
        error(
            400,
            "This model's maximum context length is 65536 tokens. However, you requested 70000 "
            "tokens (70000 in the messages, 0 in the completion). Please reduce the length of "
            "the messages or completion.",
        ),
        id="deepseek",
    ),
    pytest.param(
        error(400, "Invalid request.", code="context_length_exceeded"), id="openai-code-only"
    ),
    pytest.param(
        raw(
            400,
            '{"error":{"code":400,"message":"the request exceeds the available context size. '
            'try increasing the context size or enable context shift",'
            '"type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}',
        ),
        id="llama-cpp",
    ),
    pytest.param(
        error(
            400,
            "request (4390 tokens) exceeds the available context size (4096 tokens), "
            "try increasing it",
            type="exceed_context_size_error",
        ),
        id="llama-cpp-newer",
    ),
    pytest.param(error(400, "context window exceeded"), id="ollama"),
]


@pytest.mark.parametrize("overflow", CONTEXT_LENGTH_ERRORS)
async def test_each_servers_context_length_error_is_recovered_by_one_retry(
    llm, http, store, overflow: Reply
) -> None:
    from nonebot_plugin_aimemory.prompts import SUMMARY_PREFIX

    # given a conversation with some history, and a server that rejects the next request
    bot = make_bot(llm, http, store, budget=100_000)
    for i in range(3):
        await chat(bot, f"{LINE} {i}")
    sent_before = len(chat_requests(llm))
    llm.script(overflow)
    # when the user speaks
    result = await chat(bot, "现在呢？")
    # then the window was compressed and the request sent once more, and answered
    assert result.reply == "好的"
    assert result.compressions == 1
    assert len(compression_requests(llm)) == 1
    assert len(chat_requests(llm)) - sent_before == 2
    retried = chat_requests(llm)[-1]["messages"]
    assert retried[1]["content"].startswith(SUMMARY_PREFIX)
    assert retried[-1]["content"] == "现在呢？"


async def test_a_context_length_error_in_a_later_tool_round_is_recovered_too(
    llm, http, store
) -> None:
    from nonebot_plugin_aimemory.prompts import SUMMARY_PREFIX

    # given a turn whose first request overflows (recovered by truncating: the compressor is
    # down) and whose tool round's request overflows as well
    bot = make_bot(llm, http, store, budget=100_000, tools=[weather_tool()])
    for i in range(8):
        await chat(bot, f"#fact{i}:事{i} {LINE}")
    too_long = error(400, "maximum context length exceeded", code="context_length_exceeded")
    llm.responder = scripted(
        chat=[too_long, tool_calls(("get_weather", {"city": "北京"})), too_long],
        compress=[error(500)],
    )
    # when the user asks something that needs the tool
    result = await chat(bot, "北京天气怎么样？")
    # then each overflowing request got its own retry and the turn answered
    assert result.reply == "好的"
    assert result.tool_rounds == 1
    assert result.compressions == 2  # a truncation, then a summary
    assert bot.stats.count == 1
    final = chat_requests(llm)[-1]["messages"]
    assert final[1]["content"].startswith(SUMMARY_PREFIX)
    assert [m["role"] for m in final[-3:]] == ["user", "assistant", "tool"]


async def test_a_context_length_error_that_compression_cannot_shrink_is_raised_without_retry(
    llm, http, store
) -> None:
    from nonebot_plugin_aimemory.engine.errors import ContextLengthError

    # given a window that is nothing but a summary: there is nothing left to fold or drop
    bot = make_bot(llm, http, store, budget=100_000)
    await chat(bot, f"#fact0:小明吃素 {LINE}")
    await bot.compact(reason="test", keep_recent_tokens=0)
    assert bot.window.messages[2:] == []
    sent_before = len(chat_requests(llm))
    too_long = error(400, "maximum context length exceeded", code="context_length_exceeded")
    llm.responder = scripted(chat=[too_long, too_long])
    # when the next request overflows
    with pytest.raises(ContextLengthError):
        await chat(bot, "很长的消息")
    # then the identical request was not sent again, and no compression was counted
    assert len(chat_requests(llm)) - sent_before == 1
    assert bot.stats.count == 1


# --------------------------------------------------------------------------- accounting


async def test_usage_of_chunks_folded_before_a_failure_is_counted_in_the_turn(
    llm, http, store
) -> None:
    # given a window folded in chunks, whose first chunk is summarised (and then shortened)
    # while the second chunk's call fails
    bot = make_bot(
        llm,
        http,
        store,
        budget=4000,
        chunk_tokens=300,
        keep_recent_tokens=0,
        summary_max_tokens=100,
    )
    for i in range(12):
        await chat(bot, f"{LINE} {i}")
    chunk_usage = {"prompt_tokens": 300, "completion_tokens": 200}
    shorten_usage = {"prompt_tokens": 210, "completion_tokens": 40}
    llm.responder = scripted(
        compress=[
            text("事实：\n" + "- 很长的摘要条目\n" * 80, usage=chunk_usage),
            text("事实：\n- 短摘要", usage=shorten_usage),
            error(500),
        ]
    )
    bot.context_tokens = 3900  # over the threshold: the turn compresses first
    # when the turn runs
    result = await chat(bot, "继续")
    # then the window was truncated, and the two calls that answered are in the turn's usage
    assert bot.stats.count == 0
    assert len(compression_requests(llm)) == 3
    reply_prompt = count_prompt_tokens(chat_requests(llm)[-1]["messages"])
    assert result.usage.prompt_tokens == reply_prompt + 300 + 210
    assert result.usage.completion_tokens == 5 + 200 + 40


async def test_a_compaction_that_folds_nothing_is_not_counted(llm, http, store) -> None:
    # given a window that fits in the verbatim tail, and a prompt over the threshold (a huge
    # system prompt, say)
    bot = make_bot(llm, http, store, budget=2000)
    await chat(bot, LINE)
    bot.context_tokens = 1900
    # when the next turn runs
    result = await chat(bot, "继续")
    # then nothing was folded, and nothing counted as a compression, in memory or stored
    assert compression_requests(llm) == []
    assert result.compressions == 0
    assert bot.stats.count == 0
    assert (await store.load_stats("g:1")).count == 0
