"""Who may talk to the bot where, and who may manage a conversation."""

from __future__ import annotations

from nonebot.adapters.onebot.v11 import (
    GROUP_ADMIN,
    GROUP_OWNER,
    Bot,
    GroupMessageEvent,
    MessageEvent,
)
from nonebot.permission import SUPERUSER

from ..config import Config

MANAGERS = GROUP_ADMIN | GROUP_OWNER | SUPERUSER


def is_served_group(event: MessageEvent, config: Config) -> bool:
    """False for a denied group, or one missing from a non-empty allowlist: there the bot is
    silent. Synchronous, as every unaddressed group message passes here."""
    if not isinstance(event, GroupMessageEvent):
        return True
    if event.group_id in config.denied_groups:
        return False
    return not config.allowed_groups or event.group_id in config.allowed_groups


async def private_chat_served(bot: Bot, event: MessageEvent, config: Config) -> bool:
    """Private chats are for everyone, or (switched off) for SUPERUSERS only."""
    return config.aimemory_private_chat or await is_superuser(bot, event)


async def is_manager(bot: Bot, event: MessageEvent) -> bool:
    """Group owner/admin or a superuser in groups; in private chats the user owns the chat."""
    if not isinstance(event, GroupMessageEvent):
        return True
    return await MANAGERS(bot, event)


async def is_superuser(bot: Bot, event: MessageEvent) -> bool:
    """Whether the sender is one of NoneBot's SUPERUSERS, by NoneBot's own permission."""
    return await SUPERUSER(bot, event)
