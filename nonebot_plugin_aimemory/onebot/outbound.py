"""The model's reply as OneBot v11 segments: image links it writes become QQ images (only
safe, size-capped downloads) and `@QQ号` of a group member becomes a real @."""

from __future__ import annotations

import logging
import re

from nonebot.adapters.onebot.v11 import Bot, GroupMessageEvent, MessageEvent, MessageSegment

from ..media.images import ImageReader, download_image
from .content import MemberNames

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_REPLY_IMAGES = 3
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

    async def build(self, bot: Bot, event: MessageEvent, text: str) -> list[MessageSegment]:
        """The reply as segments: safe image links as images (at most `MAX_REPLY_IMAGES`), the
        rest as text."""
        segments: list[MessageSegment] = []
        position = 0
        images = 0
        for match in _REPLY_IMAGE.finditer(text):
            url = match.group(1) or match.group(2)
            picture = await self._image(url) if images < MAX_REPLY_IMAGES else None
            if picture is None:
                continue
            segments += await self._text(bot, event, text[position : match.start()])
            segments.append(picture)
            images += 1
            position = match.end()
        segments += await self._text(bot, event, text[position:])
        return segments or [MessageSegment.text(text)]

    async def _image(self, url: str) -> MessageSegment | None:
        try:
            image = await download_image(
                self.images.http, url, self.images.max_bytes, public_only=self.public_only
            )
        except Exception as exc:
            logger.info("reply image not sent as an image (%s): %s", exc, url[:80])
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
