"""What the operator sends on the try page as one `Incoming`, read the way onebot/inbound.py
reads a QQ message: private messages are for the bot, in the group an @ of the bot, a reply
to it or its nickname at the start; `~对话` / `~记忆` / `~人设` parsed by the same function;
@s and a quote written as QQ's are (`@小红 `, `[引用 机器人：…]`); a long paste cut at the
same length, with the same note. Only the chats and people of members.py are taken."""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timezone

from ..conversation import Incoming, RichContent, Speaker, parts_text
from ..engine import Part, TextPart, TurnTrace, Voice
from ..onebot import (
    MAX_FINGERPRINT_CHARS,
    MAX_PASTE_CHARS,
    QUOTE_MAX_CHARS,
    omission_note,
    parse_command,
    plain_at_text,
)
from ..scopes import Scope
from ..text import BOT_NAME, QUOTE_CLOSING, QUOTE_OPENING, QUOTE_SPEAKER_END, encodable
from .members import TestMember, member

# Who an @ or a quote names besides the members: the bot itself.
BOT = "bot"


@dataclass(frozen=True, slots=True)
class Quote:
    """The message a reply quotes: who said it (a member's id, or BOT) and what."""

    speaker_id: str
    text: str


@dataclass(frozen=True, slots=True)
class PageMessage:
    """One message typed on the try page: in which test chat, as which member, the text,
    whom it @s (members' ids, BOT) and what it replies to."""

    chat: Scope
    speaker: TestMember
    text: str
    at: tuple[str, ...] = ()
    quote: Quote | None = None


class PageContent:
    """The content of a page message (the `Content` of conversation/incoming.py): nothing
    to fetch, so the plain and the rich form differ only by the quote before it."""

    __slots__ = ("_parts", "_quote", "_quoted")

    def __init__(self, parts: list[Part], quote: str | None, quoted: Voice | None = None) -> None:
        self._parts = parts
        self._quote = quote
        self._quoted = quoted  # whose words the quote holds

    @property
    def quotes_a_message(self) -> bool:
        """Whether the message replies to another one."""
        return self._quote is not None

    def plain(self) -> list[Part]:
        """The content as typed (cut, with its note, when too long)."""
        return list(self._parts)

    async def rich(self) -> RichContent:
        """The quote, on its own line, then the content."""
        own = parts_text(self._parts)
        if self._quote is None:
            return RichContent(list(self._parts), own)
        voices = (self._quoted,) if self._quoted is not None else ()
        return RichContent([TextPart(f"{self._quote}\n"), *self._parts], own, voices)


@dataclass(frozen=True, slots=True)
class ReadMessage:
    """A page message as the conversation takes it, and what the page tells about it: how
    many characters of a long paste were left out."""

    incoming: Incoming
    cut_chars: int


def read_message(
    message: PageMessage,
    *,
    nicknames: Collection[str],
    trace: TurnTrace,
    now: datetime | None = None,
) -> ReadMessage:
    """The Incoming of `message`, its turn traced into `trace`."""
    in_group = message.chat.is_group
    text, by_nickname = _without_nickname(encodable(message.text), nicknames if in_group else ())
    addressed = not in_group or by_nickname or BOT in message.at
    if message.quote is not None and message.quote.speaker_id == BOT:
        addressed = True
    content, cut_chars = _content(message, text)
    speaker = message.speaker
    return ReadMessage(
        Incoming(
            key=str(message.chat),
            group_id=message.chat.id if in_group else None,
            speaker=Speaker(
                speaker.user_id, speaker.name, is_manager=not in_group or speaker.manages_group
            ),
            sent_at=now or datetime.now(timezone.utc),
            addressed=addressed,
            content=content,
            command=parse_command(text),
            fingerprint=_fingerprint(message, text) if in_group else "",
            message_id=uuid.uuid4().hex,
            trace=trace,
        ),
        cut_chars,
    )


def _without_nickname(text: str, nicknames: Collection[str]) -> tuple[str, bool]:
    """The text without a nickname at its start, as NoneBot's OneBot adapter strips it
    (then the message is for the bot), and whether there was one."""
    names = sorted((name for name in nicknames if name), key=len, reverse=True)
    if not names:
        return text, False
    pattern = "|".join(re.escape(name) for name in names)
    found = re.match(rf"^({pattern})([\s,，]*|$)", text.lstrip(), re.IGNORECASE)
    if found is None:
        return text, False
    return text.lstrip()[found.end() :], True


def _content(message: PageMessage, text: str) -> tuple[PageContent, int]:
    """The @s of members (the bot's own @ reads as nothing, as in QQ) and the text, within
    MAX_PASTE_CHARS; the quote as QQ's is written. How many characters were cut."""
    ats = "".join(
        plain_at_text({"qq": found.user_id, "name": found.name}, "") or ""
        for found in (member(user_id) for user_id in message.at)
        if found is not None
    )
    whole = ats + text
    kept, cut_chars = whole[:MAX_PASTE_CHARS], max(0, len(whole) - MAX_PASTE_CHARS)
    parts: list[Part] = [TextPart(kept + (omission_note(cut_chars) if cut_chars else ""))]
    quoted = _quoted(message.quote)
    quote = None if quoted is None else _quote_line(quoted)
    return PageContent(parts, quote, quoted), cut_chars


def _quoted(quote: Quote | None) -> Voice | None:
    """Whose words a reply quotes: a member's, or the bot's (no QQ number on this page)."""
    if quote is None:
        return None
    said = encodable(quote.text).strip()[:QUOTE_MAX_CHARS]
    quoted = member(quote.speaker_id)
    if quoted is None:
        return Voice("quoted", None, BOT_NAME, said)
    return Voice("quoted", quoted.user_id, quoted.name, said)


def _quote_line(quoted: Voice) -> str:
    """`[引用 机器人：…]` / `[引用 小明(…)：…]`, as onebot/content.py writes a QQ quote."""
    speaker = f"{quoted.name}({quoted.user_id})" if quoted.user_id else quoted.name
    return f"{QUOTE_OPENING}{speaker}{QUOTE_SPEAKER_END}{quoted.text}{QUOTE_CLOSING}"


def _fingerprint(message: PageMessage, text: str) -> str:
    """What was said, as onebot/inbound.py's `fingerprint_of` reads it."""
    ats = "".join(f"@{user_id}" for user_id in message.at)
    return (ats + " ".join(text.split()))[:MAX_FINGERPRINT_CHARS]
