"""Long pastes: a message longer than MAX_PASTE_CHARS is cut before anything reads it
further (chat log, memory search, model), and the cut stays visible to the model."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nonebot.adapters.onebot.v11 import MessageSegment

from ..engine import Part, TextPart
from ..media import marker
from .segments import part_text, plain_at_text, render_safely

MAX_PASTE_CHARS = 8000
# Every image the bot has not read shows as `[图片 <8 hex digits>]`.
_IMAGE_MARKER_CHARS = len(marker("0" * 8))


def omission_note(cut_chars: int) -> str:
    """What ends a cut message, so the model knows there was more."""
    return f"…（以下省略 {cut_chars} 字）"


@dataclass(frozen=True, slots=True)
class KeptSegments:
    """The segments within the limit (the last text cut to fit), their plain form, and how
    many characters of the plain form (markers count as their text) were left out."""

    segments: list[MessageSegment]
    plain: list[Part]
    cut_chars: int


def keep_within_limit(
    segments: Iterable[MessageSegment], self_id: str, limit: int = MAX_PASTE_CHARS
) -> KeptSegments:
    """The first `limit` characters of the message in plain form, rendered in the same
    pass (no I/O). Text is cut at the limit; a marker that does not fit is left out whole
    (half a card would mislead); what follows is only measured."""
    kept: list[MessageSegment] = []
    plain: list[Part] = []
    left = limit
    rest = iter(segments)
    for segment in rest:
        part = render_safely(segment, self_id)
        size = len(part_text(part)) if part is not None else 0
        if size <= left:
            kept.append(segment)
            if part is not None:
                plain.append(part)
            left -= size
            continue
        cut = size
        if segment.type == "text" and part is not None and left > 0:
            text = part_text(part)[:left]
            kept.append(MessageSegment.text(text))
            plain.append(TextPart(text))
            cut -= left
        return KeptSegments(kept, plain, cut + plain_length(rest, self_id))
    return KeptSegments(kept, plain, 0)


def plain_length(segments: Iterable[MessageSegment], self_id: str) -> int:
    """The length of the segments in plain form, without building it for text, @s and
    images (the common cases; an image marker would cost a hash)."""
    total = 0
    for segment in segments:
        kind, data = segment.type, segment.data
        if kind == "text" and isinstance(data, dict):
            total += len(str(data.get("text", "")))
        elif kind == "at" and isinstance(data, dict):
            total += len(plain_at_text(data, self_id) or "")
        elif kind == "image":
            total += _IMAGE_MARKER_CHARS
        else:
            part = render_safely(segment, self_id)
            total += len(part_text(part)) if part is not None else 0
    return total
