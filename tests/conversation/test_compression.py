"""Compression as a QQ user sees it: status, restarts, budgets per model, errors."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import error
from tests.fakes.responders import FactKeepingLLM, is_compression_request

LINE = "周末去爬山还是去看电影？大家投票决定一下吧，我觉得爬山更好一些。"


async def talk_until_compressed(plugin, bot: RecordingBot, group_id: int, limit: int = 60) -> int:
    runtime = plugin.runtime
    for i in range(limit):
        await bot.receive(group_message(f"#fact{i}:话题{i} {LINE}", to_me=True, group_id=group_id))
        session = runtime.sessions.get(f"g:{group_id}")
        if session.bot.stats.count:
            return i
    raise AssertionError("never compressed")


async def test_status_shows_summary_size_and_compression_count(plugin) -> None:
    plugin.llm.responder = FactKeepingLLM()
    await plugin.restart(aimemory_max_context_tokens=2000)
    bot = RecordingBot()
    await talk_until_compressed(plugin, bot, 50)
    await bot.receive(group_message("~对话 状态", group_id=50))
    status = bot.sent_texts[-1]
    assert "/ 2000 tokens" in status
    assert "摘要：约 " in status
    assert "压缩次数：1（最近一次 " in status


async def test_a_restart_loads_the_compressed_window(plugin) -> None:
    from nonebot_plugin_aimemory.prompts import (
        EXTRACT_PROMPT,
        EXTRACT_SPEAKER_PROMPT,
        SUMMARY_PREFIX,
    )

    plugin.llm.responder = FactKeepingLLM()
    await plugin.restart(aimemory_max_context_tokens=2000)
    bot = RecordingBot()
    await talk_until_compressed(plugin, bot, 51)
    await plugin.restart()
    await bot.receive(group_message("~对话 状态", group_id=51))
    assert "压缩次数：1" in bot.sent_texts[-1]
    await bot.receive(group_message("还记得吗", to_me=True, group_id=51))
    chat = [
        body
        for body in plugin.llm.chat_requests
        if not is_compression_request(body)
        and body["messages"][0]["content"] not in (EXTRACT_PROMPT, EXTRACT_SPEAKER_PROMPT)
    ][-1]
    assert chat["messages"][1]["content"].startswith(SUMMARY_PREFIX)
    assert "#fact0:话题0" in chat["messages"][1]["content"]


async def test_context_length_error_with_nothing_left_to_fold_says_the_message_is_too_long(
    plugin,
) -> None:
    from nonebot_plugin_aimemory import texts

    too_long = error(400, "maximum context length exceeded", code="context_length_exceeded")
    plugin.llm.script(too_long)
    bot = RecordingBot()
    await bot.receive(group_message("一条很长的消息", to_me=True, group_id=52))
    assert bot.sent_texts == [texts.TOO_LONG]


def test_budget_comes_from_the_model_table_when_unset() -> None:
    # The table itself is specified in tests/engine/test_models.py.
    from nonebot_plugin_aimemory.config import Config

    policy = Config(aimemory_model="qwen-max").compression_policy()
    assert policy.budget_tokens == 32_768
    assert policy.keep_recent_tokens == 32_768 // 5
    assert policy.summary_max_tokens == 32_768 // 10


def test_configured_budget_wins_over_the_table() -> None:
    from nonebot_plugin_aimemory.config import Config

    policy = Config(
        aimemory_model="qwen-max", aimemory_max_context_tokens=9000
    ).compression_policy()
    assert policy.budget_tokens == 9000
