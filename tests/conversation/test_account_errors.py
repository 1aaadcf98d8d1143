"""Key and balance problems: while the provider rejects the key or the account, each chat
gets one short notice per 10 minutes (other messages no reply), the log says what the
provider answered, and the SUPERUSERS get one private message an hour."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import (
    deepseek_bad_key,
    deepseek_no_balance,
    error,
    text,
)


@dataclass
class FakeClock:
    """Monotonic seconds that only move when told to."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(plugin) -> FakeClock:
    fake = FakeClock()
    plugin.runtime.conversation.clock = fake
    return fake


def balance_gone(plugin) -> None:
    """Every chat request is answered with DeepSeek's 402 from now on."""
    plugin.llm.responder = lambda body: deepseek_no_balance()


def superuser_messages(bot: RecordingBot) -> list[str]:
    return [
        call.text
        for call in bot.calls
        if call.api == "send_private_msg" and str(call.data["user_id"]) == SUPERUSER_ID
    ]


async def test_a_chat_gets_one_notice_and_then_silence_for_ten_minutes(plugin, clock) -> None:
    from nonebot_plugin_aimemory import texts

    balance_gone(plugin)
    bot = RecordingBot()

    await bot.receive(private_message("在吗"))
    clock.advance(60)
    await bot.receive(private_message("在不在"))
    clock.advance(500)
    await bot.receive(private_message("人呢"))

    assert bot.sent_texts == [texts.LLM_ACCOUNT_PROBLEM]


async def test_after_ten_minutes_the_chat_is_told_again(plugin, clock) -> None:
    from nonebot_plugin_aimemory import texts

    balance_gone(plugin)
    bot = RecordingBot()

    await bot.receive(private_message("在吗"))
    clock.advance(600)
    await bot.receive(private_message("在吗"))

    assert bot.sent_texts == [texts.LLM_ACCOUNT_PROBLEM, texts.LLM_ACCOUNT_PROBLEM]


async def test_each_chat_gets_its_own_notice(plugin, clock) -> None:
    from nonebot_plugin_aimemory import texts

    balance_gone(plugin)
    bot = RecordingBot()

    await bot.receive(private_message("在吗", user_id=3001))
    await bot.receive(group_message("在吗", to_me=True, group_id=111))
    await bot.receive(private_message("在吗", user_id=3002))

    assert bot.sent_texts == [texts.LLM_ACCOUNT_PROBLEM] * 3


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        pytest.param(
            deepseek_bad_key(), "Authentication Fails, Your api key: ****abcd is invalid", id="401"
        ),
        pytest.param(deepseek_no_balance(), "Insufficient Balance", id="402"),
    ],
)
async def test_the_superusers_are_told_what_the_provider_answered(
    plugin, clock, reply, said: str
) -> None:
    plugin.llm.script(reply)
    bot = RecordingBot()

    await bot.receive(private_message("在吗"))

    (message,) = superuser_messages(bot)
    assert said in message
    assert f"HTTP {reply.status}" in message


async def test_the_superusers_get_one_message_an_hour_however_many_chats_fail(
    plugin, clock
) -> None:
    balance_gone(plugin)
    bot = RecordingBot()

    await bot.receive(private_message("在吗", user_id=3001))
    await bot.receive(group_message("在吗", to_me=True, group_id=111))
    clock.advance(3000)
    await bot.receive(private_message("在吗", user_id=3001))
    assert len(superuser_messages(bot)) == 1

    clock.advance(600)
    await bot.receive(private_message("在吗", user_id=3002))
    assert len(superuser_messages(bot)) == 2


async def test_the_superusers_are_told_even_while_the_chat_is_silent(plugin, clock) -> None:
    from nonebot_plugin_aimemory import texts

    balance_gone(plugin)
    bot = RecordingBot()
    await bot.receive(private_message("在吗"))
    # an hour on, the same chat was silenced again just before
    clock.advance(3300)
    await bot.receive(private_message("在吗"))
    clock.advance(300)

    await bot.receive(private_message("在吗"))

    assert bot.sent_texts == [texts.LLM_ACCOUNT_PROBLEM, texts.LLM_ACCOUNT_PROBLEM]
    assert len(superuser_messages(bot)) == 2


async def test_the_log_says_clearly_what_the_provider_answered(plugin, clock, plugin_log) -> None:
    plugin.llm.script(deepseek_no_balance())

    await RecordingBot().receive(private_message("在吗", user_id=3005))

    lines = [r.getMessage() for r in plugin_log.records if "key or balance" in r.getMessage()]
    assert len(lines) == 1
    assert "f:3005" in lines[0]
    assert "status=402" in lines[0]
    assert "Insufficient Balance" in lines[0]


async def test_a_message_sent_while_the_balance_was_gone_is_not_answered_later(
    plugin, clock
) -> None:
    plugin.llm.script(deepseek_no_balance(), text("好的"))
    bot = RecordingBot()

    await bot.receive(private_message("第一句"))
    await bot.receive(private_message("第二句"))

    users = [m for m in plugin.llm.last_messages() if m["role"] == "user"]
    assert len(users) == 1
    assert "第一句" not in users[0]["content"]


async def test_an_exhausted_quota_is_a_key_or_balance_problem_not_a_rate_limit(
    plugin, clock
) -> None:
    from nonebot_plugin_aimemory import texts

    plugin.llm.script(
        error(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            code="insufficient_quota",
        ),
        text("不会用到"),
    )
    bot = RecordingBot()

    await bot.receive(private_message("在吗"))

    assert bot.sent_texts == [texts.LLM_ACCOUNT_PROBLEM]
    assert plugin.llm.pending == 1
