"""The message a QQ message quotes, from the adapter's `event.reply` or from `get_msg`,
and whether it may be shown in the chat it is quoted in: a message id names a message of
any chat the bot is in, so a quote could otherwise show one group what another group said,
or one person what the bot told another. The bot's own messages are placed by the record
of where each was sent (store/sent_messages.py), as some implementations report no peer
for the bot's private messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nonebot.adapters.onebot.v11 import GroupMessageEvent, MessageEvent, MessageSegment
from nonebot.adapters.onebot.v11.event import Reply

from .. import texts
from ..scopes import Scope
from ..store import SentMessages, message_key
from .segments import as_segments, dict_at

HIDDEN_QUOTE = texts.QUOTE_HIDDEN


def chat_scope(event: MessageEvent) -> Scope:
    """The chat the event belongs to: its group, or the private chat with its sender."""
    if isinstance(event, GroupMessageEvent):
        return Scope.group(event.group_id)
    return Scope.friend(event.user_id)


@dataclass(frozen=True, slots=True)
class QuotedMessage:
    """Which message is quoted, who said it, what it holds, and where it was said, as far
    as the implementation reports it (None for a field it leaves out)."""

    message_id: str | None
    sender_id: str | None
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
            message_id=message_key(reply.message_id),
            sender_id=_id_or_none(sender.user_id),
            sender_name=getattr(sender, "card", None) or sender.nickname,
            segments=list(reply.message),
            message_type=reply.message_type,
            group_id=_id_or_none(getattr(reply, "group_id", None)),
            target_id=_id_or_none(getattr(reply, "target_id", None)),
        )

    @classmethod
    def from_get_msg(cls, fetched: dict[str, Any], asked_id: object = None) -> QuotedMessage:
        """From a `get_msg` answer, in any implementation's shape; `asked_id` is the id it
        was asked for (the one a send answered with), else the answer's own is used."""
        sender = dict_at(fetched, "sender")
        message_type = fetched.get("message_type")
        return cls(
            message_id=message_key(asked_id) or message_key(fetched.get("message_id")),
            sender_id=_id_or_none(sender.get("user_id")),
            sender_name=sender.get("card") or sender.get("nickname"),
            segments=as_segments(fetched.get("message")),
            message_type=message_type if isinstance(message_type, str) else None,
            group_id=_id_or_none(fetched.get("group_id")),
            target_id=_id_or_none(fetched.get("target_id")),
        )

    async def shown_in_chat_of(self, event: MessageEvent, sent: SentMessages) -> bool:
        """Whether the quote may be shown in the event's chat. What the implementation
        reports must agree (`belongs_to_chat_of`); a message of the bot must also be
        recorded as sent to this chat (one sent before records were kept is not). For a
        message naming no sender, a record of another chat hides it too."""
        if not self.belongs_to_chat_of(event):
            return False
        if self.sender_id is not None and self.sender_id != str(event.self_id):
            return True
        recorded = await self.recorded_chat(event, sent)
        if self.sender_id is None and recorded is None:
            return True
        return recorded == chat_scope(event)

    async def recorded_chat(self, event: MessageEvent, sent: SentMessages) -> Scope | None:
        """The chat the event's bot account sent this message to, if it is recorded."""
        if self.message_id is None:
            return None
        key = await sent.chat_of(str(event.self_id), self.message_id)
        return None if key is None else Scope.parse_or_none(key)

    def belongs_to_chat_of(self, event: MessageEvent) -> bool:
        """Whether what the implementation reports places the quote in the event's chat: in
        a group, a message of that group; in a private chat, a private message of the user
        or of the bot (to that user). What it leaves out (Lagrange sends no `group_id`,
        some send no `target_id`) is not held against the quote."""
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
