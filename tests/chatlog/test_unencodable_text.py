"""Half an emoji (a lone surrogate, which OneBot implementations do pass on) in a card, a
message or a model's reply never blocks a chat-log write, of that session or any other."""

from __future__ import annotations

from tests.chatlog.helpers import GROUP, logged, said, talk
from tests.fakes.bots import RecordingBot

HALF_EMOJI = "\ud83d"  # the first half of 😀, alone


async def test_a_lone_surrogate_in_card_and_text_is_logged_as_a_replacement_character(
    plugin, reviewer
) -> None:
    bot = RecordingBot()

    await bot.receive(said(f"看{HALF_EMOJI}这个", to_me=True, card=f"小明{HALF_EMOJI}"))
    await plugin.runtime.chat_log.flush()

    row = (await logged(plugin))[0]
    assert (row.speaker_name, row.text) == ("小明\ufffd", "看\ufffd这个")


async def test_a_lone_surrogate_never_blocks_the_next_flushes_of_other_sessions(
    plugin, reviewer
) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True)
    bot = RecordingBot()

    await bot.receive(said(f"半个表情{HALF_EMOJI}", card=HALF_EMOJI))
    await talk(plugin, bot, "周五聚餐吗", group_id=222)
    await talk(plugin, bot, "还在吗")

    assert [r.text for r in await logged(plugin, "g:222")] == ["周五聚餐吗", "好的"]
    assert "还在吗" in [r.text for r in await logged(plugin, GROUP)]


async def test_a_row_that_cannot_be_stored_is_dropped_alone(plugin, reviewer, plugin_log) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    writer = plugin.runtime.chat_log.writer
    good = ChatRow(session_key=GROUP, created_at=utc_now_text(), role="user", text="正常的一条")
    # A value SQLite cannot bind at all: the batch fails, the row-by-row retry keeps `good`.
    broken = ChatRow(session_key=GROUP, created_at=utc_now_text(), role="user", text="x")
    object.__setattr__(broken, "speaker_id", object())

    writer.add(broken)
    writer.add(good)
    await writer.flush()

    assert [r.text for r in await logged(plugin)] == ["正常的一条"]
    assert "dropped a chat-log row" in plugin_log.text
