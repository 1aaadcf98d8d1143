"""The one matcher: every message passes here once, in three steps — translate the event,
let the conversation answer, send the outcome."""

from __future__ import annotations

import logging

from nonebot import on_message
from nonebot.adapters.onebot.v11 import Bot, MessageEvent
from nonebot.matcher import current_bot, current_event, current_matcher, matchers

from .. import plugin_config, texts
from ..deferred_start import deferred_start
from ..runtime import current_runtime
from .inbound import command_text, is_addressed, named_accounts, parse_command, session_key_for
from .unknown_senders import is_private_from_no_one, refuse_private

logger = logging.getLogger("nonebot_plugin_aimemory")

# One matcher with a parameter-free handler: every matcher and every injected parameter
# costs NoneBot ~0.2 ms per message, and unaddressed group messages are the hot path.
# Low priority (`aimemory_matcher_priority`, 90): other plugins go first; we block only
# what we handle, and leave their commands to them (see Inbound.translate). The package
# validated the configuration before importing this module: read it, not parse it again.
chat = on_message(priority=plugin_config.aimemory_matcher_priority, block=False)


@chat.handle()
async def handle_message() -> None:
    """Translate, answer, send; commands and messages for the bot stop other matchers."""
    runtime = current_runtime()
    bot, event = current_bot.get(), current_event.get()
    if not isinstance(bot, Bot) or not isinstance(event, MessageEvent):
        return
    if runtime is None:
        await _waiting_notice(bot, event)
        return
    if is_private_from_no_one(event):
        # No chat to keep it under (unknown_senders.py): a short notice, nothing stored.
        if await refuse_private(bot, event, runtime.inbound) and _any_matcher_after_ours():
            current_matcher.get().stop_propagation()
        return
    incoming = await runtime.inbound.translate(bot, event)
    if incoming is None:
        return
    if (incoming.command is not None or incoming.addressed) and _any_matcher_after_ours():
        current_matcher.get().stop_propagation()
    outcome = await runtime.conversation.answer(incoming)
    await runtime.outbound.send(bot, event, outcome)


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


def _any_matcher_after_ours() -> bool:
    """Whether a matcher of a lower priority (a larger number) exists, which stopping the
    propagation keeps from running: with none, stopping would only cost NoneBot a
    cancelled task group and a log record per message."""
    return any(priority > chat.priority and group for priority, group in matchers.items())
