"""What the bot sends: an `Outcome` as OneBot v11 messages. The model's text is made to read
well in QQ (Markdown marks dropped, long replies split), image links it writes become QQ
images (only safe, size-capped downloads) and `@QQ号` of a group member becomes a real @.
Each sent message's id is recorded with its chat, so a quote of it is shown only there."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import nonebot
from nonebot.adapters.onebot.v11 import (
    Bot,
    GroupMessageEvent,
    Message,
    MessageEvent,
    MessageSegment,
)

from .. import texts
from ..conversation import Outcome
from ..media import ImageReader, download_image
from ..scopes import Scope
from ..store import SentMessage, SentMessages, message_key, utc_now_text
from .inbound import session_key_for
from .members import MemberNames
from .quotes import chat_scope

logger = logging.getLogger("nonebot_plugin_aimemory")

# Failed attempts count too: fifty hanging links must not hold the session for minutes.
MAX_REPLY_IMAGE_ATTEMPTS = 3
# `![alt](url)`, `![alt](<url>)`, each with an optional CommonMark title ("t", 't' or (t)).
_MARKDOWN_IMAGE = (
    r"!\[[^\]]*\]\(\s*<?(https?://[^\s<>)]+)>?"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
# A bare link whose path ends in an image extension, and the link ends there (or after its
# query): `a.png.html`, `a.pngx` or `a.png/b` name something else. CJK text may follow.
_BARE_IMAGE = (
    r"(https?://[^\s<>\"'）)]+?\.(?:png|jpe?g|gif|webp)(?:\?[^\s<>\"'）)]*)?)"
    r"(?![A-Za-z0-9_\-/%#]|\.[A-Za-z0-9_])"
)
_REPLY_IMAGE = re.compile(f"{_MARKDOWN_IMAGE}|{_BARE_IMAGE}", re.IGNORECASE)
# Not inside an email address (`foo@123456.com`, `a.b@123456`); ASCII-only classes, as
# Chinese text right before an @ is common and `\w` would match it.
_REPLY_AT = re.compile(r"(?<![A-Za-z0-9_.])@(\d{5,11})(?!\d)(?!\.[A-Za-z0-9_])")


class ReplyBuilder:
    """The model's text as QQ segments: safe images become image segments, `@QQ号` of a
    group member becomes a real @; everything else stays literal text (no CQ parsing).
    With `public_only`, image links to the bot's own network stay text."""

    def __init__(
        self, images: ImageReader, members: MemberNames, *, public_only: bool = True
    ) -> None:
        self.images = images
        self.members = members
        self.public_only = public_only

    async def build(
        self, bot: Bot, event: MessageEvent, pieces: list[str]
    ) -> list[list[MessageSegment]]:
        """The pieces of one reply as messages: the first `MAX_REPLY_IMAGE_ATTEMPTS` image
        links of the whole reply are fetched together, those that arrive become images (once
        each), and every other link stays text."""
        pictures = await self._fetch_pictures(reply_image_links(pieces))
        # Each picture is taken out at its first link: a repeated link stays text after.
        return [await self._build_piece(bot, event, piece, pictures) for piece in pieces]

    async def _build_piece(
        self, bot: Bot, event: MessageEvent, text: str, pictures: dict[str, MessageSegment]
    ) -> list[MessageSegment]:
        segments: list[MessageSegment] = []
        position = 0
        for match in _REPLY_IMAGE.finditer(text):
            picture = pictures.pop(match.group(1) or match.group(2), None)
            if picture is None:
                continue
            segments += await self._text(bot, event, text[position : match.start()])
            segments.append(picture)
            position = match.end()
        segments += await self._text(bot, event, text[position:])
        return segments or [MessageSegment.text(text)]

    async def _fetch_pictures(self, urls: list[str]) -> dict[str, MessageSegment]:
        """The links that could be fetched safely, as image segments. Each attempt counts,
        failed or not, and they run at once: a reply of hanging links waits one timeout."""
        attempted = urls[:MAX_REPLY_IMAGE_ATTEMPTS]
        if len(urls) > len(attempted):
            logger.info("reply has %d image links; only %d are fetched", len(urls), len(attempted))
        fetched = await asyncio.gather(*(self._image(url) for url in attempted))
        return {
            url: picture
            for url, picture in zip(attempted, fetched, strict=True)
            if picture is not None
        }

    async def _image(self, url: str) -> MessageSegment | None:
        try:
            image = await download_image(
                self.images.fetcher, url, self.images.max_bytes, public_only=self.public_only
            )
        except Exception as exc:
            logger.info("reply image not sent as an image (%r): %s", exc, url[:80])
            return None
        return MessageSegment.image(image.data)

    async def _text(self, bot: Bot, event: MessageEvent, text: str) -> list[MessageSegment]:
        if not text:
            return []
        if not isinstance(event, GroupMessageEvent):
            return [MessageSegment.text(text)]
        segments: list[MessageSegment] = []
        position = 0
        for match in _REPLY_AT.finditer(text):
            qq = int(match.group(1))
            if await self.members.name(bot, event.group_id, qq) is None:
                continue
            if match.start() > position:
                segments.append(MessageSegment.text(text[position : match.start()]))
            segments.append(MessageSegment.at(qq))
            position = match.end()
        if position < len(text):
            segments.append(MessageSegment.text(text[position:]))
        return segments


