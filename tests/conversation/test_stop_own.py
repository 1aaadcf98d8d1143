"""`~对话 停止` while a slow turn runs and others wait: a member stops only their own
messages (the one being answered and those queued), and everyone else's are still answered;
a manager (group owner, admin, SUPERUSER) stops everyone's; in private chat the person stops
their own. The reply says how many messages were stopped, and whose."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from nonebot.adapters.onebot.v11 import GroupMessageEvent, MessageEvent

from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import delay, text

ALICE, BOB, CAROL = 5101, 5102, 5103
SLOW_SECONDS = 5.0


def said_by(user_id: int, content: str) -> GroupMessageEvent:
    return group_message(content, user_id=user_id, to_me=True)


def stop_from(user_id: int, **fields: str) -> GroupMessageEvent:
    return group_message("~对话 停止", user_id=user_id, **fields)


async def wait_until(condition: Callable[[], bool], timeout_seconds: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def waiting_messages(plugin, key: str, speakers: set[int]) -> int:
    """How many messages of `speakers` wait in `key`'s queue for their turn."""
    bursts = plugin.runtime.conversation.bursts
    found = (bursts.find(key, str(speaker)) for speaker in speakers)
    return sum(burst.message_count for burst in found if burst is not None)


def asked(plugin) -> list[str]:
    """What each chat request the model got was answering: its last user line's text (a
    stopped turn's message stays in the window, so the next one follows it on a new line)."""
    bodies = plugin.llm.chat_requests
    lines = [body["messages"][-1]["content"].splitlines()[-1] for body in bodies]
    # `[时间] 名字(QQ号)：text` in a group, `[时间] text` in private chat.
    return [line.split("] ", 1)[-1].split("：", 1)[-1] for line in lines]


async def slow_turn_with_others_queued(
    plugin, bot: RecordingBot, first: MessageEvent, *queued: MessageEvent
) -> asyncio.Future:
    """`first` is at the model (slowly, as scripted); `queued` are sent meanwhile and wait
    in the chat's queue. Returns the handlers of all of them, to await."""
    scripted = plugin.llm.pending
    answering = asyncio.create_task(bot.receive(first))
    await wait_until(lambda: plugin.llm.pending < scripted)
    others = asyncio.create_task(bot.receive_all(*queued))
    speakers = {event.user_id for event in queued}
    key = "g:111" if isinstance(first, GroupMessageEvent) else f"f:{first.user_id}"
    await wait_until(lambda: waiting_messages(plugin, key, speakers) == len(queued))
    return asyncio.gather(answering, others)


async def alice_waits_on_a_slow_turn_while_others_queue(
    plugin, bot: RecordingBot, *queued: MessageEvent
) -> asyncio.Future:
    """Alice's first message is at the model; `queued` wait behind it."""
    return await slow_turn_with_others_queued(plugin, bot, said_by(ALICE, "慢慢想的问题"), *queued)


async def test_a_members_stop_drops_their_own_answer_and_queue_and_others_are_answered(
    plugin,
) -> None:
    plugin.llm.script(delay(SLOW_SECONDS, text("给Alice的")), text("给Bob的"))
    bot = RecordingBot()
    handlers = await alice_waits_on_a_slow_turn_while_others_queue(
        plugin, bot, said_by(ALICE, "补充一句"), said_by(BOB, "Bob的问题")
    )

    await bot.receive(stop_from(ALICE))
    await asyncio.wait_for(handlers, 3)

    assert bot.sent_texts == ["已停止你的消息：正在回答的 1 条，排队中的 1 条。", "给Bob的"]
    assert asked(plugin) == ["慢慢想的问题", "Bob的问题"]


async def test_a_members_stop_leaves_the_answer_in_progress_when_it_is_someone_elses(
    plugin,
) -> None:
    plugin.llm.script(delay(0.5, text("给Alice的")), text("给Carol的"), text("不该有"))
    bot = RecordingBot()
    handlers = await alice_waits_on_a_slow_turn_while_others_queue(
        plugin, bot, said_by(BOB, "Bob的问题"), said_by(CAROL, "Carol的问题")
    )

    await bot.receive(stop_from(BOB))
    await asyncio.wait_for(handlers, 3)

    assert bot.sent_texts == ["已停止你的消息：排队中的 1 条。", "给Alice的", "给Carol的"]
    assert asked(plugin) == ["慢慢想的问题", "Carol的问题"]


