"""The try page's messages read as QQ's are: who may be addressed how, the @s and the quote
written as onebot/content.py writes them, a long paste cut with QQ's note; and its chats
and people have ids no OneBot event can carry (no 64-bit integer reaches them)."""

from __future__ import annotations

import pytest

XIAOMING = "90000000000000000011"
XIAOHONG = "90000000000000000012"
NICKNAMES = frozenset({"小忆"})


def read(text: str, *, group: bool = True, at=(), quote=None):
    from nonebot_plugin_aimemory.engine.turn_trace import TurnTrace
    from nonebot_plugin_aimemory.trychat.inbound import PageMessage, Quote, read_message
    from nonebot_plugin_aimemory.trychat.members import TEST_GROUP, member

    speaker = member(XIAOMING)
    assert speaker is not None
    chat = TEST_GROUP if group else speaker.private_chat
    message = PageMessage(
        chat, speaker, text, tuple(at), Quote(*quote) if quote is not None else None
    )
    return read_message(message, nicknames=NICKNAMES, trace=TurnTrace())


async def rich_text(read_message) -> str:
    from nonebot_plugin_aimemory.conversation.incoming import parts_text

    return parts_text((await read_message.incoming.content.rich()).parts)


def test_every_made_up_id_is_beyond_any_64_bit_number_and_still_a_scope() -> None:
    from nonebot_plugin_aimemory.scopes import Scope, is_test_id
    from nonebot_plugin_aimemory.trychat.members import MEMBERS, test_chats

    ids = [scope.id for scope in test_chats()] + [m.user_id for m in MEMBERS]
    assert all(int(i) > 2**64 - 1 for i in ids)
    assert all(Scope.parse(str(scope)).is_test for scope in test_chats())
    # The largest numbers QQ could ever send are not test ids.
    assert not is_test_id(str(2**63 - 1))
    assert not is_test_id(str(2**64 - 1))
    assert not Scope.group(123456789).is_test


def test_a_private_message_is_for_the_bot_and_its_speaker_manages_the_chat() -> None:
    message = read("你好", group=False).incoming

    assert message.addressed
    assert message.group_id is None
    assert message.key == f"f:{XIAOMING}"
    assert message.speaker.is_manager


@pytest.mark.parametrize(
    ("text", "at", "quote", "addressed"),
    [
        ("大家好", (), None, False),
        ("大家好", ("bot",), None, True),
        ("小忆，在吗", (), None, True),
        ("大家好", (), ("bot", "上一句"), True),
        ("大家好", (XIAOHONG,), (XIAOHONG, "小红说的"), False),
    ],
)
def test_in_the_group_only_an_at_a_reply_or_the_nickname_addresses_the_bot(
    text, at, quote, addressed
) -> None:
    assert read(text, at=at, quote=quote).incoming.addressed is addressed


async def test_ats_and_quotes_read_as_qq_writes_them() -> None:
    said = read("一起去吗", at=("bot", XIAOHONG), quote=("bot", "周末爬山"))

    assert await rich_text(said) == "[引用 机器人：周末爬山]\n@小红 一起去吗"
    assert said.incoming.fingerprint == f"@bot@{XIAOHONG}一起去吗"


async def test_the_nickname_is_taken_off_as_nonebot_does() -> None:
    said = read("小忆，~记忆 列表")

    assert said.incoming.command is not None
    assert said.incoming.command.name == "记忆"
    assert await rich_text(said) == "~记忆 列表"


async def test_a_long_paste_is_cut_with_qqs_note() -> None:
    from nonebot_plugin_aimemory.onebot.pastes import MAX_PASTE_CHARS, omission_note

    said = read("长" * (MAX_PASTE_CHARS + 1234), group=False)

    assert said.cut_chars == 1234
    assert (await rich_text(said)).endswith("长" + omission_note(1234))
