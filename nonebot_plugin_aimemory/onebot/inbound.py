"""A OneBot v11 event as one `Incoming`: which chat, who speaks, whether the bot is
addressed, which command, and the content (read cheaply now, in full later). All of it is
linear in the message's length, and a long paste is cut before anything reads it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timezone

from nonebot.adapters.onebot.v11 import Bot, GroupMessageEvent, Message, MessageEvent
from nonebot.internal.adapter import Event

from ..config import Config
from ..conversation import ANONYMOUS_PREFIX, Command, Incoming, RichContent, Speaker
from ..engine import Part, TextPart
from ..scopes import Scope
from ..text import encodable, name_on_one_line
from .accounts import Accounts
from .content import ContentRenderer
from .pastes import MAX_PASTE_CHARS, KeptSegments, keep_within_limit, omission_note
from .permissions import is_manager, is_served_group, is_superuser, private_chat_served
from .segments import merge_text

logger = logging.getLogger("nonebot_plugin_aimemory")

# `~记忆 搜索 …` (`~对话`, `~人设` too) whatever COMMAND_START is; `/` and `～` work too.
COMMAND_PREFIXES = ("~", "～", "/")
COMMAND_NAMES = ("对话", "记忆", "人设")
# Enough of a message to tell two apart; a paste is cut anyway.
MAX_FINGERPRINT_CHARS = 2000


def chat_of(event: MessageEvent) -> Scope:
    """The event's group, or the user's private chat (as every account has it)."""
    if isinstance(event, GroupMessageEvent):
        return Scope.group(event.group_id)
    return Scope.friend(event.user_id)


def session_key_for(event: MessageEvent) -> str:
    """The key of the event's chat itself (its log's; the home account's window)."""
    return str(chat_of(event))


def named_accounts(event: MessageEvent, accounts: frozenset[str]) -> frozenset[str]:
    """Which of `accounts` a group message names: @ anywhere (the adapter sees only the
    first and last segment), or a reply to one of their messages."""
    named = {
        str(segment.data.get("qq", ""))
        for segment in event.original_message
        if segment.type == "at"
    }
    reply = getattr(event, "reply", None)
    if reply is not None and reply.sender.user_id is not None:
        named.add(str(reply.sender.user_id))
    return frozenset(named & accounts)


def is_addressed(event: MessageEvent, named: frozenset[str]) -> bool:
    """Private messages always; in groups one that names this account (`named`, of the
    connected accounts, this one among them: @ anywhere, a reply to it), or the nickname at
    the start when it names no connected account (`to_me`)."""
    if not isinstance(event, GroupMessageEvent):
        return True
    if named:
        # For another account, a shared nickname in it does not change that.
        return str(event.self_id) in named
    return event.to_me


def fingerprint_of(message: Message) -> str:
    """What a message says, as every account reads it: texts, @s and emoji; pictures and
    the like by their kind only (their links and ids are each account's own)."""
    pieces: list[str] = []
    for segment in message:
        if segment.type == "text":
            pieces.append(" ".join(str(segment.data.get("text", "")).split()))
        elif segment.type == "at":
            pieces.append(f"@{segment.data.get('qq', '')}")
        elif segment.type == "face":
            pieces.append(f"[face {segment.data.get('id', '')}]")
        elif segment.type != "reply":
            pieces.append(f"[{segment.type}]")
    return "".join(pieces)[:MAX_FINGERPRINT_CHARS]


def speaker_name(event: MessageEvent) -> str:
    """The sender's group card, else nickname, else QQ number; on one line, with the marks
    of a speaker line neutralised."""
    sender = event.sender
    shown = name_on_one_line(getattr(sender, "card", None) or sender.nickname or "")
    return shown or str(event.user_id)


def speaker_of(event: MessageEvent) -> Speaker:
    """Who sent the message. An anonymous group message (`sub_type` "anonymous") comes
    from QQ's anonymous identity, not from the placeholder QQ number every anonymous
    sender shares: `匿名<id>`, called by its anonymous name."""
    if not isinstance(event, GroupMessageEvent) or (
        event.anonymous is None and event.sub_type != "anonymous"
    ):
        return Speaker.sender(event.user_id, speaker_name(event))
    anonymous = event.anonymous
    anonymous_id = str(anonymous.id) if anonymous is not None else ""
    name = name_on_one_line(anonymous.name) if anonymous is not None else ""
    return Speaker.anonymous_sender(anonymous_id, name or ANONYMOUS_PREFIX)