@dataclass
class SentRecords:
    """What one outcome sent, by the bot account `account`: recorded in one write after
    its last send (a record is about what went out, so nothing waits for it before)."""

    account: str
    records: list[SentMessage] = field(default_factory=list)

    def add(self, chat: Scope, answer: object) -> None:
        """Note the message a send API answered `answer` for, sent to `chat`; an answer
        without an id (some implementations) leaves it unrecorded: quotes of it stay hidden."""
        message_id = sent_message_id(answer)
        if message_id is None:
            logger.debug("a message sent to %s came back without an id: %r", chat, answer)
            return
        self.records.append(SentMessage(self.account, message_id, str(chat), utc_now_text()))


def sent_message_id(answer: object) -> str | None:
    """The id a send API answered with, in any implementation's shape: `{"message_id": 1}`
    (OneBot v11), a bare id, or none at all."""
    if isinstance(answer, Mapping):
        answer = answer.get("message_id")
    return message_key(answer)


class Outbound:
    """Sends outcomes: the model's replies through the ReplyBuilder, other texts as text,
    notices for the SUPERUSERS as private messages (to NoneBot's SUPERUSERS unless
    `superusers` is given); records each sent message's chat in `sent`."""

    def __init__(
        self,
        replies: ReplyBuilder,
        sent: SentMessages,
        *,
        max_chars: int,
        max_parts: int,
        superusers: Iterable[str] | None = None,
    ) -> None:
        self.replies = replies
        self.sent = sent
        self.max_chars = max_chars
        self.max_parts = max_parts
        self.superusers = None if superusers is None else frozenset(superusers)

    async def send(self, bot: Bot, event: MessageEvent, outcome: Outcome) -> None:
        """Send the outcome's messages in order, record where they went, then let its
        session go on. A failed send is logged: the answer is already in the history."""
        records = SentRecords(str(bot.self_id))
        try:
            if outcome.from_model:
                await self._send_model_text(bot, event, outcome.texts, records)
            elif outcome.texts:
                await send_texts(bot, event, outcome.texts, records)
        except Exception:
            logger.exception(
                "account %s could not send its reply in %s (the answer stays in the window)",
                bot.self_id,
                session_key_for(event),
            )
        finally:
            if outcome.notify_superusers:
                await self._notify_superusers(bot, outcome.notify_superusers, records)
            await self._record(records)
            outcome.mark_delivered()

    async def _record(self, records: SentRecords) -> None:
        """Keep where the sent messages went; a failure is logged (their quotes stay
        hidden), never raised: the messages are out."""
        try:
            await self.sent.record(records.records)
        except Exception:
            chats = sorted({record.chat_key for record in records.records})
            logger.exception("could not record %d sent messages of %s", len(records.records), chats)

    async def _notify_superusers(self, bot: Bot, text: str, records: SentRecords) -> None:
        """The notice as a private message to each SUPERUSER; a failed send is logged."""
        superusers = self.superusers
        if superusers is None:
            superusers = frozenset(nonebot.get_driver().config.superusers)
        for user_id in sorted(qq_ids(superusers)):
            try:
                answer = await bot.send_private_msg(
                    user_id=user_id, message=Message(MessageSegment.text(text))
                )
            except Exception:
                logger.exception("could not send a notice to superuser %s", user_id)
            else:
                records.add(Scope.friend(user_id), answer)

    async def _send_model_text(
        self, bot: Bot, event: MessageEvent, replies: list[str], records: SentRecords
    ) -> None:
        for reply in replies:
            pieces = split_reply(
                plain_for_qq(reply), max_chars=self.max_chars, max_parts=self.max_parts
            )
            messages = await self.replies.build(bot, event, pieces)
            await send_segments(bot, event, messages, records)


