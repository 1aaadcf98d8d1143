"""What flows through a turn, adapter-neutral: an `Incoming` message in, an `Outcome` out.
The adapter builds the first and sends the second; the conversation knows neither."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from typing import Protocol

from ..engine import Part, TextPart, TurnSpeaker, TurnTrace, Voice, within
from ..scopes import Scope, qq_number
from .copies import ReceivedMessage

logger = logging.getLogger("nonebot_plugin_aimemory")

# The start `line_prefix` gives each message, as a model copies it at the start of its own
# answer: a time in brackets, a name with its QQ number (or 匿名) and a colon, or either.
COPIED_LINE_START = re.compile(
    r"\A\s*(?:\[\d{4}-\d{1,2}-\d{1,2}[ T]\d{1,2}:\d{2}(?::\d{2})?\]\s*"
    r"(?:[^\n\[\]()（）:：]{1,40}[(（](?:\d{1,20}|匿名\d*)[)）]\s*[:：])?"
    r"|[^\n\[\]()（）:：]{1,40}[(（](?:\d{1,20}|匿名\d*)[)）]\s*[:：])\s*"
)
# How long a finished turn keeps its session waiting for its reply to be sent: replies go
# out in the order the messages came, and a lost hand-over must not hold a chat forever.
DELIVERY_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class RichContent:
    """A message read in full: its parts as the model reads them, the sender's own words
    among them, and the words of others it carries (a quote, forwarded lines)."""

    parts: list[Part]
    own_text: str = ""
    voices: tuple[Voice, ...] = ()


class Content(Protocol):
    """What a person sent, readable two ways: cheaply, and in full."""

    @property
    def quotes_a_message(self) -> bool:
        """Whether the message replies to (quotes) another one."""
        ...

    def plain(self) -> list[Part]:
        """The content without any I/O: images as markers, nothing fetched."""
        ...

    async def rich(self) -> RichContent:
        """The content in full: images read, names looked up, quotes and forwards fetched."""
        ...


@dataclass(frozen=True, slots=True)
class Command:
    """A `~对话` / `~记忆` command: its name, first word and the rest."""

    name: str
    action: str
    argument: str

    @property
    def text(self) -> str:
        """The command as typed, for the log."""
        return f"~{self.name} {self.action} {self.argument}".strip()


# What an anonymous group sender is known by instead of a QQ number: `匿名<QQ's anonymous
# id>`. OneBot reports one placeholder number (80000000) for every anonymous sender, which
# names nobody; this tells anonymous senders apart (in a chat's queue, its log and the
# model's lines) and is never a QQ number, so nobody's personal memories go with it.
ANONYMOUS_PREFIX = "匿名"


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who sent the message, and what they may manage (known for commands only). An
    anonymous sender (`anonymous`: known by no QQ number) manages nothing; an anonymous
    group sender's `user_id` is `匿名<id>`."""

    user_id: str
    name: str
    is_manager: bool = False
    is_superuser: bool = False
    anonymous: bool = False

    @classmethod
    def sender(cls, sender_id: object, name: str) -> Speaker:
        """A sender known by the id the event carries. One that cannot be a QQ number (0,
        negative, 21+ digits) names nobody we could tell apart or keep memories for: such
        a sender is anonymous, still known by that id in the chat's lines and log."""
        return cls(str(sender_id), name, anonymous=qq_number(sender_id) is None)

    @classmethod
    def anonymous_sender(cls, anonymous_id: str, name: str) -> Speaker:
        """An anonymous group sender, known by QQ's anonymous id and name."""
        return cls(f"{ANONYMOUS_PREFIX}{anonymous_id}", name, anonymous=True)


@dataclass(frozen=True, slots=True)
class Incoming:
    """One QQ message as the conversation needs it, as the bot account it came through
    received it."""

    key: str  # the chat as this account has it: `g:<群号>`, `f:<QQ号>`, `g:<群号>@<账号>`
    group_id: str | None
    speaker: Speaker
    sent_at: datetime  # timezone-aware
    addressed: bool
    content: Content
    command: Command | None = None
    # The bot account (QQ number) it came through; the accounts the plugin answers as that
    # are connected now (this one among them).
    account: str = ""
    peers: frozenset[str] = frozenset()
    # What was said, read alike by every account (copies.py); in groups only.
    fingerprint: str = ""
    # The id this account's implementation gave it: a copy delivered twice carries it twice.
    message_id: str = ""
    # Addressed (or a command) without naming an account: by the nickname they all share.
    names_no_account: bool = False
    # The group message this is a copy of, once the conversation has matched it.
    received: ReceivedMessage | None = None
    # Where its turn records what it did, for someone watching (the try page); QQ: None.
    trace: TurnTrace | None = None

    @property
    def log_key(self) -> str:
        """The chat's own key, which its one chat log is kept under (whichever account)."""
        return Scope.parse(self.key).log_chat.key

    def ignored_here(self) -> Incoming:
        """This message as one another account answers: an ordinary chat line here."""
        return replace(self, addressed=False, command=None)

    def line_prefix(self, zone: tzinfo) -> str:
        """`[2026-11-30 14:05] 小明(12345)：` in groups (an anonymous sender's
        `大力鬼王(匿名123)：`, as the chat log shows them), `[2026-11-30 14:05] ` in private."""
        sent = self.sent_at.astimezone(zone).strftime("%Y-%m-%d %H:%M")
        if self.group_id is not None:
            return f"[{sent}] {self.speaker.name}({self.speaker.user_id})："
        return f"[{sent}] "

    @property
    def turn_speaker(self) -> TurnSpeaker:
        """Who a turn on this message acts for (see engine/turn_context.py). An anonymous
        sender (or one whose id is no QQ number) has no QQ number there, so no personal
        memories (memory/personal.py)."""
        user_id = "" if self.speaker.anonymous else self.speaker.user_id
        return TurnSpeaker(
            user_id, self.group_id is None, name=self.speaker.name, chat=self.log_key
        )

    def own_voice(self, content: RichContent) -> Voice:
        """The sender's own words in `content`, as a turn hears them."""
        speaker = self.turn_speaker
        return Voice("said", speaker.user_id or None, speaker.name, content.own_text)


def parts_text(parts: list[Part]) -> str:
    """Text of the parts, images as their markers, trimmed."""
    return "".join(p.text if isinstance(p, TextPart) else p.marker for p in parts).strip()


@dataclass(slots=True)
class Outcome:
    """What to send back, in order. `from_model` texts are the model's own words (image
    links and `@QQ号` in them may become pictures and @s); the others are sent verbatim.
    `notify_superusers`, when set, goes to each SUPERUSER as a private message."""

    texts: list[str] = field(default_factory=list)
    from_model: bool = False
    notify_superusers: str | None = None
    _delivered: asyncio.Event = field(default_factory=asyncio.Event)

    def mark_delivered(self) -> None:
        """The adapter sent (or gave up sending) this outcome: the session may go on."""
        self._delivered.set()

    async def wait_delivered(self) -> None:
        """Wait until the outcome was sent, at most DELIVERY_TIMEOUT_SECONDS."""
        try:
            await within(self._delivered.wait(), DELIVERY_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            logger.warning("a reply was not sent within %.0fs", DELIVERY_TIMEOUT_SECONDS)


def say(*texts: str) -> Outcome:
    """An outcome of fixed texts (command answers, notices, apologies)."""
    return Outcome(list(texts))


def nothing() -> Outcome:
    """Nothing to send."""
    return Outcome()