def command_text(message: Message) -> str:
    """The text segments joined (as NoneBot's `get_plaintext`), read no further than
    MAX_PASTE_CHARS: a command is short, and a paste is cut anyway."""
    pieces: list[str] = []
    left = MAX_PASTE_CHARS
    for segment in message:
        if segment.type == "text":
            piece = str(segment.data.get("text", ""))[:left]
            pieces.append(piece)
            left -= len(piece)
            if left <= 0:
                break
    return "".join(pieces)


def is_another_plugins_command(message: Message, command_starts: Iterable[str]) -> bool:
    """Whether the message reads as a command to NoneBot's command matchers: its first
    segment is text which, left-stripped, starts with a non-empty COMMAND_START prefix
    followed by a word (`/status`). An empty prefix (`COMMAND_START=[""]`) makes every
    message a possible command, so it counts for nothing here."""
    if not message or message[0].type != "text":
        return False
    text = str(message[0].data.get("text", "")).lstrip()
    return any(
        prefix and text.startswith(prefix) and text[len(prefix) : len(prefix) + 1].strip()
        for prefix in command_starts
    )


def parse_command(text: str) -> Command | None:
    """`~对话 …` / `~记忆 …` as a Command, or None for anything else. Linear in the text's
    length (a regex with lazy groups took seconds on a long run of spaces)."""
    body = text.strip()
    if body[:1] not in COMMAND_PREFIXES:
        return None
    name = body[1:3]
    rest = body[3:]
    if name not in COMMAND_NAMES or (rest and not rest[0].isspace()):
        return None
    words = rest.split(maxsplit=1)
    action = words[0] if words else ""
    argument = words[1].strip() if len(words) > 1 else ""
    return Command(name, action, argument)


class EventContent:
    """The content of one event: plain (no I/O) or rich (images, quotes, forwards), both
    cut after MAX_PASTE_CHARS with a note saying how much was left out."""

    __slots__ = ("_kept", "_plain", "bot", "event", "renderer")

    def __init__(self, bot: Bot, event: MessageEvent, renderer: ContentRenderer) -> None:
        self.bot = bot
        self.event = event
        self.renderer = renderer
        self._kept: KeptSegments | None = None
        self._plain: list[Part] | None = None

    @property
    def quotes_a_message(self) -> bool:
        """Whether the message replies to another one."""
        return getattr(self.event, "reply", None) is not None

    def plain(self) -> list[Part]:
        """The content without downloads or API calls (worked out once)."""
        if self._plain is None:
            kept = self._within_limit()
            self._plain = _finished(kept.plain, kept.cut_chars)
        return list(self._plain)

    async def rich(self) -> RichContent:
        """The content with images read and quotes and forwards fetched."""
        kept = self._within_limit()
        rendered = await self.renderer.render(self.bot, self.event, kept.segments)
        return replace(rendered, parts=_finished(rendered.parts, kept.cut_chars))

    def _within_limit(self) -> KeptSegments:
        """The segments within MAX_PASTE_CHARS (worked out once)."""
        if self._kept is None:
            self._kept = keep_within_limit(self.event.message, str(self.event.self_id))
        return self._kept


def _finished(parts: list[Part], cut_chars: int) -> list[Part]:
    """The parts with the omission note after a cut, their text made encodable (half an
    emoji would break the chat log, the memory search and the request alike)."""
    noted = [*parts, TextPart(omission_note(cut_chars))] if cut_chars else parts
    return merge_text(
        TextPart(encodable(part.text)) if isinstance(part, TextPart) else part for part in noted
    )


