"""Sender ids that cannot be a QQ number (0, a negative id, one of 21 digits, a string if an
adapter let one through): in a group such a sender is answered like an anonymous member —
no personal memories, manages nothing, known by that id in the chat's lines and log — and
the chat goes on for everyone else; in private they get a short notice and nothing is kept
(a private chat lives under its sender's QQ number, and all of them would share one)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from nonebot.adapters.onebot.v11 import MessageEvent

from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.memory.helpers import AFTER_TOOLS, command, model_calls_one, stored, stored_bodies
from tests.memory.personal_helpers import (
    BRIEF_ANSWERS,
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

TWENTY_ONE_DIGITS = 123456789012345678901
NO_QQ_NUMBERS = [0, -1, TWENTY_ONE_DIGITS]
# The event model declares an int: pydantic warns when it serialises the string.
A_STRING_ID = pytest.param(
    "abc", marks=pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
)
GROUP_A_SCOPE = f"g:{GROUP_A}"
NOT_SAVED = (
    "未保存：这条消息是匿名发的，匿名消息没有个人记忆（认不出是谁）。"
    '关于整个聊天的事仍可用 about="chat" 保存。'
)
NO_PERSONAL_MEMORIES = "匿名消息没有个人记忆：认不出匿名的是谁。"
PRIVATE_NOTICE = "认不出你的 QQ 号，私聊暂时没法回答，可以在群里找我聊～"


def stranger_in(
    group_id: int, content: str, user_id: object, *, to_me: bool = True, role: str = "member"
) -> MessageEvent:
    """A group message from `user_id` (the event model takes an int; a string goes in as
    an adapter that let one through would hand it over)."""
    event = group_message(content, group_id=group_id, card="路人", to_me=to_me, role=role)
    sender = event.sender.model_copy(update={"user_id": user_id})
    return event.model_copy(update={"user_id": user_id, "sender": sender})


def stranger_alone(content: str, user_id: object) -> MessageEvent:
    """A private message from `user_id`."""
    event = private_message(content, nickname="路人")
    sender = event.sender.model_copy(update={"user_id": user_id})
    return event.model_copy(update={"user_id": user_id, "sender": sender})


@pytest.fixture
def logged_errors() -> Iterator[list[str]]:
    """What NoneBot logs at ERROR meanwhile: a matcher that raised, among others."""
    from nonebot.log import logger as nonebot_logger

    errors: list[str] = []
    sink = nonebot_logger.add(lambda record: errors.append(str(record)), level="ERROR")
    yield errors
    nonebot_logger.remove(sink)


async def personal_scopes(plugin) -> list[str]:
    rows = await plugin.runtime.database.read(
        "SELECT DISTINCT scope FROM memories WHERE scope LIKE 'u:%'"
    )
    return sorted(scope for (scope,) in rows)


def test_a_sender_id_is_a_qq_number_only_when_a_scope_could_take_it() -> None:
    from nonebot_plugin_aimemory.scopes import Scope, qq_number

    numbers = [qq_number(raw) for raw in (10001, "10001", 10**19, "1" * 20)]
    nobody = [qq_number(raw) for raw in (0, -1, 10**20, "0123", "abc", "", None, True, 1.0)]

    assert numbers == ["10001", "10001", str(10**19), "1" * 20]
    assert [Scope.person(n).key for n in numbers if n] == [f"u:{n}" for n in numbers]
    assert nobody == [None] * len(nobody)


@pytest.mark.parametrize("user_id", [*NO_QQ_NUMBERS, A_STRING_ID])
async def test_a_group_member_without_a_qq_number_is_answered(
    plugin, logged_errors, user_id
) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()

    await bot.receive(stranger_in(GROUP_A, "你好呀", user_id))

    assert bot.sent_texts == [BRIEF_ANSWERS[0]]
    assert last_user_content(plugin).endswith(f"] 路人({user_id})：你好呀")
    assert logged_errors == []


@pytest.mark.parametrize("user_id", NO_QQ_NUMBERS)
async def test_their_turn_carries_the_chats_memories_and_nobodys_personal_ones(
    plugin, user_id
) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_B, "记住我爱草莓蛋糕"), CAKE)
    chat = (await plugin.runtime.memory.service.save(GROUP_A_SCOPE, "本群每周五吃蛋糕")).memory
    start = len(plugin.llm.chat_requests)

    await bot.receive(stranger_in(GROUP_A, "我最喜欢吃什么蛋糕？", user_id))

    sent = sent_text(requests_since(plugin, start))
    assert CAKE not in sent
    assert "[个人]" not in sent
    assert injected_lines(last_user_content(plugin)) == [f"#{chat.id} 「本群每周五吃蛋糕」"]


@pytest.mark.parametrize("user_id", NO_QQ_NUMBERS)
async def test_a_save_about_them_is_refused_with_the_anonymous_note(plugin, user_id) -> None:
    bot = RecordingBot()

    result = await model_calls_one(
        plugin,
        bot,
        stranger_in(GROUP_A, "记住我对花生过敏", user_id),
        "memory_save",
        {"content": "对花生过敏", "about": "speaker"},
    )

    assert result == NOT_SAVED
    assert bot.sent_texts == [AFTER_TOOLS]
    assert await personal_scopes(plugin) == []
    assert await stored(plugin, GROUP_A_SCOPE) == []


@pytest.mark.parametrize("user_id", NO_QQ_NUMBERS)
async def test_the_memory_commands_answer_them_like_an_anonymous_member(
    plugin, logged_errors, user_id
) -> None:
    bot = RecordingBot()

    listing = await command(bot, stranger_in(GROUP_A, "~记忆 我的", user_id, to_me=False))
    cleared = await command(bot, stranger_in(GROUP_A, "~记忆 我的 清空 确认", user_id, to_me=False))
    status = await command(bot, stranger_in(GROUP_A, "~记忆 状态", user_id, to_me=False))

    assert listing == cleared == NO_PERSONAL_MEMORIES
    assert "个人记忆" not in status
    assert logged_errors == []


async def test_they_manage_nothing_even_with_an_admins_role(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    answer = await command(bot, stranger_in(GROUP_A, "~对话 清空", 0, to_me=False, role="admin"))

    assert answer == texts.PERMISSION_DENIED


async def test_a_superuser_naming_no_qq_number_gets_the_usage_line(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    superuser = int(SUPERUSER_ID)

    answers = [
        await command(
            bot,
            group_message(f"~记忆 我的 删除 u2345 {target}", group_id=GROUP_A, user_id=superuser),
        )
        for target in ("0", "-1", str(TWENTY_ONE_DIGITS))
    ]

    assert answers == [texts.PERSONAL_MEMORY_USAGE] * 3


async def test_the_chat_log_and_the_window_go_on_for_everyone(plugin) -> None:
    answer_briefly(plugin)
    await plugin.restart(aimemory_chat_log_ambient=True)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_B, "记住我爱草莓蛋糕"), CAKE)

    await bot.receive(stranger_in(GROUP_A, "大家好", 0, to_me=False))
    await bot.receive(stranger_in(GROUP_A, "在吗", -1))
    await bot.receive(bob_in(GROUP_A, "我喜欢什么蛋糕？"))
    await plugin.runtime.chat_log.flush()

    rows = await plugin.runtime.chat_log.writer.store.recent(GROUP_A_SCOPE, 10)
    people = [(r.speaker_id, r.text) for r in rows if r.role == "user"]
    assert people == [("0", "大家好"), ("-1", "在吗"), ("2101", "我喜欢什么蛋糕？")]
    # the two questions got the model's next two brief answers, none asked again
    assert bot.sent_texts[-2:] == list(BRIEF_ANSWERS[:2])
    window = [body["content"] for body in await stored_bodies(plugin, GROUP_A_SCOPE)]
    assert any(str(line).endswith("路人(-1)：在吗") for line in window)
    assert any(CAKE in line for line in injected_lines(last_user_content(plugin)))


@pytest.mark.parametrize("user_id", [*NO_QQ_NUMBERS, A_STRING_ID])
async def test_a_private_message_without_a_qq_number_gets_a_short_notice(
    plugin, logged_errors, user_id
) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    start = len(plugin.llm.chat_requests)

    await bot.receive(stranger_alone("你好", user_id))
    await plugin.runtime.chat_log.flush()

    assert bot.sent_texts == [PRIVATE_NOTICE]
    assert len(plugin.llm.chat_requests) == start
    assert await plugin.runtime.database.read("SELECT session_key FROM messages") == []
    assert await plugin.runtime.database.read("SELECT session_key FROM chat_log") == []
    assert logged_errors == []


@pytest.mark.parametrize("user_id", NO_QQ_NUMBERS)
async def test_their_private_commands_get_the_notice_too(plugin, logged_errors, user_id) -> None:
    bot = RecordingBot()

    answers = [
        await command(bot, stranger_alone(text, user_id))
        for text in ("~记忆 我的", "~记忆 状态", "~对话 清空")
    ]

    assert answers == [PRIVATE_NOTICE] * 3
    assert logged_errors == []


async def test_no_notice_where_private_chats_are_off(plugin) -> None:
    await plugin.restart(aimemory_private_chat=False)
    bot = RecordingBot()

    await bot.receive(stranger_alone("你好", 0))

    assert bot.sent_texts == []


async def test_another_plugins_command_in_private_is_left_to_it(plugin) -> None:
    bot = RecordingBot()

    await bot.receive(stranger_alone("/status", 0))

    assert PRIVATE_NOTICE not in bot.sent_texts


async def test_while_the_database_is_awaited_they_get_no_notice_and_nothing_breaks(
    plugin, logged_errors
) -> None:
    from nonebot_plugin_aimemory import texts
    from nonebot_plugin_aimemory.deferred_start import deferred_start
    from nonebot_plugin_aimemory.runtime import current_runtime, install_runtime
    from nonebot_plugin_aimemory.store.opening import DatabaseUnreachable

    runtime = current_runtime()
    install_runtime(None)
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def not_yet() -> None:
        await never

    try:
        deferred_start().begin(not_yet, lambda _: None, DatabaseUnreachable("down"))
        logged_errors.clear()  # the wait itself is logged
        bot = RecordingBot()
        await bot.receive(stranger_alone("在吗", 0))
        await bot.receive(stranger_in(GROUP_A, "在吗", 0))
        assert bot.sent_texts == [texts.DATABASE_NOT_READY]
        assert logged_errors == []
    finally:
        await deferred_start().cancel()
        install_runtime(runtime)
