"""OneBot v11 event factories for nonebug tests and the reverse-WebSocket suite."""

from __future__ import annotations

import itertools
import time
from typing import Any

from nonebot.adapters.onebot.v11 import (
    GroupMessageEvent,
    Message,
    MessageSegment,
    PrivateMessageEvent,
)

SELF_ID = 42
# The start of the current minute: predictable within a run, and always recent, so the
# chat log's retention cleanup at startup never removes what a test just logged.
EVENT_TIME = int(time.time()) // 60 * 60
_message_ids = itertools.count(1000)


def as_message(content: str | Message | MessageSegment) -> Message:
    if isinstance(content, Message):
        return content
    return (
        Message(content)
        if isinstance(content, MessageSegment)
        else Message(MessageSegment.text(content))
    )


def group_message(
    content: str | Message | MessageSegment,
    *,
    group_id: int = 111,
    user_id: int = 2001,
    card: str = "小明",
    nickname: str = "xiaoming",
    role: str = "member",
    to_me: bool = False,
    message_id: int | None = None,
    event_time: int = EVENT_TIME,
) -> GroupMessageEvent:
    message = as_message(content)
    return GroupMessageEvent(
        time=event_time,
        self_id=SELF_ID,
        post_type="message",
        sub_type="normal",
        user_id=user_id,
        message_type="group",
        group_id=group_id,
        message_id=message_id if message_id is not None else next(_message_ids),
        message=message,
        original_message=message.copy(),
        raw_message=str(message),
        font=0,
        sender={"user_id": user_id, "nickname": nickname, "card": card, "role": role},
        to_me=to_me,
    )


def private_message(
    content: str | Message | MessageSegment,
    *,
    user_id: int = 3001,
    nickname: str = "小红",
    message_id: int | None = None,
    event_time: int = EVENT_TIME,
) -> PrivateMessageEvent:
    message = as_message(content)
    return PrivateMessageEvent(
        time=event_time,
        self_id=SELF_ID,
        post_type="message",
        sub_type="friend",
        user_id=user_id,
        message_type="private",
        message_id=message_id if message_id is not None else next(_message_ids),
        message=message,
        original_message=message.copy(),
        raw_message=str(message),
        font=0,
        sender={"user_id": user_id, "nickname": nickname},
        to_me=True,
    )


def onebot_payload(event: GroupMessageEvent | PrivateMessageEvent) -> dict[str, Any]:
    """The JSON a OneBot implementation sends over the WebSocket for `event`."""
    data = event.model_dump()
    data["message"] = [{"type": seg.type, "data": dict(seg.data)} for seg in event.original_message]
    data.pop("original_message", None)
    data.pop("to_me", None)
    data.pop("reply", None)
    data["time"] = data.get("time") or int(time.time())
    return data