class Inbound:
    """Turns the events the bot should look at into `Incoming` messages."""

    def __init__(self, config: Config, renderer: ContentRenderer, accounts: Accounts) -> None:
        self.config = config
        self.renderer = renderer
        self.accounts = accounts
        self._mismatches_logged: set[tuple[str, str]] = set()

    async def _speaker(
        self, bot: Bot, event: MessageEvent, *, command: Command | None, addressed: bool
    ) -> Speaker:
        """The sender, with what they may manage when it matters. An anonymous sender
        manages nothing: nobody can tell who they are (the group's owner, perhaps)."""
        speaker = speaker_of(event)
        if speaker.anonymous:
            return speaker
        if command is not None:
            return Speaker(
                speaker.user_id,
                speaker.name,
                is_manager=await is_manager(bot, event),
                is_superuser=await is_superuser(bot, event),
            )
        if addressed and self.config.aimemory_daily_tokens_per_chat > 0:
            # SUPERUSERS are exempt from the daily quota, the one use of knowing it here
            # (NoneBot's permission check costs a dependency resolution per message).
            return Speaker(
                speaker.user_id, speaker.name, is_superuser=await is_superuser(bot, event)
            )
        return speaker

    async def account_connected(self, account: str) -> None:
        """An account connected: the first the plugin answers as becomes the home account
        of a database that has none (a failure is logged; the next message retries)."""
        if self.accounts.serves(account):
            await self.accounts.key_account(account)

    def _is_for_us(self, bot: Bot, event: Event, connected: frozenset[str]) -> bool:
        """Whether the plugin looks at the event at all: a message, received by an account
        it answers as, from a person (not a bot account connected here: no bot answers
        another, or its own messages, which some implementations report)."""
        if not isinstance(event, MessageEvent) or not self.accounts.serves(bot.self_id):
            return False
        if str(event.self_id) != bot.self_id:
            self._log_mismatch(bot.self_id, str(event.self_id))
            return False
        return str(event.user_id) not in connected

    def _log_mismatch(self, connection: str, claimed: str) -> None:
        """An event that names another account than the connection it came through names
        nobody the plugin can answer as: dropped, logged once per pair."""
        if (connection, claimed) not in self._mismatches_logged:
            self._mismatches_logged.add((connection, claimed))
            logger.warning(
                "ignoring events of account %s that came through the connection of %s",
                claimed,
                connection,
            )

    async def translate(self, bot: Bot, event: Event) -> Incoming | None:
        """The message, or None when the bot must ignore it (not for an account it answers
        as, a bot's, a group it does not serve, a private chat it may not answer).
        Nothing here waits on I/O before the message is queued, so one chat's messages
        keep their order (but the home account's one write, once per database)."""
        # Read once per message: the accounts connected now, the receiving one among them.
        connected = self.accounts.connected() | {bot.self_id}
        if not self._is_for_us(bot, event, connected) or not isinstance(event, MessageEvent):
            return None
        if not is_served_group(event, self.config):
            return None
        in_group = isinstance(event, GroupMessageEvent)
        if not in_group and not await private_chat_served(bot, event, self.config):
            return None
        peers = self.accounts.peers(connected)
        named = named_accounts(event, connected) if in_group else frozenset()
        message = event.get_message()
        command = parse_command(command_text(message))
        if command is not None and named and bot.self_id not in named:
            command = None  # a command for another account: a chat line here
        addressed = is_addressed(event, named)
        if (
            addressed
            and command is None
            and self.config.aimemory_ignore_other_commands
            and is_another_plugins_command(message, bot.config.command_start)
        ):
            # `/status` is the status plugin's, answered or not: not a message for us (in a
            # group it is an ordinary chat line, in private chat nothing).
            addressed = False
        key_account = await self.accounts.key_account(bot.self_id)
        return Incoming(
            key=str(chat_of(event).with_account(key_account)),
            group_id=str(event.group_id) if isinstance(event, GroupMessageEvent) else None,
            speaker=await self._speaker(bot, event, command=command, addressed=addressed),
            sent_at=datetime.fromtimestamp(event.time, timezone.utc),
            addressed=addressed,
            content=EventContent(bot, event, self.renderer),
            command=command,
            account=bot.self_id,
            peers=peers,
            fingerprint=fingerprint_of(event.original_message) if in_group else "",
            message_id=str(event.message_id),
            names_no_account=in_group and not named,
        )
