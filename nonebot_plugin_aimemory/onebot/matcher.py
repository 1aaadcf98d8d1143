"""The chat matcher: every message passes here once; addressed ones are answered in order,
the others only move the group's auto-clear counter (and, if enabled, the chat log)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone

from nonebot import on_message
from nonebot.adapters.onebot.v11 import Bot, GroupMessageEvent, MessageEvent
from nonebot.matcher import current_bot, current_event, current_matcher

from .. import texts
from ..config import Config
from ..conversation.commands import run_dialog_command
from ..conversation.replies import failure_text, plain_for_qq, split_reply
from ..conversation.sessions import TurnStopped
from ..engine.chatbot import ChatBot
from ..engine.llm import LLMError
from ..engine.messages import Message, Part, TextPart
from ..memory.commands import run_memory_command
from ..runtime import Runtime, current_runtime
from ..store.chat_log_store import ChatRow
from ..store.database import utc_now_text, utc_text
from .content import render_plain
from .events import (
    is_addressed,
    is_superuser,
    line_prefix,
    resolve_timezone,
    send_parts,
    send_segments,
    session_key_for,
    speaker_name,
)

logger = logging.getLogger("nonebot_plugin_aimemory")

# One matcher for everything, with a parameter-free handler: every matcher and every
# injected parameter costs NoneBot ~0.2 ms per message, and unaddressed group messages
# are the hot path. Low priority: other plugins go first; we block only what we handle.
chat = on_message(priority=90, block=False)
COMMAND = re.compile(r"^\s*[~～/](对话|记忆)(?:\s+(\S+)(?:\s+(.*?))?)?\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Incoming:
    """An addressed QQ message, translated once for the model, memory search and the log."""

    key: str
    message: Message  # what the model sees: time and speaker before the content
    text: str  # the content alone, images as markers
    speaker_id: str
    speaker_name: str
    sent_at: datetime

    def chat_row(self, *, addressed: bool = True) -> ChatRow:
        """This message as a chat-log row."""
        return ChatRow(
            session_key=self.key,
            created_at=utc_text(self.sent_at),
            role="user",
            text=self.text,
            speaker_id=self.speaker_id,
            speaker_name=self.speaker_name,
            addressed=addressed,
        )


@chat.handle()
async def handle_message() -> None:
    """Route a message: `~对话`/`~记忆` commands to their handlers, the rest to the chat."""
    runtime = current_runtime()
    event = current_event.get()
    if runtime is None or not isinstance(event, MessageEvent):
        return
    if event.user_id == event.self_id:
        # Implementations set to report the bot's own messages (LLOneBot, NapCat) would
        # otherwise have it answer itself, forever, in a private chat.
        return
    bot = current_bot.get()
    if not isinstance(bot, Bot) or not is_served_group(event, runtime.config):
        return
    if not isinstance(event, GroupMessageEvent) and not await private_chat_served(
        bot, event, runtime.config
    ):
        return
    command = COMMAND.match(event.get_plaintext())
    if command is not None:
        current_matcher.get().stop_propagation()
        await run_command(bot, event, runtime, command)
        return
    await handle_chat(bot, event, runtime)


def is_served_group(event: MessageEvent, config: Config) -> bool:
    """False for a denied group, or one missing from a non-empty allowlist: there the bot is
    silent. Synchronous, as every unaddressed group message passes here."""
    if not isinstance(event, GroupMessageEvent):
        return True
    if event.group_id in config.denied_groups:
        return False
    return not config.allowed_groups or event.group_id in config.allowed_groups


async def private_chat_served(bot: Bot, event: MessageEvent, config: Config) -> bool:
    """Private chats are for everyone, or (switched off) for SUPERUSERS only."""
    return config.aimemory_private_chat or await is_superuser(bot, event)


async def run_command(
    bot: Bot, event: MessageEvent, runtime: Runtime, command: re.Match[str]
) -> None:
    """`~对话 …` and `~记忆 …`, matched here so they work whatever COMMAND_START is."""
    name, first, rest = command.group(1), command.group(2) or "", (command.group(3) or "").strip()
    try:
        if name == "对话":
            await run_dialog_command(bot, event, runtime, f"{first} {rest}".strip())
        else:
            await run_memory_command(bot, event, runtime, first, rest)
    except Exception:
        logger.exception(
            "command ~%s %s %s failed in %s", name, first, rest, session_key_for(event)
        )
        await send_quietly(
            bot, event, [texts.COMMAND_FAILED], runtime=None, key=session_key_for(event)
        )


async def handle_chat(bot: Bot, event: MessageEvent, runtime: Runtime) -> None:
    """Answer a message addressed to the bot; otherwise only count (and maybe log) it."""
    group_id = str(event.group_id) if isinstance(event, GroupMessageEvent) else None
    if not is_addressed(event):
        if group_id is not None:
            runtime.autoclear.note_unaddressed(group_id)
            log_ambient(event, runtime)
        return
    current_matcher.get().stop_propagation()
    if group_id is not None:
        runtime.autoclear.note_addressed(group_id)
    if not runtime.configured:
        await send_parts(bot, event, [texts.NOT_CONFIGURED])
        return
    if not parts_text(render_plain(event)) and getattr(event, "reply", None) is None:
        await send_parts(bot, event, [texts.EMPTY_MESSAGE])
        return
    # Enqueue before any await: messages of one session are answered in arrival order.
    session = runtime.sessions.get_or_create(session_key_for(event))
    try:
        await session.submit(lambda chatbot: answer(chatbot, bot, event, runtime))
    except TurnStopped:
        logger.info("answer in %s stopped by a user", session.key)


def parts_text(parts: list[Part]) -> str:
    """Text of the parts, images as their markers, trimmed."""
    return "".join(p.text if isinstance(p, TextPart) else p.marker for p in parts).strip()


def incoming_from(event: MessageEvent, parts: list[Part], runtime: Runtime) -> Incoming:
    """The user line the model sees: send time (and speaker in groups) before the content."""
    prefix = TextPart(line_prefix(event, resolve_timezone(runtime.config.aimemory_timezone)))
    content = [prefix, *parts]
    if all(isinstance(p, TextPart) for p in content):
        message = Message("user", "".join(p.text for p in content))  # type: ignore[union-attr]
    else:
        message = Message("user", tuple(content))
    return Incoming(
        key=session_key_for(event),
        message=message,
        text=parts_text(parts),
        speaker_id=str(event.user_id),
        speaker_name=speaker_name(event),
        sent_at=datetime.fromtimestamp(event.time, timezone.utc),
    )


async def translate(bot: Bot, event: MessageEvent, runtime: Runtime) -> Incoming:
    """The rich form: images read, @names and quoted or forwarded messages fetched."""
    if runtime.content is None:
        return incoming_from(event, render_plain(event), runtime)
    return incoming_from(event, await runtime.content.render(bot, event), runtime)


def log_ambient(event: MessageEvent, runtime: Runtime) -> None:
    """With `aimemory_chat_log_ambient`, unaddressed group messages are logged too (batched,
    and without downloads or API calls: this is the hot path of a busy group)."""
    if runtime.chat_log is None or not runtime.config.aimemory_chat_log_ambient:
        return
    parts = render_plain(event)
    if parts_text(parts):
        runtime.chat_log.add(incoming_from(event, parts, runtime).chat_row(addressed=False))


def assistant_row(key: str, reply: str) -> ChatRow:
    """The chat-log row of the bot's reply."""
    return ChatRow(session_key=key, created_at=utc_now_text(), role="assistant", text=reply)


