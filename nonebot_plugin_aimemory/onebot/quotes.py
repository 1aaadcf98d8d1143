"""The message a QQ message quotes, from the adapter's `event.reply` or from `get_msg`,
and whether it belongs to the chat it is quoted in: a message id names a message of any
chat the bot is in, so a quote could otherwise show one group what another group said."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nonebot.adapters.onebot.v11 import GroupMessageEvent, MessageEvent, MessageSegment
from nonebot.adapters.onebot.v11.event import Reply

from .segments import as_segments, dict_at

HIDDEN_QUOTE = "[引用 无法显示]"


@dataclass(frozen=True, slots=True)
class QuotedMessage:
    """Who said the quoted message, what it holds, and where it was said, as far as the
    implementation reports it (None for a field it leaves out)."""

    sender_id: str
    sender_name: str | None
    segments: list[MessageSegment]
    message_type: str | None
    group_id: str | None
    # NapCat reports a private message's peer for the bot's own messages as `target_id`.
    target_id: str | None

    @classmethod
    def from_reply(cls, reply: Reply) -> QuotedMessage:
        """From the `event.reply` the adapter filled with `get_msg` (it keeps every field
        the implementation sent, `group_id` included)."""
        sender = reply.sender
        return cls(
            sender_id=str(sender.user_id),
            sender_name=getattr(sender, "card", None) or sender.nickname,
            segments=list(reply.message),
            message_type=reply.message_type,
            group_id=_id_or_none(getattr(reply, "group_id", None)),
            target_id=_id_or_none(getattr(reply, "target_id", None)),
        )

    @classmethod
    def from_get_msg(cls, fetched: dict[str, Any]) -> QuotedMessage:
        """From a `get_msg` answer, in any implementation's shape."""
        sender = dict_at(fetched, "sender")
        message_type = fetched.get("message_type")
        return cls(
            sender_id=str(sender.get("user_id")),
            sender_name=sender.get("card") or sender.get("nickname"),
            segments=as_segments(fetched.get("message")),
            message_type=message_type if isinstance(message_type, str) else None,
            group_id=_id_or_none(fetched.get("group_id")),
            target_id=_id_or_none(fetched.get("target_id")),
        )

    def belongs_to_chat_of(self, event: MessageEvent) -> bool:
        """Whether the quote was said in the event's chat: in a group, a message of that
        group; in a private chat, a private message of the user or of the bot (to that
        user). What the implementation reports must agree; what it leaves out (Lagrange
        sends no `group_id`) is not held against the quote."""
        kind = self.message_type or ("group" if self.group_id is not None else None)
        if isinstance(event, GroupMessageEvent):
            return kind in (None, "group") and self.group_id in (None, str(event.group_id))
        if kind not in (None, "private"):
            return False
        if self.sender_id == str(event.user_id):
            return True
        to_this_user = self.target_id in (None, str(event.user_id))
        return self.sender_id == str(event.self_id) and to_this_user


def _id_or_none(value: object) -> str | None:
    return None if value is None or value == "" else str(value)
