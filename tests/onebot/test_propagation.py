"""Other plugins' matchers: a message the bot answers (or a command) is not also handled
by a matcher of a lower priority; any other message is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message


@pytest.fixture
def later_matcher() -> Iterator[list[str]]:
    """A matcher of another plugin at priority 95 (after ours, 90), recording what it saw."""
    from nonebot import on_message
    from nonebot.adapters.onebot.v11 import MessageEvent
    from nonebot.matcher import current_event

    seen: list[str] = []
    other = on_message(priority=95, block=False)

    @other.handle()
    async def _seen() -> None:
        event = current_event.get()
        assert isinstance(event, MessageEvent)
        seen.append(event.get_plaintext())

    yield seen
    other.destroy()


async def test_a_message_for_the_bot_stops_there_and_others_go_on(
    plugin, later_matcher: list[str]
) -> None:
    bot = RecordingBot()

    await bot.receive(group_message("你好呀", to_me=True))
    await bot.receive(group_message("~记忆 列表", to_me=False))
    await bot.receive(group_message("大家晚上好", to_me=False))

    assert later_matcher == ["大家晚上好"]
    assert len(bot.sent_texts) == 2  # the answer and the command's


async def test_with_no_matcher_after_ours_a_message_for_the_bot_is_still_answered(
    plugin,
) -> None:
    from nonebot.matcher import matchers

    bot = RecordingBot()
    assert not any(priority > 90 and group for priority, group in matchers.items())

    await bot.receive(group_message("你好呀", to_me=True))

    assert len(bot.sent_texts) == 1