async def with_relevant_memories(
    runtime: Runtime, scope: str, message: Message, query: str
) -> tuple[Message, str | None]:
    """Put the memories most relevant to this message before it, for this turn only: the
    window keeps (and the store persists) the message without them."""
    memory = runtime.memory
    config = runtime.config
    if memory is None or not config.aimemory_memory_auto_inject:
        return message, None
    try:
        records = await memory.relevant(scope, query, config.aimemory_memory_inject_topk)
    except Exception:
        # Memories help; they must never stop an answer (database gone, disk full...).
        logger.exception("could not look up memories for %s; answering without them", scope)
        return message, None
    block = texts.memory_injection(records, config.aimemory_memory_inject_max_chars)
    if not block:
        return message, None
    parts = message.content if isinstance(message.content, tuple) else (TextPart(message.text),)
    injected = Message("user", (TextPart(block + "\n\n"), *parts))
    if all(isinstance(p, TextPart) for p in injected.content):  # type: ignore[union-attr]
        injected = Message("user", injected.text)
    return injected, message.text


async def answer(chatbot: ChatBot, bot: Bot, event: MessageEvent, runtime: Runtime) -> None:
    """One queued job: read the message, run the turn, send the reply (or a short apology)."""
    config = runtime.config
    chat_log = runtime.chat_log
    try:
        incoming = await translate(bot, event, runtime)
        if chat_log is not None:
            chat_log.add(incoming.chat_row())
        message, persist_text = await with_relevant_memories(
            runtime, chatbot.key, incoming.message, incoming.text
        )
        result = await chatbot.turn(message, persist_user_text=persist_text)
        if chat_log is not None:
            chat_log.add(assistant_row(chatbot.key, result.reply), review=True)
        replies = split_reply(
            plain_for_qq(result.reply),
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
        await apologise(bot, event, runtime, chatbot.key, failure_text(exc))
        return
    except Exception:
        logger.exception("turn failed in %s", chatbot.key)
        await apologise(bot, event, runtime, chatbot.key, texts.TURN_FAILED)
        return
    await send_quietly(bot, event, replies, runtime=runtime, key=chatbot.key)


async def apologise(
    bot: Bot, event: MessageEvent, runtime: Runtime, key: str, apology: str
) -> None:
    """Send the short apology; the chat log keeps it like any reply the bot sent."""
    if runtime.chat_log is not None:
        runtime.chat_log.add(assistant_row(key, apology))
    await send_quietly(bot, event, [apology], runtime=None, key=key)


async def send_quietly(
    bot: Bot, event: MessageEvent, replies: list[str], *, runtime: Runtime | None, key: str
) -> None:
    """Send; with a runtime, model text is turned into QQ segments (images, @members).
    A failed send is logged: the answer is already in the history."""
    try:
        if runtime is None or runtime.replies is None:
            await send_parts(bot, event, replies)
        else:
            built = [await runtime.replies.build(bot, event, text) for text in replies]
            await send_segments(bot, event, built)
    except Exception:
        logger.exception("could not send the reply in %s", key)
