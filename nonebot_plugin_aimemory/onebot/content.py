"""The rich form of an addressed QQ message: images read (MAX_IMAGES_PER_MESSAGE at
most), @names looked up, the quoted message and forwarded chat records fetched. A part
that fails becomes a placeholder. Whose words are whose is kept beside it (`RichContent`):
the sender's own, the quote's author's, each forwarded message's sender's."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nonebot.adapters.onebot.v11 import (
    Bot,
    GroupMessageEvent,
    MessageEvent,
    MessageSegment,
)

from ..conversation import RichContent, parts_text
from ..engine import Part, TextPart, Voice
from ..media import ImageReader, marker, short_hash_of
from ..store import SentMessages
from ..text import (
    BOT_NAME,
    LINE_BREAK_MARK,
    QUOTE_CLOSING,
    QUOTE_OPENING,
    QUOTE_SPEAKER_END,
    name_on_one_line,
)
from .forwards import ForwardFetcher, marker_of, nested_records
from .members import MemberNames, call_quietly
from .quotes import HIDDEN_QUOTE, QuotedMessage
from .segments import (
    FORWARD_MARKER,
    as_segments,
    data_of,
    dict_at,
    merge_text,
    part_text,
    render_safely,
    render_segment,
)

logger = logging.getLogger("nonebot_plugin_aimemory")

QUOTE_MAX_CHARS = 100
FORWARD_MAX_LINES = 20
FORWARD_LINE_MAX_CHARS = 100
# Levels of forwarded records shown: a record, and the records forwarded inside it.
FORWARD_MAX_DEPTH = 2
FORWARD_INDENT = "  "
UNAVAILABLE_QUOTE = "[引用了一条无法获取的消息]"
# Downloads one message may cause, its quote's included (forwarded images are never
# downloaded): a message of dozens of pictures would hold its session for minutes.
MAX_IMAGES_PER_MESSAGE = 5
# Member-name lookups one message may cause (each an API call that may wait for its
# timeout): a message of hundreds of @s shows the rest by QQ number.
MAX_NAME_LOOKUPS_PER_MESSAGE = 10


@dataclass
class _Reading:
    """One message being read: its bot and event, the image downloads, name lookups and
    forwarded-record fetches it has left, and the others' words it was found to carry."""

    bot: Bot
    event: MessageEvent
    images_left: int = MAX_IMAGES_PER_MESSAGE
    lookups_left: int = MAX_NAME_LOOKUPS_PER_MESSAGE
    forwards: ForwardFetcher = field(init=False)
    voices: list[Voice] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.forwards = ForwardFetcher(self.bot)


@dataclass
class _LineBudget:
    """What a forwarded record may still show: lines left (nested records share them) and
    the messages left out for want of lines."""

    left: int
    skipped: int = 0


