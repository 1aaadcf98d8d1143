"""QQ message content (OneBot v11 segments) as model input: text, @, images, faces, quoted
replies, forwarded chat records, cards, files. Nothing here raises on an odd segment; it
becomes a short marker instead."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable
from typing import Any

from nonebot.adapters.onebot.v11 import Bot, GroupMessageEvent, MessageEvent, MessageSegment

from .engine.messages import Part, TextPart
from .media import ImageReader, download_image, marker, short_hash_of

logger = logging.getLogger("nonebot_plugin_aimemory")

API_TIMEOUT_SECONDS = 5.0
QUOTE_MAX_CHARS = 100
FORWARD_MAX_LINES = 20
FORWARD_LINE_MAX_CHARS = 100
FORWARD_MAX_DEPTH = 2
MEMBER_NAME_TTL_SECONDS = 600.0
# A failed lookup may be a passing API error: retry it sooner than a known name.
MEMBER_MISS_TTL_SECONDS = 60.0
UNAVAILABLE_QUOTE = "[引用了一条无法获取的消息]"
MEMBER_CACHE_SIZE = 4096
CARD_TITLE_KEYS = ("title", "prompt", "desc", "tag")
CARD_URL_KEYS = ("qqdocurl", "jumpUrl", "url", "jumpurl")
_XML_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_XML_URL = re.compile(r'url="([^"]+)"')
_XML_BRIEF = re.compile(r'brief="([^"]*)"')


def render_plain(event: MessageEvent) -> list[Part]:
    """The content without any I/O (no downloads, no API calls): the cheap form used for
    messages the bot only logs."""
    self_id = str(event.self_id)
    parts: list[Part] = []
    for segment in event.message:
        try:
            part = render_segment(segment, self_id)
        except Exception:
            logger.warning("could not render a %r segment", getattr(segment, "type", "?"))
            part = TextPart(f"[{getattr(segment, 'type', '消息')}]")
        if part is not None:
            parts.append(part)
    return merge_text(parts)


def render_segment(segment: MessageSegment, self_id: str) -> Part | None:
    """One segment, without I/O. The bot's own @ and reply segments render as nothing."""
    data = segment.data if isinstance(segment.data, dict) else {}
    kind = segment.type
    if kind == "text":
        return TextPart(str(data.get("text", "")))
    if kind == "at":
        qq = str(data.get("qq", ""))
        if qq == self_id:
            return None
        return TextPart("@全体成员 " if qq == "all" else f"@{data.get('name') or qq} ")
    if kind == "image":
        identity = str(data.get("file") or data.get("url") or "")
        return TextPart(marker(short_hash_of(identity)))
    if kind == "reply":
        return None
    simple = _simple_marker(kind, data)
    return TextPart(simple if simple is not None else f"[{kind}]")


def _simple_marker(kind: str, data: dict[str, Any]) -> str | None:
    if kind == "face":
        raw = data.get("raw") if isinstance(data.get("raw"), dict) else {}
        name = str(raw.get("faceText") or data.get("faceText") or "").strip().lstrip("/")
        return f"[表情:{name or data.get('id', '?')}]"
    if kind == "mface":
        summary = str(data.get("summary") or "").strip("[]")
        return f"[表情:{summary or '表情包'}]"
    if kind in ("json", "xml"):
        return render_card(kind, data)
    if kind == "share":
        return f"[分享：{data.get('title', '')} {data.get('url', '')}]".replace("  ", " ")
    if kind == "file":
        return f"[文件 {data.get('name') or data.get('file') or ''}]".replace(" ]", "]")
    if kind == "record":
        return "[语音]"
    if kind == "video":
        return "[视频]"
    if kind == "location":
        return f"[位置 {data.get('title') or ''}]".replace(" ]", "]")
    if kind in ("dice", "rps", "poke", "shake"):
        return {"dice": "[骰子]", "rps": "[猜拳]"}.get(kind, "[戳一戳]")
    if kind == "forward":
        return "[合并转发的聊天记录]"
    if kind == "markdown":
        return str(data.get("content", ""))[:500]
    return None


