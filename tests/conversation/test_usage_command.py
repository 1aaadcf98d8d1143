"""`~对话 用量` (this chat's tokens today and over 7 days by role; every chat's for a
SUPERUSER in private chat) and the optional daily quota per chat: one notice an hour, no
model call, SUPERUSERS exempt, a new day starts from zero."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import reported_usage, text

GROUP = 901


class Clock:
    """A clock a test moves by hand: aware datetimes for the usage days, seconds for the
    notice interval."""

    def __init__(self) -> None:
        self.now = datetime.now(timezone.utc)
        self.seconds = 1000.0

    def __call__(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return self.seconds


def moved_clock(plugin) -> Clock:
    clock = Clock()
    plugin.runtime.usage.clock = clock
    plugin.runtime.conversation.clock = clock.monotonic
    return clock


async def ask(bot: RecordingBot, said: str = "你好", **fields) -> list[str]:
    """An addressed group message; what the bot sent for it."""
    before = len(bot.sent)
    fields.setdefault("group_id", GROUP)
    await bot.receive(group_message(said, to_me=True, **fields))
    return bot.sent_texts[before:]


async def usage_command(bot: RecordingBot, event=None) -> str:
    before = len(bot.sent)
    await bot.receive(event or group_message("~对话 用量", group_id=GROUP))
    assert len(bot.sent) == before + 1
    return bot.sent_texts[-1]


async def seed(plugin, day: str, chat: str, role: str, prompt: int, completion: int) -> None:
    from nonebot_plugin_aimemory.engine.usage import TokenCounts, UsageRow

    await plugin.runtime.usage.ledger.add(
        [UsageRow(day, chat, role, TokenCounts(prompt, completion, 0, 1))]
    )


async def test_usage_shows_todays_and_the_weeks_tokens_by_role(plugin) -> None:
    usage = plugin.runtime.usage
    today = usage.today()
    await seed(plugin, usage.days_before(today, 3), f"g:{GROUP}", "reviewer", 500, 50)
    await seed(plugin, usage.days_before(today, 7), f"g:{GROUP}", "main", 99_999, 1)  # too old
    await seed(plugin, today, "g:999", "main", 7777, 7)  # another chat
    plugin.llm.script(
        text("好的", usage=reported_usage(1200, 40, cached=1000)),
        text("好的", usage=reported_usage(800, 20)),
    )
    bot = RecordingBot()
    await ask(bot)
    await ask(bot, "再问一句")

    answer = await usage_command(bot)

    assert answer == (
        "今天：2060 tokens\n"
        "- 对话：输入 2000（缓存命中 1000） / 输出 60，2 次\n"
        "近 7 天：2610 tokens\n"
        "- 对话：输入 2000（缓存命中 1000） / 输出 60，2 次\n"
        "- 整理记忆：输入 500 / 输出 50，1 次"
    )


async def test_usage_of_a_chat_that_used_nothing(plugin) -> None:
    answer = await usage_command(RecordingBot())

    assert answer == "今天：还没有用量\n近 7 天：还没有用量"
    assert plugin.llm.chat_requests == []


async def test_usage_is_the_chats_own_in_private_chat(plugin) -> None:
    plugin.llm.script(text("好的", usage=reported_usage(300, 30)))
    bot = RecordingBot()
    await bot.receive(private_message("你好", user_id=3901))
    await ask(bot)  # the group's, not this chat's

    answer = await usage_command(bot, private_message("~对话 用量", user_id=3901))

    assert answer.startswith("今天：330 tokens\n- 对话：输入 300 / 输出 30，1 次\n")


async def test_a_superuser_in_private_chat_gets_every_chats_totals(plugin) -> None:
    from nonebot_plugin_aimemory.engine.usage import NO_CHAT

    usage = plugin.runtime.usage
    today = usage.today()
    await seed(plugin, today, "g:1", "main", 1000, 100)
    await seed(plugin, today, "f:2", "main", 400, 40)
    await seed(plugin, usage.days_before(today, 2), "g:3", "compressor", 2000, 200)
    await seed(plugin, today, NO_CHAT, "embeddings", 60, 0)
    bot = RecordingBot()

    answer = await usage_command(bot, private_message("~对话 用量", user_id=int(SUPERUSER_ID)))

    assert answer == (
        "所有会话合计\n"
        "今天：1600 tokens\n"
        "- 对话：输入 1400 / 输出 140，2 次\n"
        "- 向量：60 tokens，1 次\n"
        "近 7 天：3800 tokens\n"
        "- 对话：输入 1400 / 输出 140，2 次\n"
        "- 压缩：输入 2000 / 输出 200，1 次\n"
        "- 向量：60 tokens，1 次\n"
        "近 7 天用得最多的会话：\n"
        "- g:3：2200 tokens\n"
        "- g:1：1100 tokens\n"
        "- f:2：440 tokens"
    )


async def test_a_superuser_in_a_group_gets_that_groups_usage(plugin) -> None:
    await seed(plugin, plugin.runtime.usage.today(), "g:1", "main", 1000, 100)
    bot = RecordingBot()

    answer = await usage_command(
        bot, group_message("~对话 用量", group_id=GROUP, user_id=int(SUPERUSER_ID))
    )

    assert answer == "今天：还没有用量\n近 7 天：还没有用量"


async def test_the_usage_command_is_in_the_dialog_help(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    answer = await usage_command(RecordingBot(), group_message("~对话 什么", group_id=GROUP))

    assert answer == texts.DIALOG_USAGE
    assert "~对话 用量" in answer


# ---------------------------------------------------------------- daily quota


async def used_up_quota(plugin, bot: RecordingBot) -> None:
    """With a quota of 1000 tokens a day, one turn of 1100 uses it up."""
    await plugin.restart(aimemory_daily_tokens_per_chat=1000)
    plugin.llm.responder = lambda body: text("好的", usage=reported_usage(900, 200))
    assert await ask(bot) == ["好的"]


async def test_a_chat_over_its_quota_gets_a_notice_and_no_model_call(plugin) -> None:
    bot = RecordingBot()
    await used_up_quota(plugin, bot)
    requests = len(plugin.llm.requests)

    sent = await ask(bot, "还在吗")

    assert sent == ["今天的额度用完了，明天再聊吧。"]
    assert len(plugin.llm.requests) == requests


async def test_the_quota_notice_comes_at_most_once_an_hour(plugin) -> None:
    bot = RecordingBot()
    await used_up_quota(plugin, bot)
    clock = moved_clock(plugin)
    requests = len(plugin.llm.requests)

    first = await ask(bot, "还在吗")
    clock.seconds += 3599
    within_the_hour = await ask(bot, "说话呀")
    clock.seconds += 1
    after_an_hour = await ask(bot, "理理我")

    assert first == ["今天的额度用完了，明天再聊吧。"]
    assert within_the_hour == []
    assert after_an_hour == ["今天的额度用完了，明天再聊吧。"]
    assert len(plugin.llm.requests) == requests


async def test_the_quota_is_per_chat(plugin) -> None:
    bot = RecordingBot()
    await used_up_quota(plugin, bot)

    assert await ask(bot, "我是别的群的", group_id=GROUP + 1) == ["好的"]


async def test_superusers_are_exempt_from_the_quota(plugin) -> None:
    bot = RecordingBot()
    await used_up_quota(plugin, bot)

    sent = await ask(bot, "帮我看看", user_id=int(SUPERUSER_ID))

    assert sent == ["好的"]


async def test_the_quota_starts_again_the_next_day(plugin) -> None:
    bot = RecordingBot()
    await used_up_quota(plugin, bot)
    clock = moved_clock(plugin)
    assert await ask(bot, "还在吗") == ["今天的额度用完了，明天再聊吧。"]

    clock.now += timedelta(days=1)

    assert await ask(bot, "早上好") == ["好的"]


async def test_the_quota_still_holds_after_a_restart(plugin) -> None:
    bot = RecordingBot()
    await used_up_quota(plugin, bot)

    await plugin.restart()

    assert await ask(bot, "重启了吗") == ["今天的额度用完了，明天再聊吧。"]


async def test_the_usage_report_shows_the_quota(plugin) -> None:
    bot = RecordingBot()
    await used_up_quota(plugin, bot)

    answer = await usage_command(bot)

    assert answer.endswith("\n每日额度：已用 1100 / 1000 tokens")


async def test_messages_over_the_quota_are_still_in_the_chat_log(plugin) -> None:
    bot = RecordingBot()
    await used_up_quota(plugin, bot)

    await ask(bot, "这句也要记下来")
    await plugin.runtime.chat_log.flush()

    rows = await plugin.runtime.chat_log.writer.store.recent(f"g:{GROUP}", 10)
    assert [r.text for r in rows][-2:] == ["这句也要记下来", "今天的额度用完了，明天再聊吧。"]
