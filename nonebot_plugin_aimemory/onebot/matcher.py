"""The one matcher: every message passes here once, in three steps — translate the event,
let the conversation answer, send the outcome. The composition root registers it
(`register_matcher`), handing down the priority and how to find the runtime in use."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from nonebot import on_message
from nonebot.adapters.onebot.v11 import Bot, MessageEvent
from nonebot.matcher import Matcher, current_bot, current_event, current_matcher, matchers

from .. import texts
from ..conversation import Conversation
from ..deferred_start import deferred_start
from .inbound import (
    Inbound,
    command_text,
    is_addressed,
    named_accounts,
    parse_command,
    session_key_for,
)
from .outbound import Outbound
from .unknown_senders import is_private_from_no_one, refuse_private

logger = logging.getLogger("nonebot_plugin_aimemory")


class Parts(Protocol):
    """What a message goes through: the runtime's three parts (runtime.py's `Runtime`)."""

    @property
    def inbound(self) -> Inbound:
        """Event -> `Incoming`."""
        ...

    @property
    def conversation(self) -> Conversation:
        """`Incoming` -> `Outcome`."""
        ...

    @property
    def outbound(self) -> Outbound:
        """`Outcome` -> what is sent."""
        ...


def register_matcher(priority: int, parts_in_use: Callable[[], Parts | None]) -> type[Matcher]:
    """The matcher at `priority`, its handler asking `parts_in_use` for the runtime's parts
    (None while the plugin waits for its database).

    One matcher with a parameter-free handler: every matcher and every injected parameter
    costs NoneBot ~0.2 ms per message, and unaddressed group messages are the hot path. Low
    priority (`aimemory_matcher_priority`, 90): other plugins go first; we block only what
    we handle, and leave their commands to them (see Inbound.translate)."""
    chat = on_message(priority=priority, block=False)

    @chat.handle()
    async def handle_message() -> None:
        """Translate, answer, send; commands and messages for the bot stop other matchers."""
        parts = parts_in_use()
        bot, event = current_bot.get(), current_event.get()
        if not isinstance(bot, Bot) or not isinstance(event, MessageEvent):
            return
        if parts is None:
            await _waiting_notice(bot, event)
            return
        if is_private_from_no_one(event):
            # No chat to keep it under (unknown_senders.py): a short notice, nothing stored.
            if await refuse_private(bot, event, parts.inbound) and _any_matcher_after(priority):
                current_matcher.get().stop_propagation()
            return
        incoming = await parts.inbound.translate(bot, event)
        if incoming is None:
            return
        addressed = incoming.command is not None or incoming.addressed
        if addressed and _any_matcher_after(priority):
            current_matcher.get().stop_propagation()
        outcome = await parts.conversation.answer(incoming)
        await parts.outbound.send(bot, event, outcome)

    return chat


async def _waiting_notice(bot: Bot, event: MessageEvent) -> None:
    """While the plugin waits for its database, an addressed message (or a command) gets a
    short notice, once a minute per chat and account; nothing else happens to it."""
    waiting = deferred_start()
    if not waiting.waiting or is_private_from_no_one(event):
        return  # such a sender has no chat to note the notice for; told once we run
    addressed = is_addressed(event, named_accounts(event, frozenset({bot.self_id})))
    if not addressed and parse_command(command_text(event.message)) is None:
        return
    if waiting.notice_due(f"{session_key_for(event)} {bot.self_id}"):
        try:
            await bot.send(event, texts.DATABASE_NOT_READY)
        except Exception:
            logger.exception("could not send the waiting notice")


def _any_matcher_after(priority: int) -> bool:
    """Whether a matcher of a lower priority (a larger number) exists, which stopping the
    propagation keeps from running: with none, stopping would only cost NoneBot a
    cancelled task group and a log record per message."""
    return any(later > priority and group for later, group in matchers.items())
