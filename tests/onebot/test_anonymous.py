"""Anonymous group messages (OneBot v11 `sub_type: "anonymous"`): every anonymous sender
comes with the same placeholder QQ number, so none of them has personal memories. Their
turns carry only the chat's memories, a save about them says why it cannot be done, the
personal commands say so too, and the chat log, the model's lines and the queue know them
by their anonymous identity, never by the placeholder number."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from nonebot.adapters.onebot.v11 import GroupMessageEvent
from nonebot.adapters.onebot.v11.event import Anonymous

from tests.chatlog.helpers import FakeReviewer, ops
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import delay, text
from tests.memory.helpers import command, model_calls_one, stored
from tests.memory.personal_helpers import (
    CAKE,
    GROUP_A,
    GROUP_B,
    answer_briefly,
    bob_in,
    injected_lines,
    last_user_content,
    requests_since,
    save_for_speaker,
    sent_text,
)
from tests.quoted_blocks import memory_hits

# What OneBot implementations report as the user_id of every anonymous sender.
PLACEHOLDER_QQ = 80000000
PLACEHOLDER_SCOPE = f"u:{PLACEHOLDER_QQ}"
GROUP_A_SCOPE = f"g:{GROUP_A}"
GHOST = (1234567, "大力鬼王")
WITCH = (7654321, "小巫女")
# Saved under the placeholder before anonymous senders were told apart: it belongs to
# whichever anonymous person said it, so to nobody who speaks now.
STALE = "匿名的那位最喜欢巧克力蛋糕"
CHAT_MEMORY = "本群每周五一起吃蛋糕"
NOT_SAVED = (
    "未保存：这条消息是匿名发的，匿名消息没有个人记忆（认不出是谁）。"
    '关于整个聊天的事仍可用 about="chat" 保存。'
)


def anonymous_in(
    group_id: int,
    content: str,
    who: tuple[int, str] = GHOST,
    *,
    to_me: bool = True,
    role: str = "member",
    **fields: Any,
) -> GroupMessageEvent:
    """A group message sent anonymously by `who` (QQ's anonymous id and name)."""
    event = group_message(
        content,
        group_id=group_id,
        user_id=PLACEHOLDER_QQ,
        card="",
        nickname="匿名消息",
        role=role,
        to_me=to_me,
        **fields,
    )
    anonymous_id, name = who
    return event.model_copy(
        update={
            "sub_type": "anonymous",
            "anonymous": Anonymous(id=anonymous_id, name=name, flag=f"{anonymous_id}|{name}"),
        }
    )


async def wait_until(condition: Callable[[], bool], timeout_seconds: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def remembered_before_this_change(plugin) -> None:
    """A personal memory under the placeholder number, as anonymous turns kept them."""
    service = plugin.runtime.memory.service
    outcome = await service.save(PLACEHOLDER_SCOPE, STALE, user_id=str(PLACEHOLDER_QQ))
    assert outcome.status == "saved"


async def personal_scopes(plugin) -> list[str]:
    rows = await plugin.runtime.database.read(
        "SELECT DISTINCT scope FROM memories WHERE scope LIKE 'u:%'"
    )
    return sorted(scope for (scope,) in rows)


async def test_an_anonymous_turn_carries_the_chats_memories_and_nobodys_personal_ones(
    plugin,
) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_B, "记住我爱草莓蛋糕"), CAKE)
    await remembered_before_this_change(plugin)
    chat = (await plugin.runtime.memory.service.save(GROUP_A_SCOPE, CHAT_MEMORY)).memory
    start = len(plugin.llm.chat_requests)

    await bot.receive(anonymous_in(GROUP_A, "我最喜欢吃什么蛋糕？"))

    sent = sent_text(requests_since(plugin, start))
    assert CAKE not in sent
    assert STALE not in sent
    assert "[个人]" not in sent
    assert injected_lines(last_user_content(plugin)) == [f"#{chat.id} 「{CHAT_MEMORY}」"]


async def test_a_save_about_an_anonymous_speaker_is_refused_and_says_why(plugin) -> None:
    bot = RecordingBot()

    result = await model_calls_one(
        plugin,
        bot,
        anonymous_in(GROUP_A, "记住我对花生过敏"),
        "memory_save",
        {"content": "对花生过敏", "about": "speaker"},
    )

    assert result == NOT_SAVED
    assert await personal_scopes(plugin) == []
    assert await stored(plugin, GROUP_A_SCOPE) == []


async def test_an_anonymous_speakers_search_finds_the_chats_memories_only(plugin) -> None:
    bot = RecordingBot()
    await remembered_before_this_change(plugin)
    chat = (await plugin.runtime.memory.service.save(GROUP_A_SCOPE, CHAT_MEMORY)).memory

    result = await model_calls_one(
        plugin, bot, anonymous_in(GROUP_A, "我喜欢什么蛋糕？"), "memory_search", {"query": "蛋糕"}
    )

    assert memory_hits(result) == [f"#{chat.id} 「{CHAT_MEMORY}」"]