async def test_a_member_with_nothing_of_their_own_is_told_so_and_nothing_stops(plugin) -> None:
    plugin.llm.script(delay(0.5, text("给Alice的")), text("再给Alice的"))
    bot = RecordingBot()
    handlers = await alice_waits_on_a_slow_turn_while_others_queue(
        plugin, bot, said_by(ALICE, "补充一句")
    )

    await bot.receive(stop_from(BOB))
    await asyncio.wait_for(handlers, 3)

    assert bot.sent_texts == [
        "你没有正在回答或排队中的消息；别人的只有群主、管理员能停止。",
        "给Alice的",
        "再给Alice的",
    ]


@pytest.mark.parametrize(
    "manager",
    [
        {"user_id": 5200, "role": "admin"},
        {"user_id": 5201, "role": "owner"},
        {"user_id": int(SUPERUSER_ID)},
    ],
    ids=["admin", "owner", "superuser"],
)
async def test_a_managers_stop_drops_everyones_messages(plugin, manager) -> None:
    plugin.llm.script(delay(SLOW_SECONDS, text("不该发")), text("不该有"), text("也不该有"))
    bot = RecordingBot()
    handlers = await alice_waits_on_a_slow_turn_while_others_queue(
        plugin, bot, said_by(ALICE, "补充一句"), said_by(BOB, "Bob的问题"), said_by(BOB, "还有")
    )

    await bot.receive(stop_from(**manager))
    await asyncio.wait_for(handlers, 3)

    assert bot.sent_texts == ["已停止所有人的消息：正在回答的 1 条，排队中的 3 条。"]
    assert asked(plugin) == ["慢慢想的问题"]


async def test_a_message_sent_after_a_stop_is_answered(plugin) -> None:
    plugin.llm.script(delay(SLOW_SECONDS, text("不该发")), text("不该有"))
    bot = RecordingBot()
    handlers = await alice_waits_on_a_slow_turn_while_others_queue(
        plugin, bot, said_by(ALICE, "补充一句")
    )
    await bot.receive(stop_from(ALICE))
    await asyncio.wait_for(handlers, 3)
    plugin.llm.reset()
    plugin.llm.script(text("这次回答了"))

    await bot.receive(said_by(ALICE, "重新问"))

    assert bot.sent_texts[-1] == "这次回答了"
    assert asked(plugin) == ["重新问"]


async def test_stopped_messages_stay_in_the_chat_log(plugin) -> None:
    plugin.llm.script(delay(SLOW_SECONDS, text("不该发")), text("给Bob的"))
    bot = RecordingBot()
    handlers = await alice_waits_on_a_slow_turn_while_others_queue(
        plugin, bot, said_by(ALICE, "补充一句"), said_by(BOB, "Bob的问题")
    )

    await bot.receive(stop_from(ALICE))
    await asyncio.wait_for(handlers, 3)

    await plugin.runtime.chat_log.flush()
    rows = await plugin.runtime.chat_log.writer.store.recent("g:111", 20)
    assert [(r.speaker_id, r.text) for r in rows if r.role == "user"] == [
        (str(ALICE), "慢慢想的问题"),
        (str(ALICE), "补充一句"),
        (str(BOB), "Bob的问题"),
    ]


async def test_in_private_chat_the_person_stops_all_of_their_messages(plugin) -> None:
    plugin.llm.script(delay(SLOW_SECONDS, text("不该发")), text("不该有"))
    bot = RecordingBot()
    handlers = await slow_turn_with_others_queued(
        plugin,
        bot,
        private_message("慢慢想", user_id=ALICE),
        private_message("补充一", user_id=ALICE),
        private_message("补充二", user_id=ALICE),
    )

    await bot.receive(private_message("~对话 停止", user_id=ALICE))
    await asyncio.wait_for(handlers, 3)

    assert bot.sent_texts == ["已停止你的消息：正在回答的 1 条，排队中的 2 条。"]
    assert asked(plugin) == ["慢慢想"]