class ContentRenderer:
    """The rich form of an addressed message: images read, names looked up, the quoted
    message and forwarded records fetched. `sent` places the bot's own quoted messages."""

    def __init__(self, images: ImageReader, members: MemberNames, sent: SentMessages) -> None:
        self.images = images
        self.members = members
        self.sent = sent

    async def render(
        self, bot: Bot, event: MessageEvent, segments: Iterable[MessageSegment]
    ) -> RichContent:
        """The quoted message, then the event's `segments` (what is left of a long paste);
        a part that fails renders as a placeholder."""
        reading = _Reading(bot, event)
        parts: list[Part] = []
        own: list[Part] = []
        segments = list(segments)
        await reading.forwards.prefetch(data_of(s) for s in segments if s.type == "forward")
        try:
            quote = await self.quote(reading)
        except Exception:
            logger.warning("could not render the quoted message", exc_info=True)
            quote = [TextPart(UNAVAILABLE_QUOTE)]
        if quote:
            parts += [*quote, TextPart("\n")]
        for segment in segments:
            try:
                rendered = await self.segment(reading, segment)
            except Exception:
                logger.warning("could not render a %r segment", segment.type, exc_info=True)
                rendered = [TextPart(f"[{segment.type}]")]
            parts.extend(rendered)
            if segment.type != "forward":  # a record's lines are its senders' words
                own.extend(rendered)
        return RichContent(merge_text(parts), parts_text(own), tuple(reading.voices))

    async def segment(self, reading: _Reading, segment: MessageSegment) -> list[Part]:
        """One segment of the user's own message in rich form; a forward is fetched and
        flattened into lines."""
        if segment.type == "forward":
            return [TextPart(await self.forward(reading, data_of(segment)))]
        return await self.inline(reading, segment)

    async def inline(self, reading: _Reading, segment: MessageSegment) -> list[Part]:
        """One segment as part of a line: images read (as for any incoming image), @names
        looked up; a forward stays a marker. The bot's own @ renders as nothing."""
        data = data_of(segment)
        self_id = str(reading.event.self_id)
        if segment.type == "image":
            return [await self.image(reading, data)]
        if segment.type == "at":
            at = await self.at_text(reading, data, self_id=self_id)
            return [TextPart(at)] if at is not None else []
        part = render_segment(segment, self_id)
        return [part] if part is not None else []

    async def image(self, reading: _Reading, data: dict[str, Any]) -> Part:
        """The image read, while the message has downloads left (a failed one counts too);
        after that its plain marker, as if the bot only logged it."""
        url = str(data.get("url") or data.get("file") or "")
        identity = str(data.get("file") or url)
        if reading.images_left <= 0:
            return TextPart(marker(short_hash_of(identity)))
        reading.images_left -= 1
        return await self.images.read(url, identity)

    async def at_text(self, reading: _Reading, data: dict[str, Any], *, self_id: str) -> str | None:
        """`@<card or nickname> `, looked up in the event's group when the segment carries no
        name; the QQ number when the name is unknown; None for an @ of `self_id`."""
        qq = str(data.get("qq", ""))
        if qq == self_id:
            return None
        if qq == "all":
            return "@全体成员 "
        name = data.get("name")
        event = reading.event
        if (
            not name
            and qq.isdigit()
            and isinstance(event, GroupMessageEvent)
            and reading.lookups_left > 0
        ):
            reading.lookups_left -= 1
            name = await self.members.name(reading.bot, event.group_id, int(qq))
        return f"@{name or qq} "

    async def quote(self, reading: _Reading) -> list[Part]:
        """`[引用 小明(12345)：…]` when the message replies to another one (nothing otherwise);
        images and @s in the quote are read like those of the user's own message. A quote
        said in another chat, or of the bot and not recorded as sent here, is HIDDEN_QUOTE,
        its content never read."""
        event = reading.event
        reply = getattr(event, "reply", None)
        if reply is not None:
            quoted = QuotedMessage.from_reply(reply)
        else:
            segment = next((s for s in event.original_message if s.type == "reply"), None)
            if segment is None:
                return []
            data = data_of(segment)
            fetched = await self._fetch_quoted(reading.bot, data)
            if fetched is None:
                return [TextPart(UNAVAILABLE_QUOTE)]
            quoted = QuotedMessage.from_get_msg(fetched, data.get("id"))
        if not await quoted.shown_in_chat_of(event, self.sent):
            logger.info(
                "hid a quote from another chat (here %s, the quote's %s %s)",
                getattr(event, "group_id", None) or f"private {event.user_id}",
                quoted.message_type,
                quoted.group_id,
            )
            return [TextPart(HIDDEN_QUOTE)]
        return await self._quote_parts(reading, quoted)

    async def _fetch_quoted(self, bot: Bot, data: dict[str, Any]) -> dict[str, Any] | None:
        """The quoted message from `get_msg`; None when its id is malformed or the call fails."""
        try:
            message_id = int(str(data.get("id", "")))
        except ValueError:
            return None
        fetched = await call_quietly(bot.get_msg(message_id=message_id))
        return fetched if isinstance(fetched, dict) else None

    async def _quote_parts(self, reading: _Reading, quoted: QuotedMessage) -> list[Part]:
        user_id = quoted.sender_id
        is_bot = user_id == str(reading.event.self_id)
        name = name_on_one_line(quoted.sender_name or "")
        speaker = BOT_NAME if is_bot else f"{name or user_id}({user_id})"
        body = await self._clipped(reading, quoted.segments, QUOTE_MAX_CHARS)
        # The bot's words are its account's: never the member's who quotes them.
        reading.voices.append(
            Voice("quoted", user_id, BOT_NAME if is_bot else name, parts_text(body))
        )
        opening = TextPart(f"{QUOTE_OPENING}{speaker}{QUOTE_SPEAKER_END}")
        return merge_text([opening, *body, TextPart(QUOTE_CLOSING)])

    async def _clipped(
        self, reading: _Reading, segments: list[MessageSegment], max_chars: int
    ) -> list[Part]:
        """The segments rendered inline up to `max_chars` of text. Text is cut there; a
        marker is kept whole (half an image description would mislead), and nothing after
        the limit is read, so a long quote costs no extra downloads."""
        parts: list[Part] = []
        left = max_chars
        for segment in segments:
            if left <= 0:
                break
            for part in await self.inline(reading, segment):
                clipped = part
                if isinstance(part, TextPart) and segment.type == "text":
                    clipped = TextPart(part.text[:left])
                left -= len(clipped.text if isinstance(clipped, TextPart) else clipped.marker)
                parts.append(clipped)
        return _strip_ends(merge_text(parts))

    async def forward(self, reading: _Reading, data: dict[str, Any]) -> str:
        """A forwarded chat record: one line per message, nested records (up to
        FORWARD_MAX_DEPTH levels) indented beneath theirs, FORWARD_MAX_LINES lines in all;
        a record not fetched (within the message's fetch budget) is a marker saying why."""
        nodes = await reading.forwards.nodes(data)
        if not isinstance(nodes, list):
            return nodes.value
        budget = _LineBudget(FORWARD_MAX_LINES)
        lines = await self._forward_lines(reading, nodes, 1, budget)
        tail = f"\n…（还有 {budget.skipped} 条）" if budget.skipped else ""
        return f"{FORWARD_MARKER}\n" + "\n".join(lines) + tail + "\n"

    async def _forward_lines(
        self, reading: _Reading, nodes: list[Any], level: int, budget: _LineBudget
    ) -> list[str]:
        indent = FORWARD_INDENT * (level - 1)
        parsed = [found for found in map(_forward_node, nodes) if found is not None]
        expands = level < FORWARD_MAX_DEPTH
        if expands:
            # The nested records of the messages that may show them (the last line of the
            # cap leaves no room), fetched at once.
            shown = parsed[: max(budget.left - 1, 0)]
            await reading.forwards.prefetch(r for _, s in shown for r in nested_records(s))
        lines: list[str] = []
        for sender, segments in parsed:
            if budget.left <= 0:
                budget.skipped += 1
                continue
            budget.left -= 1
            records = nested_records(segments) if expands and budget.left > 0 else []
            inner = [await reading.forwards.nodes(record) for record in records]
            text = await self._node_text(reading, segments, [marker_of(n) for n in inner])
            said = _one_line(text)[:FORWARD_LINE_MAX_CHARS]
            reading.voices.append(Voice("forwarded", sender.user_id, sender.name, said))
            lines.append(f"{indent}{sender.name}：{said}")
            for inner_nodes in inner:
                if isinstance(inner_nodes, list) and budget.left > 0:
                    lines += await self._forward_lines(reading, inner_nodes, level + 1, budget)
        return lines

    async def _node_text(
        self, reading: _Reading, segments: list[MessageSegment], nested_markers: list[str]
    ) -> str:
        """A forwarded message's text, its nested records shown by `nested_markers` (the
        plain marker past those). Its images stay plain markers: a record may hold dozens,
        and each would cost a download and a vision call."""
        markers = iter(nested_markers)
        texts: list[str] = []
        for segment in segments:
            if segment.type == "forward":
                texts.append(next(markers, FORWARD_MARKER))
            elif segment.type == "at":
                # Nobody is addressing the bot inside a record: its own @ is shown too.
                texts.append(await self.at_text(reading, data_of(segment), self_id="") or "")
            else:
                part = render_safely(segment, "")
                texts.append(part_text(part) if part is not None else "")
        return "".join(texts)