def render_card(kind: str, data: dict[str, Any]) -> str:
    """A JSON/XML card (mini-program, shared link) as its title and URL."""
    raw = str(data.get("data", ""))
    title = url = ""
    if kind == "json":
        try:
            card = json.loads(raw)
        except json.JSONDecodeError:
            card = {}
        title, url = _card_fields(card)
    else:
        found = _XML_TITLE.search(raw) or _XML_BRIEF.search(raw)
        title = found.group(1).strip() if found else ""
        link = _XML_URL.search(raw)
        url = link.group(1) if link else ""
    text = " ".join(part for part in (title[:60], url[:200]) if part)
    return f"[卡片：{text}]" if text else "[卡片]"


def _card_fields(card: Any, depth: int = 0) -> tuple[str, str]:
    """Search a card's nested JSON for the first title-like and URL-like values."""
    title = url = ""
    if not isinstance(card, dict) or depth > 4:
        return title, url
    for key in CARD_TITLE_KEYS:
        if isinstance(card.get(key), str) and card[key].strip():
            title = card[key].strip()
            break
    for key in CARD_URL_KEYS:
        if isinstance(card.get(key), str) and card[key].startswith("http"):
            url = card[key]
            break
    for value in card.values():
        if title and url:
            break
        inner_title, inner_url = _card_fields(value, depth + 1)
        title, url = title or inner_title, url or inner_url
    return title, url


def merge_text(parts: list[Part]) -> list[Part]:
    """Join adjacent text parts into one."""
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, TextPart) and merged and isinstance(merged[-1], TextPart):
            merged[-1] = TextPart(merged[-1].text + part.text)
        else:
            merged.append(part)
    return merged


class MemberNames:
    """Group card / nickname lookups, cached for a while (an @ costs at most one API call)."""

    def __init__(self) -> None:
        self._cache: OrderedDict[tuple[int, int], tuple[float, str | None]] = OrderedDict()

    async def name(self, bot: Bot, group_id: int, user_id: int) -> str | None:
        """Card or nickname; None when the user is not a member (or the lookup failed)."""
        key = (group_id, user_id)
        cached = self._cache.get(key)
        if cached is not None:
            ttl = MEMBER_NAME_TTL_SECONDS if cached[1] is not None else MEMBER_MISS_TTL_SECONDS
            if time.monotonic() - cached[0] < ttl:
                return cached[1]
        info = await _call(bot.get_group_member_info(group_id=group_id, user_id=user_id))
        name = None
        if isinstance(info, dict):
            name = str(info.get("card") or info.get("nickname") or user_id)
        self._cache[key] = (time.monotonic(), name)
        self._cache.move_to_end(key)
        while len(self._cache) > MEMBER_CACHE_SIZE:
            self._cache.popitem(last=False)
        return name


