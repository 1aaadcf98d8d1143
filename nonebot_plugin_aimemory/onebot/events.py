"""Everything specific to OneBot v11: who is addressed, how QQ segments become model input,
how replies go back, and who may manage a group's conversation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo

from nonebot.adapters.onebot.v11 import (
    GROUP_ADMIN,
    GROUP_OWNER,
    Bot,
    GroupMessageEvent,
    Message,
    MessageEvent,
    MessageSegment,
)
from nonebot.permission import SUPERUSER

from ..conversation.sessions import group_key, private_key

CHINA_STANDARD_TIME = timezone(timedelta(hours=8), "CST")
MANAGERS = GROUP_ADMIN | GROUP_OWNER | SUPERUSER


def session_key_for(event: MessageEvent) -> str:
    """The session key of the event's group, or of the user in private chat."""
    if isinstance(event, GroupMessageEvent):
        return group_key(event.group_id)
    return private_key(event.user_id)


def is_addressed(event: MessageEvent) -> bool:
    """Private messages always; in groups an @bot anywhere (the adapter only sees the first
    and last segment), a reply to the bot, or the nickname at the start (`to_me`)."""
    if event.to_me or not isinstance(event, GroupMessageEvent):
        return True
    self_id = str(event.self_id)
    return any(
        seg.type == "at" and str(seg.data.get("qq", "")) == self_id
        for seg in event.original_message
    )


def resolve_timezone(name: str) -> tzinfo:
    """The zone for message timestamps; China time when the name is unknown (no tzdata)."""
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except Exception:
        return CHINA_STANDARD_TIME


def speaker_name(event: MessageEvent) -> str:
    """The sender's group card, else nickname, else QQ number."""
    sender = event.sender
    name = (getattr(sender, "card", None) or sender.nickname or "").strip()
    return name or str(event.user_id)


def line_prefix(event: MessageEvent, zone: tzinfo) -> str:
    """`[2026-11-30 14:05] 小明(12345)：` in groups, `[2026-11-30 14:05] ` in private chats."""
    sent = datetime.fromtimestamp(event.time, zone).strftime("%Y-%m-%d %H:%M")
    if isinstance(event, GroupMessageEvent):
        return f"[{sent}] {speaker_name(event)}({event.user_id})："
    return f"[{sent}] "


async def send_parts(bot: Bot, event: MessageEvent, texts: list[str]) -> None:
    """Send texts in order as text segments, so CQ-code lookalikes stay literal."""
    await send_segments(bot, event, [[MessageSegment.text(text)] for text in texts])


async def send_segments(
    bot: Bot, event: MessageEvent, messages: list[list[MessageSegment]]
) -> None:
    """Send messages in order; in groups the first one quotes the triggering message."""
    for index, segments in enumerate(messages):
        message = Message(segments)
        if index == 0 and isinstance(event, GroupMessageEvent):
            message = MessageSegment.reply(event.message_id) + message
        await bot.send(event, message)


async def is_manager(bot: Bot, event: MessageEvent) -> bool:
    """Group owner/admin or a superuser in groups; in private chats the user owns the chat."""
    if not isinstance(event, GroupMessageEvent):
        return True
    return await MANAGERS(bot, event)


async def is_superuser(bot: Bot, event: MessageEvent) -> bool:
    """Whether the sender is a NoneBot superuser."""
    return await SUPERUSER(bot, event)
