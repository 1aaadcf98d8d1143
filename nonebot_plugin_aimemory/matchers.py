"""The chat matcher: every message passes here once; addressed ones are answered in order,
the others only move the group's auto-clear counter."""

from __future__ import annotations

import logging

from nonebot import on_message
from nonebot.adapters.onebot.v11 import Bot, GroupMessageEvent, MessageEvent
from nonebot.matcher import Matcher

from . import texts
from .engine.chatbot import ChatBot
from .engine.llm import LLMError
from .engine.messages import Message, TextPart
from .onebot import (
    is_addressed,
    line_prefix,
    render_segments,
    resolve_timezone,
    send_parts,
    session_key_for,
)
from .replies import failure_text, split_reply
from .runtime import Runtime, current_runtime
from .sessions import TurnStopped

logger = logging.getLogger("nonebot_plugin_aimemory")

# Low priority: other plugins' commands go first; we block only what we answer.
chat = on_message(priority=90, block=False)


@chat.handle()
async def handle_message(bot: Bot, event: MessageEvent, matcher: Matcher) -> None:
    runtime = current_runtime()
    if runtime is None:
        return
    group_id = str(event.group_id) if isinstance(event, GroupMessageEvent) else None
    if not is_addressed(event):
        if group_id is not None:
            runtime.autoclear.note_unaddressed(group_id)
        return
    matcher.stop_propagation()
    if group_id is not None:
        runtime.autoclear.note_addressed(group_id)
    if not runtime.configured:
        await send_parts(bot, event, [texts.NOT_CONFIGURED])
        return
    message = build_user_message(event, runtime)
    if message is None:
        await send_parts(bot, event, [texts.EMPTY_MESSAGE])
        return
    # Enqueue before any await: messages of one session are answered in arrival order.
    session = runtime.sessions.get_or_create(session_key_for(event))
    try:
        await session.submit(lambda chatbot: answer(chatbot, message, bot, event, runtime))
    except TurnStopped:
        logger.info("answer in %s stopped by a user", session.key)


def build_user_message(event: MessageEvent, runtime: Runtime) -> Message | None:
    """The user line the model sees: send time (and speaker in groups) before the content."""
    parts = render_segments(event)
    if not any(p.text.strip() if isinstance(p, TextPart) else True for p in parts):
        return None
    prefix = TextPart(line_prefix(event, resolve_timezone(runtime.config.aimemory_timezone)))
    content = [prefix, *parts]
    if all(isinstance(p, TextPart) for p in content):
        return Message("user", "".join(p.text for p in content))  # type: ignore[union-attr]
    return Message("user", tuple(content))


async def with_relevant_memories(
    runtime: Runtime, scope: str, message: Message, query: str
) -> tuple[Message, str | None]:
    """Put the memories most relevant to this message before it, for this turn only: the
    window keeps (and the store persists) the message without them."""
    memory = runtime.memory
    config = runtime.config
    if memory is None or not config.aimemory_memory_auto_inject:
        return message, None
    records = await memory.relevant(scope, query, config.aimemory_memory_inject_topk)
    block = texts.memory_injection(records, config.aimemory_memory_inject_max_chars)
    if not block:
        return message, None
    parts = message.content if isinstance(message.content, tuple) else (TextPart(message.text),)
    injected = Message("user", (TextPart(block + "\n\n"), *parts))
    if all(isinstance(p, TextPart) for p in injected.content):  # type: ignore[union-attr]
        injected = Message("user", injected.text)
    return injected, message.text


async def answer(
    chatbot: ChatBot, message: Message, bot: Bot, event: MessageEvent, runtime: Runtime
) -> None:
    """One queued job: run the turn, then send the reply (or a short apology)."""
    config = runtime.config
    try:
        query = event.get_plaintext()
        message, persist_text = await with_relevant_memories(runtime, chatbot.key, message, query)
        result = await chatbot.turn(message, persist_user_text=persist_text)
        replies = split_reply(
            result.reply,
            max_chars=config.aimemory_reply_max_chars,
            max_parts=config.aimemory_reply_max_parts,
        )
    except LLMError as exc:
        logger.warning(
            "LLM failed in %s (model=%s kind=%s status=%s): %s",
            chatbot.key,
            chatbot.llm.model,
            exc.kind,
            exc.status,
            exc.detail[:300],
        )
        replies = [failure_text(exc)]
    except Exception:
        logger.exception("turn failed in %s", chatbot.key)
        replies = [texts.TURN_FAILED]
    try:
        await send_parts(bot, event, replies)
    except Exception:
        logger.exception("could not send the reply in %s", chatbot.key)