class ContentRenderer:
    """The rich form of an addressed message: images read, names looked up, the quoted
    message and forwarded records fetched."""

    def __init__(self, images: ImageReader, members: MemberNames) -> None:
        self.images = images
        self.members = members

    async def render(self, bot: Bot, event: MessageEvent) -> list[Part]:
        """The quoted message, then every segment; a part that fails renders as a placeholder."""
        parts: list[Part] = []
        try:
            quote = await self.quote(bot, event)
        except Exception:
            logger.warning("could not render the quoted message", exc_info=True)
            quote = UNAVAILABLE_QUOTE
        if quote:
            parts.append(TextPart(quote + "\n"))
        for segment in event.message:
            try:
                parts.extend(await self.segment(bot, event, segment, depth=0))
            except Exception:
                logger.warning("could not render a %r segment", segment.type, exc_info=True)
                parts.append(TextPart(f"[{segment.type}]"))
        return merge_text(parts)

    async def segment(
        self, bot: Bot, event: MessageEvent, segment: MessageSegment, depth: int
    ) -> list[Part]:
        """One segment in rich form, fetching what it needs (images, @names, forwards)."""
        data = segment.data if isinstance(segment.data, dict) else {}
        if segment.type == "image":
            url = str(data.get("url") or data.get("file") or "")
            return [await self.images.read(url, str(data.get("file") or url))]
        if segment.type == "at" and isinstance(event, GroupMessageEvent):
            qq = str(data.get("qq", ""))
            if qq.isdigit() and qq != str(event.self_id) and not data.get("name"):
                name = await self.members.name(bot, event.group_id, int(qq))
                return [TextPart(f"@{name or qq} ")]
        if segment.type == "forward" and depth < FORWARD_MAX_DEPTH:
            return [TextPart(await self.forward(bot, data, depth))]
        part = render_segment(segment, str(event.self_id))
        return [part] if part is not None else []

    async def quote(self, bot: Bot, event: MessageEvent) -> str | None:
        """`[引用 小明(12345)：…]` for a message that replies to another one."""
        reply = getattr(event, "reply", None)
        if reply is not None:
            sender = reply.sender
            return _quote_line(
                str(event.self_id),
                sender.user_id,
                getattr(sender, "card", None) or sender.nickname,
                _plain(reply.message, str(event.self_id)),
            )
        segment = next((s for s in event.original_message if s.type == "reply"), None)
        if segment is None:
            return None
        data = segment.data if isinstance(segment.data, dict) else {}
        try:
            message_id = int(str(data.get("id", "")))
        except ValueError:
            return UNAVAILABLE_QUOTE
        fetched = await _call(bot.get_msg(message_id=message_id))
        if not isinstance(fetched, dict):
            return UNAVAILABLE_QUOTE
        sender = fetched.get("sender") if isinstance(fetched.get("sender"), dict) else {}
        return _quote_line(
            str(event.self_id),
            sender.get("user_id"),
            sender.get("card") or sender.get("nickname"),
            _plain(_as_segments(fetched.get("message")), str(event.self_id)),
        )

    async def forward(self, bot: Bot, data: dict[str, Any], depth: int) -> str:
        """A forwarded chat record flattened to at most FORWARD_MAX_LINES lines."""
        nodes = data.get("content") if isinstance(data.get("content"), list) else None
        if nodes is None and data.get("id"):
            fetched = await _call(bot.get_forward_msg(id=str(data["id"])))
            if isinstance(fetched, dict):
                nodes = fetched.get("messages") or fetched.get("message")
            elif isinstance(fetched, list):
                nodes = fetched
        if not isinstance(nodes, list) or not nodes:
            return "[合并转发的聊天记录（无法获取）]"
        lines = []
        for node in nodes[:FORWARD_MAX_LINES]:
            if not isinstance(node, dict):
                continue
            body = node.get("data") if node.get("type") == "node" else node
            body = body if isinstance(body, dict) else {}
            sender = body.get("sender") if isinstance(body.get("sender"), dict) else {}
            name = sender.get("card") or sender.get("nickname") or body.get("nickname") or "某人"
            content = body.get("message", body.get("content"))
            text = _plain(_as_segments(content), "")[:FORWARD_LINE_MAX_CHARS]
            lines.append(f"{name}：{text}")
        more = len(nodes) - FORWARD_MAX_LINES
        tail = f"\n…（还有 {more} 条）" if more > 0 else ""
        return "[合并转发的聊天记录]\n" + "\n".join(lines) + tail + "\n"


def _quote_line(self_id: str, user_id: object, name: object, text: str) -> str:
    speaker = "机器人" if str(user_id) == self_id else f"{name or user_id}({user_id})"
    return f"[引用 {speaker}：{text[:QUOTE_MAX_CHARS]}]"


def _plain(segments: Any, self_id: str) -> str:
    """Plain text of a segment list (dicts or MessageSegments), without I/O."""
    parts = []
    for raw in segments or ():
        segment = raw if isinstance(raw, MessageSegment) else _segment_from_dict(raw)
        if segment is None:
            continue
        part = render_segment(segment, self_id)
        if part is not None:
            parts.append(part.text if isinstance(part, TextPart) else part.marker)
    return "".join(parts).strip()


def _as_segments(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [MessageSegment.text(content)]
    return content if isinstance(content, list) else []


def _segment_from_dict(raw: Any) -> MessageSegment | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return None
    data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
    return MessageSegment(raw["type"], data)


async def _call(request: Awaitable[Any]) -> Any:
    """An API call that may fail or hang: None instead of an exception."""
    try:
        return await asyncio.wait_for(request, API_TIMEOUT_SECONDS)
    except Exception as exc:
        logger.info("OneBot API call failed: %r", exc)
        return None


# ------------------------------------------------------------------ the model's reply -> QQ

MAX_REPLY_IMAGES = 3
_REPLY_IMAGE = re.compile(
    r"!\[[^\]]*\]\((https?://[^\s)]+)\)|(https?://[^\s<>\"'）)]+?\.(?:png|jpe?g|gif|webp)(?:\?[^\s<>\"'）)]*)?)",
    re.IGNORECASE,
)
_REPLY_AT = re.compile(r"@(\d{5,11})(?!\d)")


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
