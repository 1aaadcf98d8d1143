"""`~对话` commands: status, clear and stop for the current conversation."""

from __future__ import annotations

from nonebot.adapters.onebot.v11 import Bot, MessageEvent

from .. import texts
from ..onebot.events import is_manager, is_superuser, resolve_timezone, send_parts, session_key_for
from ..runtime import Runtime


async def run_dialog_command(
    bot: Bot, event: MessageEvent, runtime: Runtime, argument: str
) -> None:
    """Answer `~对话 <argument>` for the event's conversation."""
    key = session_key_for(event)
    if argument == "状态":
        session = runtime.sessions.get_or_create(key, touch=False)
        if not session.loaded:
            async with session.lock:
                await session.ensure_loaded()
        superuser = await is_superuser(bot, event)
        chatbot = session.bot
        summary = chatbot.summary
        last = chatbot.stats.last_at
        zone = resolve_timezone(runtime.config.aimemory_timezone)
        reply = texts.dialog_status(
            context_tokens=chatbot.context_tokens,
            budget_tokens=runtime.budget_tokens,
            message_count=len(chatbot.window),
            summary_tokens=runtime.counter.count(summary) if summary is not None else None,
            compressions=chatbot.stats.count,
            last_compressed=last.astimezone(zone).strftime("%Y-%m-%d %H:%M") if last else None,
            persistent=runtime.persistent,
            resident_sessions=len(runtime.sessions) if superuser else None,
        )
    elif argument == "清空":
        if not await is_manager(bot, event):
            reply = texts.PERMISSION_DENIED
        else:
            await runtime.clear_session(key)
            reply = texts.CLEARED
    elif argument == "停止":
        session = runtime.sessions.get(key)
        stopped = session is not None and session.stop_current()
        reply = texts.STOPPED if stopped else texts.NOTHING_TO_STOP
    else:
        reply = texts.DIALOG_USAGE
    await send_parts(bot, event, [reply])
