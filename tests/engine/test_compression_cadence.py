"""How often the window is compressed: a fold lands well below the threshold, is not
repeated on the next turn, and gives way to truncation when the system prompt and tools
leave it no room."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.engine.test_compressor import (
    LINE,
    chat,
    chat_requests,
    cl100k,
    compression_requests,
    make_bot,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.responders import FactKeepingLLM, count_prompt_tokens

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy, Compressor

# ~1 264 tokens of system prompt: the fixed part of every request, as a long persona and
# the tool definitions make it in the plugin.
LONG_SYSTEM_PROMPT = "你是测试助手。" + "回答要简短，用中文，不要使用 Markdown。" * 70
TIGHT_BUDGET = 1500  # just above LONG_SYSTEM_PROMPT: one exchange of LONG_LINE fits
LONG_LINE = LINE + LINE  # ~100 tokens, a long group-chat message with its speaker line


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test") as server:
        server.responder = FactKeepingLLM()
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def compressor(policy: CompressionPolicy) -> Compressor:
    from nonebot_plugin_aimemory.engine.compressor import Compressor
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    return Compressor(None, cl100k(), policy, prompts=SUMMARY_PROMPTS)  # type: ignore[arg-type]


def summary_frame_tokens() -> int:
    """Tokens of the summary's two messages around an empty summary."""
    from nonebot_plugin_aimemory.engine.compressor import summary_messages
    from nonebot_plugin_aimemory.engine.tokens import message_tokens
    from nonebot_plugin_aimemory.prompts import SUMMARY_PROMPTS

    return sum(message_tokens(m, cl100k()) for m in summary_messages("", SUMMARY_PROMPTS))


def fixed_tokens(bot: ChatBot) -> int:
    return bot.estimate_window_tokens() - bot.window.tokens


async def turns_that_compressed(bot: ChatBot, llm: FakeOpenAI, turns: int) -> list[int]:
    """Talk `turns` turns of LONG_LINE; the turns that sent the compressor anything."""
    compressed = []
    for turn in range(turns):
        before = len(compression_requests(llm))
        await chat(bot, f"{LONG_LINE} {turn}")
        if len(compression_requests(llm)) > before:
            compressed.append(turn)
    return compressed


# --------------------------------------------------------------------------- where a fold lands


def test_the_default_tail_is_a_fifth_of_the_budget_beside_a_small_fixed_prompt() -> None:
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy

    assert compressor(CompressionPolicy.for_budget(8000)).tail_tokens(50) == 1600


def test_the_default_tail_shrinks_so_a_fold_lands_at_half_the_budget() -> None:
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy

    # given an 8k budget whose fixed prompt takes 3 000 tokens
    policy = CompressionPolicy.for_budget(8000)
    # when the tail is sized
    tail = compressor(policy).tail_tokens(3000)
    # then fixed prompt + summary at its cap + tail is half the budget
    assert 0 < tail < policy.keep_recent_tokens
    assert 3000 + policy.summary_max_tokens + summary_frame_tokens() + tail == 4000


def test_an_explicit_tail_is_kept_as_set_when_the_fold_stays_under_the_threshold() -> None:
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy

    policy = CompressionPolicy.for_budget(8000, keep_recent_tokens=3000)
    assert compressor(policy).tail_tokens(1000) == 3000


def test_an_explicit_tail_is_cut_only_to_keep_the_fold_under_the_threshold() -> None:
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy

    policy = CompressionPolicy.for_budget(8000, keep_recent_tokens=7000)
    tail = compressor(policy).tail_tokens(1000)
    assert 1000 + policy.summary_max_tokens + summary_frame_tokens() + tail == 6400


def test_an_explicit_keep_recent_setting_is_not_fitted_to_the_landing_point() -> None:
    from nonebot_plugin_aimemory.config import Config

    explicit = Config(aimemory_compress_keep_recent_tokens=3000).compression_policy()
    default = Config().compression_policy()
    assert (explicit.keep_recent_tokens, explicit.fit_tail) == (3000, False)
    assert default.fit_tail