@dataclass(frozen=True, slots=True)
class _Sender:
    """Who sent a forwarded message: the QQ number when the record reports one."""

    user_id: str | None
    name: str


def _forward_node(node: Any) -> tuple[_Sender, list[MessageSegment]] | None:
    """Sender and content of a forwarded message in any implementation's shape: NapCat's
    message events, go-cqhttp's CQ-code `content`, `node` segments."""
    if not isinstance(node, dict):
        return None
    body = dict_at(node, "data") if node.get("type") == "node" else node
    sender = dict_at(body, "sender")
    name = sender.get("card") or sender.get("nickname") or body.get("nickname") or "某人"
    user_id = sender.get("user_id") or body.get("user_id") or body.get("uin")
    shown = name_on_one_line(str(name)) or "某人"
    return (
        _Sender(str(user_id) if user_id else None, shown),
        as_segments(body.get("message", body.get("content"))),
    )


def _one_line(text: str) -> str:
    """Line breaks as ⏎ (as in the chat log), so one forwarded message is one line."""
    return LINE_BREAK_MARK.join(line for line in text.strip().splitlines() if line.strip())


def _strip_ends(parts: list[Part]) -> list[Part]:
    """The parts without whitespace at the very start and end."""
    stripped = list(parts)
    if stripped and isinstance(stripped[0], TextPart):
        stripped[0] = TextPart(stripped[0].text.lstrip())
    if stripped and isinstance(stripped[-1], TextPart):
        stripped[-1] = TextPart(stripped[-1].text.rstrip())
    return [part for part in stripped if not (isinstance(part, TextPart) and not part.text)]
