"""QQ message segments (OneBot v11) as model input, without any I/O: text, @, image
markers, faces, cards, files. Nothing here raises on an odd segment; it becomes a short
marker instead."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from typing import Any

from nonebot.adapters.onebot.v11 import Message, MessageSegment

from ..engine import Part, TextPart
from ..media import marker, short_hash_of
from ..text import FORWARD_MARKER as FORWARD_MARKER

logger = logging.getLogger("nonebot_plugin_aimemory")

CARD_TITLE_KEYS = ("title", "prompt", "desc", "tag")
CARD_URL_KEYS = ("qqdocurl", "jumpUrl", "url", "jumpurl")
# Both stop at the first quote after the attribute: linear, whatever the card holds.
_XML_URL = re.compile(r'url="([^"]+)"')
_XML_BRIEF = re.compile(r'brief="([^"]*)"')


def render_safely(segment: MessageSegment, self_id: str) -> Part | None:
    """render_segment, with a `[type]` placeholder should an odd segment still break it."""
    try:
        return render_segment(segment, self_id)
    except Exception:
        logger.warning("could not render a %r segment", getattr(segment, "type", "?"))
        return TextPart(f"[{getattr(segment, 'type', '消息')}]")


def render_segment(segment: MessageSegment, self_id: str) -> Part | None:
    """One segment, without I/O. The bot's own @ and reply segments render as nothing."""
    data = segment.data if isinstance(segment.data, dict) else {}
    kind = segment.type
    if kind == "text":
        return TextPart(str(data.get("text", "")))
    if kind == "at":
        at = plain_at_text(data, self_id)
        return TextPart(at) if at is not None else None
    if kind == "image":
        identity = str(data.get("file") or data.get("url") or "")
        return TextPart(marker(short_hash_of(identity)))
    if kind == "reply":
        return None
    simple = _simple_marker(kind, data)
    return TextPart(simple if simple is not None else f"[{kind}]")


def plain_at_text(data: dict[str, Any], self_id: str) -> str | None:
    """`@<name or QQ number> ` of an at segment's data; None for an @ of `self_id`."""
    qq = str(data.get("qq", ""))
    if qq == self_id:
        return None
    return "@全体成员 " if qq == "all" else f"@{data.get('name') or qq} "


def _simple_marker(kind: str, data: dict[str, Any]) -> str | None:
    if kind == "face":
        raw = dict_at(data, "raw")
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
        return FORWARD_MARKER
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
        brief = _XML_BRIEF.search(raw)
        title = _element_text(raw, "title") or (brief.group(1).strip() if brief else "")
        link = _XML_URL.search(raw)
        url = link.group(1) if link else ""
    text = " ".join(part for part in (title[:60], url[:200]) if part)
    return f"[卡片：{text}]" if text else "[卡片]"


def _element_text(xml: str, tag: str) -> str:
    """The text of the first `<tag>…</tag>`, found with two scans (a lazy regex is
    quadratic on a card of many unclosed tags)."""
    opening, closing = f"<{tag}>", f"</{tag}>"
    start = xml.find(opening)
    if start < 0:
        return ""
    start += len(opening)
    end = xml.find(closing, start)
    return xml[start:end].strip() if end >= 0 else ""


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


def merge_text(parts: Iterable[Part]) -> list[Part]:
    """Join adjacent text parts into one; linear however many there are (joining them
    pairwise copied the text once per part)."""
    merged: list[Part] = []
    run: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            run.append(part.text)
            continue
        if run:
            merged.append(TextPart("".join(run)))
            run = []
        merged.append(part)
    if run:
        merged.append(TextPart("".join(run)))
    return merged


def part_text(part: Part) -> str:
    return part.text if isinstance(part, TextPart) else part.marker


def dict_at(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    """`mapping[key]` when it is an object; an empty one otherwise (implementations differ
    in what they leave out)."""
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def data_of(segment: MessageSegment) -> dict[str, Any]:
    return segment.data if isinstance(segment.data, dict) else {}


def as_segments(content: Any) -> list[MessageSegment]:
    """Message content as segments: CQ-code text (go-cqhttp's string format) is parsed, so
    an image becomes a marker and its URL never reaches the model."""
    if isinstance(content, str):
        return list(Message(content))
    if not isinstance(content, list):
        return []
    segments = (
        raw if isinstance(raw, MessageSegment) else _segment_from_dict(raw) for raw in content
    )
    return [segment for segment in segments if segment is not None]


def _segment_from_dict(raw: Any) -> MessageSegment | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return None
    return MessageSegment(raw["type"], dict_at(raw, "data"))