async def test_a_fold_beside_a_long_system_prompt_lands_at_half_the_budget(
    llm, http, store
) -> None:
    # given a 4k budget of which the system prompt takes over a quarter, a summary that
    # comes out at its cap, and a full window
    llm.responder = FactKeepingLLM(padding="\n- 冗长的重复内容" * 400)
    system_prompt = "你是测试助手。" + "回答要简短，用中文，不要使用 Markdown。" * 60
    bot = make_bot(llm, http, store, budget=4000, system_prompt=system_prompt)
    for i in range(40):
        await chat(bot, f"{LINE} {i}")
        if bot.estimate_window_tokens() > 3000:
            break
    assert bot.stats.count == 0
    # when the window is folded
    await bot.compact(reason="test")
    # then the next request would hold at most half the budget, a verbatim tail included
    assert bot.stats.count == 1
    assert bot.estimate_window_tokens() <= 2000
    assert bot.window.messages[2:]


async def test_a_system_prompt_above_the_landing_point_still_leaves_a_verbatim_tail(
    llm, http, store
) -> None:
    # given a 2k budget whose system prompt (~1 030 tokens) is above where a fold lands beside
    # a small one (1 000), as the plugin's prompt and tools are (a real 1.5B model's run)
    system_prompt = "你是测试助手。" + "回答要简短，用中文，不要使用 Markdown。" * 57
    bot = make_bot(
        llm, http, store, budget=2000, system_prompt=system_prompt, summary_max_tokens=300
    )
    await chat(bot, LONG_LINE)
    assert bot.compressor is not None
    assert fixed_tokens(bot) > bot.compressor.policy.landing_tokens
    # when a member tells a fact on each of 30 turns (fewer than a summary at its cap holds)
    for i in range(30):
        await chat(bot, f"#fact{i}:事{i} {LONG_LINE}")
    # then a fold keeps the latest exchanges verbatim (it kept none: the window was the
    # summary alone), and every fact is in the summary or the window
    assert bot.stats.count >= 2
    assert bot.compressor.tail_tokens(fixed_tokens(bot)) > 0
    kept = (bot.summary or "") + "".join(m.text for m in bot.window.messages)
    assert [i for i in range(30) if f"#fact{i}:事{i}" not in kept] == []


# --------------------------------------------------------------------------- cadence


async def test_a_just_folded_window_is_not_folded_again_when_the_api_still_counts_it_over(
    llm, http, store
) -> None:
    # given a window folded at the start of the last turn, whose long message then made
    # the verbatim part longer than the tail a fold keeps
    bot = make_bot(llm, http, store, budget=2000)
    for i in range(12):
        await chat(bot, f"{LINE} {i}")
    bot.context_tokens = 1900
    await chat(bot, f"{LONG_LINE} 继续")
    assert bot.stats.count == 1
    calls = len(compression_requests(llm))
    # when the API reports the prompt over the threshold again (it counts more than the
    # tokenizer) and the next turn runs
    bot.context_tokens = 1900
    await chat(bot, "然后呢")
    # then the window is not folded again: it did not grow since
    assert len(compression_requests(llm)) == calls
    assert bot.stats.count == 1


async def test_no_compress_every_turn_at_a_budget_just_above_the_fixed_prompt(
    llm, http, store
) -> None:
    # given a budget a couple of exchanges above the system prompt
    bot = make_bot(llm, http, store, budget=TIGHT_BUDGET, system_prompt=LONG_SYSTEM_PROMPT)
    await chat(bot, LONG_LINE)
    assert 0 < TIGHT_BUDGET - fixed_tokens(bot) < 300
    # when 45 turns are taken
    compressed = await turns_that_compressed(bot, llm, 45)
    # then the compressor ran, but never on two turns in a row, and on at most a third
    assert compressed
    assert not [turn for turn in compressed if turn + 1 in compressed]
    assert len(compressed) <= 45 // 3


