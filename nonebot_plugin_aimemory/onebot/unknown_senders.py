"""Private messages from a sender whose id is no QQ number (0, a negative or a 21-digit id):
a private chat's window, log and memories are kept under its sender's QQ number, and every
sender reported with such an id would share them, reading what another was told. So such
a message gets a short notice where the plugin would answer it, and nothing is stored. In
groups such a sender is answered like an anonymous member (conversation/incoming.py)."""

from __future__ import annotations

import logging

from nonebot.adapters.onebot.v11 import (
    Bot,
    GroupMessageEvent,
    Message,
    MessageEvent,
    MessageSegment,
)

from .. import texts
from ..scopes import qq_number
from .inbound import Inbound, command_text, is_another_plugins_command, parse_command
from .permissions import private_chat_served

logger = logging.getLogger("nonebot_plugin_aimemory")


def is_private_from_no_one(event: MessageEvent) -> bool:
    """Whether `event` is a private message whose sender id is no QQ number."""
    return not isinstance(event, GroupMessageEvent) and qq_number(event.user_id) is None


async def refuse_private(bot: Bot, event: MessageEvent, inbound: Inbound) -> bool:
    """Tell such a sender briefly that the bot cannot talk with them in private, where the
    plugin would answer a private message (its account, private chats open, not another
    plugin's command); whether they were told. A failed send is logged."""
    if not inbound.accounts.serves(bot.self_id) or str(event.self_id) != bot.self_id:
        return False
    if not await private_chat_served(bot, event, inbound.config):
        return False
    message = event.get_message()
    if (
        inbound.config.aimemory_ignore_other_commands
        and parse_command(command_text(message)) is None
        and is_another_plugins_command(message, bot.config.command_start)
    ):
        return False  # `/status` is the status plugin's
    try:
        await bot.send(event, Message(MessageSegment.text(texts.PRIVATE_SENDER_UNKNOWN)))
    except Exception:
        logger.exception("could not tell private sender %r that it has no QQ number", event.user_id)
    return True