def reply_image_links(pieces: Iterable[str]) -> list[str]:
    """The distinct image links of a reply, in the order they appear."""
    links = (
        match.group(1) or match.group(2)
        for piece in pieces
        for match in _REPLY_IMAGE.finditer(piece)
    )
    return list(dict.fromkeys(links))


def qq_ids(superusers: Iterable[str]) -> set[int]:
    """The QQ numbers among NoneBot SUPERUSERS: `<QQ号>` or `onebot:<QQ号>`, as NoneBot's
    SUPERUSER check reads them (entries of other adapters are skipped)."""
    ids: set[int] = set()
    for entry in superusers:
        number = entry.strip().removeprefix("onebot:")
        if number.isdigit():
            ids.add(int(number))
    return ids


async def send_texts(
    bot: Bot, event: MessageEvent, replies: list[str], records: SentRecords
) -> None:
    """Send texts in order as text segments, so CQ-code lookalikes stay literal."""
    await send_segments(bot, event, [[MessageSegment.text(text)] for text in replies], records)


async def send_segments(
    bot: Bot, event: MessageEvent, messages: list[list[MessageSegment]], records: SentRecords
) -> None:
    """Send messages in order, each noted in `records` as sent to the event's chat; in
    groups the first one quotes the triggering message."""
    chat = chat_scope(event)
    for index, segments in enumerate(messages):
        if index == 0 and isinstance(event, GroupMessageEvent):
            # Built in one go: `segment + message` deep-copies the message.
            segments = [MessageSegment.reply(event.message_id), *segments]
        records.add(chat, await bot.send(event, Message(segments)))


# Prefer to cut at a paragraph, then a line, then a sentence end, then anywhere.
_BREAKS = ("\n\n", "\n", "。", "！", "？", ". ", "! ", "? ", "；", "，", " ")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*```[^\n`]*\n?", re.MULTILINE)
# `[text](url)` but not an image `![alt](url)`: the reply builder turns those into pictures.
_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\((https?://[^\s)]+)\)")


def plain_for_qq(text: str) -> str:
    """The model's Markdown as QQ shows it best: bold and heading marks and code fences
    dropped, `[text](url)` written as `text（url）`; images and everything else untouched."""
    text = _FENCE.sub("", text)
    text = _HEADING.sub("", text)
    text = _BOLD.sub(r"\2", text)
    return _LINK.sub(r"\1（\2）", text)


def split_reply(text: str, *, max_chars: int, max_parts: int) -> list[str]:
    """Split `text` into at most `max_parts` messages of at most `max_chars` characters."""
    text = text.strip()
    parts: list[str] = []
    while text:
        if len(parts) == max_parts - 1 and len(text) > max_chars:
            keep = max_chars - len(texts.REPLY_TRUNCATED)
            parts.append(text[:keep].rstrip() + texts.REPLY_TRUNCATED)
            break
        if len(text) <= max_chars:
            parts.append(text)
            break
        cut = _best_cut(text, max_chars)
        parts.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return parts


def _best_cut(text: str, max_chars: int) -> int:
    window = text[:max_chars]
    for mark in _BREAKS:
        position = window.rfind(mark)
        if position >= max_chars // 2:
            return position + len(mark)
    return max_chars