async def test_requests_stay_within_a_budget_just_above_the_fixed_prompt(llm, http, store) -> None:
    bot = make_bot(llm, http, store, budget=TIGHT_BUDGET, system_prompt=LONG_SYSTEM_PROMPT)
    await turns_that_compressed(bot, llm, 45)
    sizes = [count_prompt_tokens(body["messages"]) for body in chat_requests(llm)]
    assert max(sizes) <= TIGHT_BUDGET


async def test_a_fold_that_falls_short_is_followed_by_truncation_not_another_fold(
    llm, http, store
) -> None:
    # given a fold that left the request above where it aims (the system prompt is most of it)
    bot = make_bot(llm, http, store, budget=TIGHT_BUDGET, system_prompt=LONG_SYSTEM_PROMPT)
    for i in range(10):
        await chat(bot, f"#fact{i}:事{i} {LONG_LINE}")
        if bot.stats.count:
            break
    assert bot.stats.count == 1
    calls = len(compression_requests(llm))
    # when the conversation goes on until the window has to shrink
    for i in range(10):
        length = len(bot.window)
        await chat(bot, f"{LONG_LINE} 后来{i}")
        if len(bot.window) < length + 2:
            break
    else:
        pytest.fail("the window never shrank")
    # then it was truncated: no compressor call, the summary kept, a valid window
    assert len(compression_requests(llm)) == calls
    assert bot.stats.count == 1
    assert "#fact0:事0" in (bot.summary or "")
    assert bot.window.messages[2].role == "user"


async def test_folding_resumes_once_the_conversation_grew_by_the_refold_tokens(
    llm, http, store
) -> None:
    from nonebot_plugin_aimemory.engine.tokens import message_tokens

    # given a fold that fell short of its landing point
    bot = make_bot(llm, http, store, budget=TIGHT_BUDGET, system_prompt=LONG_SYSTEM_PROMPT)
    assert bot.compressor is not None
    refold_tokens = bot.compressor.aim(fixed_tokens(bot)).refold_tokens
    while bot.stats.count == 0:
        await chat(bot, LONG_LINE)
    # when the conversation goes on until the next fold
    said_since = sum(message_tokens(m, cl100k()) for m in bot.window.messages[-2:])
    for i in range(30):
        await chat(bot, f"{LONG_LINE} {i}")
        if bot.stats.count == 2:
            break
        said_since += sum(message_tokens(m, cl100k()) for m in bot.window.messages[-2:])
    else:
        pytest.fail("never folded again")
    # then it came only after the conversation had added the refold amount
    assert said_since >= refold_tokens


# --------------------------------------------------------------------------- the cadence itself


def test_growth_before_a_truncation_counts_toward_the_next_fold() -> None:
    from nonebot_plugin_aimemory.engine.cadence import FoldCadence
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy

    # given a fold that fell short, after which the window grew by 150 tokens (100 → 250)
    # and was truncated to 150
    policy = CompressionPolicy.for_budget(1000)
    cadence = FoldCadence()
    cadence.after_fold(100, 900, policy.aim())
    assert cadence.fell_short
    cadence.after_truncation(250, 150)
    still_needed = policy.aim().refold_tokens - 150
    # when the window grows by what is still needed, then (not before) it may fold again
    assert not cadence.may_fold(150 + still_needed - 1)
    assert cadence.may_fold(150 + still_needed)


def test_a_window_cleared_after_a_fold_may_fold_at_once() -> None:
    from nonebot_plugin_aimemory.engine.cadence import FoldCadence
    from nonebot_plugin_aimemory.engine.compressor import CompressionPolicy

    cadence = FoldCadence()
    cadence.after_fold(300, 900, CompressionPolicy.for_budget(1000).aim())
    assert not cadence.due(310)
    assert cadence.due(0)
    assert cadence.may_fold(0)