async def test_two_anonymous_people_never_share_memories(plugin) -> None:
    bot = RecordingBot()
    refused = await model_calls_one(
        plugin,
        bot,
        anonymous_in(GROUP_A, "记住我最喜欢紫色", GHOST),
        "memory_save",
        {"content": "最喜欢紫色", "about": "speaker"},
    )

    found = await model_calls_one(
        plugin,
        bot,
        anonymous_in(GROUP_A, "我最喜欢什么颜色？", WITCH),
        "memory_search",
        {"query": "紫色"},
    )

    assert refused == NOT_SAVED
    assert found == "没有找到相关记忆。"
    assert injected_lines(last_user_content(plugin)) == []
    assert await personal_scopes(plugin) == []


async def test_the_personal_commands_say_anonymous_messages_have_none(plugin) -> None:
    bot = RecordingBot()
    await remembered_before_this_change(plugin)

    listing = await command(bot, anonymous_in(GROUP_A, "~记忆 我的", to_me=False))
    cleared = await command(bot, anonymous_in(GROUP_A, "~记忆 我的 清空 确认", to_me=False))
    status = await command(bot, anonymous_in(GROUP_A, "~记忆 状态", to_me=False))

    assert listing == cleared == "匿名消息没有个人记忆：认不出匿名的是谁。"
    assert "个人记忆" not in status
    assert [m.content for m in await stored(plugin, PLACEHOLDER_SCOPE)] == [STALE]


async def test_an_anonymous_line_shows_the_anonymous_name_not_the_placeholder(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()

    await bot.receive(anonymous_in(GROUP_A, "大家好"))

    line = last_user_content(plugin)
    assert line.startswith("[")
    assert line.endswith("] 大力鬼王(匿名1234567)：大家好")
    assert str(PLACEHOLDER_QQ) not in sent_text(plugin.llm.chat_requests)


async def test_an_anonymous_line_is_logged_as_the_model_saw_it(plugin) -> None:
    answer_briefly(plugin)
    await plugin.restart(aimemory_chat_log_ambient=True)
    bot = RecordingBot()

    await bot.receive(anonymous_in(GROUP_A, "大家好"))
    await bot.receive(anonymous_in(GROUP_A, "路过", WITCH, to_me=False))
    await plugin.runtime.chat_log.flush()

    rows = await plugin.runtime.chat_log.writer.store.recent(GROUP_A_SCOPE, 10)
    people = [(r.speaker_id, r.speaker_name, r.text) for r in rows if r.role == "user"]
    assert people == [
        ("匿名1234567", "大力鬼王", "大家好"),
        ("匿名7654321", "小巫女", "路过"),
    ]


async def test_the_reviewer_reads_anonymous_lines_without_the_placeholder(plugin) -> None:
    reviewer = FakeReviewer()
    plugin.llm.responder = reviewer
    bot = RecordingBot()
    await bot.receive(
        anonymous_in(GROUP_A, "我是新来的，我养了一只猫", event_time=int(time.time()))
    )
    await plugin.runtime.chat_log.flush()
    reviewer.answer(ops({"op": "noop"}))

    await command(bot, group_message("~记忆 立即生成", group_id=GROUP_A, role="admin"))

    assert "大力鬼王(匿名1234567)：我是新来的，我养了一只猫" in reviewer.shown
    assert str(PLACEHOLDER_QQ) not in reviewer.shown


async def test_two_anonymous_senders_take_their_own_turns(plugin) -> None:
    plugin.llm.script(delay(0.5, text("答一")), text("答鬼王"), text("答巫女"))
    bot = RecordingBot()
    first = asyncio.create_task(bot.receive(bob_in(GROUP_A, "先问一个")))
    await wait_until(lambda: plugin.llm.pending == 2)

    await bot.receive_all(
        anonymous_in(GROUP_A, "鬼王问", GHOST), anonymous_in(GROUP_A, "巫女问", WITCH)
    )
    await first

    users = [body["messages"][-1]["content"] for body in plugin.llm.chat_requests[1:]]
    assert [u.split("] ", 1)[1] for u in users] == [
        "大力鬼王(匿名1234567)：鬼王问",
        "小巫女(匿名7654321)：巫女问",
    ]


async def test_an_anonymous_sender_manages_nothing_even_with_an_admins_role(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    answer = await command(bot, anonymous_in(GROUP_A, "~对话 清空", role="admin", to_me=False))

    assert answer == texts.PERMISSION_DENIED


async def test_an_anonymous_stop_stops_only_that_anonymous_senders_messages(plugin) -> None:
    plugin.llm.script(delay(0.5, text("答一")), text("答巫女"))
    bot = RecordingBot()
    first = asyncio.create_task(bot.receive(bob_in(GROUP_A, "先问一个")))
    await wait_until(lambda: plugin.llm.pending == 1)
    queued = asyncio.create_task(
        bot.receive_all(
            anonymous_in(GROUP_A, "鬼王问", GHOST), anonymous_in(GROUP_A, "巫女问", WITCH)
        )
    )
    await wait_until(lambda: len(plugin.runtime.conversation.bursts) == 2)

    stop = await command(bot, anonymous_in(GROUP_A, "~对话 停止", GHOST, to_me=False))
    await asyncio.wait_for(asyncio.gather(first, queued), 3)

    assert stop == "已停止你的消息：排队中的 1 条。"
    assert bot.sent_texts[-2:] == ["答一", "答巫女"]
    assert last_user_content(plugin).endswith("小巫女(匿名7654321)：巫女问")
