"""The README's command table says what the code does: every command in it is one the plugin
knows, every command the plugin's usage lists has a row, and each row's 谁能用 column is the
permission the code enforces, checked by sending the command as a plain group member, a
group admin, a SUPERUSER and a private friend.

The column uses three wordings: 所有人… (anyone, perhaps on their own things only),
群里：群主、管理员、超级用户；私聊：本人 (a group's managers; in private chat, the person),
and 超级用户 (SUPERUSERS only)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TABLE_HEADING = "## 命令"
MANAGERS = "群里：群主、管理员、超级用户；私聊：本人"
SUPERUSERS_ONLY = "超级用户"
# What each placeholder of the table becomes when the command is sent.
PLACEHOLDERS = {
    "<词>": "香菜",
    "<编号>": "#zz99",
    "<秒>": "600",
    "<QQ号>": "20001",
    "<名字>": "猫娘",
}
MEMBER_ID = 2001
FRIEND_ID = 3001


@dataclass(frozen=True)
class Row:
    """One command of the table, as typed there, and who may use it."""

    command: str
    who: str

    @property
    def line(self) -> str:
        """The command as a person sends it: placeholders filled, optional parts left out."""
        words = []
        for word in self.command.split():
            if word.startswith("["):
                continue
            words.append(PLACEHOLDERS.get(word, word))
        return " ".join(words)


def command_table() -> list[Row]:
    """Each command of the README's command table (a cell may hold two, `a` / `b`)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_HEADING)
    rows: list[Row] = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if not line.startswith("| `~"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        for command in re.findall(r"`(~[^`]+)`", cells[0]):
            rows.append(Row(command, cells[-1]))
    return rows


def command_words(command: str) -> tuple[str, str]:
    """`~记忆 我的 删除 <编号>` as ("记忆", "我的 删除"): the family and the action."""
    family, *rest = command.lstrip("~").split()
    return family, " ".join(w for w in rest if not w.startswith(("<", "[")))


def usage_commands(usage: str) -> set[tuple[str, str]]:
    """The commands the plugin's usage lists, as `command_words` gives them."""
    commands: set[tuple[str, str]] = set()
    for line in usage.splitlines():
        if not line.startswith("~"):
            continue
        family, first = line.split(maxsplit=1)
        for part in first.split(" | "):
            part = re.sub(r"（.*?）", "", part).strip()
            head, _, tail = part.partition(" ")
            if "/" in tail.split(" ")[0]:
                # 我的 删除/公开/私密 <编号>
                for action in tail.split(" ")[0].split("/"):
                    commands.add(command_words(f"{family} {head} {action}"))
            else:
                commands.add(command_words(f"{family} {part}"))
    return commands


ROWS = command_table()


def denials() -> set[str]:
    from nonebot_plugin_aimemory import texts

    return {texts.PERMISSION_DENIED, texts.PERSONAL_MEMORY_OTHERS_DENIED}


def usage_lines() -> set[str]:
    from nonebot_plugin_aimemory import texts

    return {
        texts.DIALOG_USAGE,
        texts.MEMORY_USAGE,
        texts.PERSONA_USAGE,
        texts.PERSONAL_MEMORY_USAGE,
    }


async def answer(bot: RecordingBot, event) -> str:
    before = len(bot.sent)
    await bot.receive(event)
    assert len(bot.sent) == before + 1, bot.sent_texts[before:]
    return bot.sent_texts[-1]


def test_the_table_lists_the_commands_it_is_read_for() -> None:
    assert len(ROWS) >= 20
    assert {row.who for row in ROWS} >= {MANAGERS, SUPERUSERS_ONLY}


def test_every_command_of_the_plugins_usage_has_a_row_in_the_table() -> None:
    from nonebot_plugin_aimemory import __plugin_meta__

    listed = {command_words(row.command) for row in ROWS}

    assert usage_commands(__plugin_meta__.usage) <= listed


@pytest.mark.parametrize("row", ROWS, ids=[row.command for row in ROWS])
async def test_the_table_says_who_may_use_the_command_as_the_code_does(plugin, row: Row) -> None:
    # given: a group with a plain member, an admin and a SUPERUSER, and a private friend
    bot = RecordingBot()
    member = group_message(row.line, user_id=MEMBER_ID, role="member")
    admin = group_message(row.line, user_id=MEMBER_ID + 1, role="admin")
    superuser = group_message(row.line, user_id=int(SUPERUSER_ID), role="member")
    friend = private_message(row.line, user_id=FRIEND_ID)

    # when: each sends the command
    replies = {
        "member": await answer(bot, member),
        "admin": await answer(bot, admin),
        "superuser": await answer(bot, superuser),
        "friend": await answer(bot, friend),
    }

    # then: the code knows the command, and lets in exactly who the table says
    assert not set(replies.values()) & usage_lines(), replies
    refused = {who for who, reply in replies.items() if reply in denials()}
    if row.who.startswith("所有人"):
        assert refused == set(), replies
    elif row.who == MANAGERS:
        assert refused == {"member"}, replies
    elif row.who == SUPERUSERS_ONLY:
        assert refused == {"member", "admin", "friend"}, replies
    else:
        pytest.fail(f"unknown wording in the 谁能用 column: {row.who}")
