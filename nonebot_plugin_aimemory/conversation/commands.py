"""`~对话` commands (status, clear and stop for the current conversation), and the router
that sends `~记忆` to the memory commands."""

from __future__ import annotations

from datetime import tzinfo
from typing import Protocol

from .. import texts
from ..engine.tokens import TokenCounter
from ..engine.turn_context import TurnSpeaker
from .incoming import Command, Incoming
from .sessions import SessionCache


class MemoryCommandHandler(Protocol):
    """Answers `~记忆 <action> <argument>` for one scope."""

    async def run(
        self,
        scope: str,
        action: str,
        argument: str,
        *,
        is_manager: bool,
        caller: TurnSpeaker | None = None,
        is_superuser: bool = False,
    ) -> str:
        """The answer to the command; `caller` is who sent it (`~记忆 我的 …`)."""
        ...


class DialogCommands:
    """`~对话 状态 | 清空 | 停止` for the conversation the command was sent in."""

    def __init__(
        self,
        sessions: SessionCache,
        counter: TokenCounter,
        *,
        budget_tokens: int,
        persistent: bool,
        zone: tzinfo,
    ) -> None:
        self.sessions = sessions
        self.counter = counter
        self.budget_tokens = budget_tokens
        self.persistent = persistent
        self.zone = zone

    async def run(self, incoming: Incoming, argument: str) -> str:
        """Answer `~对话 <argument>`."""
        if argument == "状态":
            return await self.status(incoming.key, show_sessions=incoming.speaker.is_superuser)
        if argument == "清空":
            if not incoming.speaker.is_manager:
                return texts.PERMISSION_DENIED
            await self.clear(incoming.key)
            return texts.CLEARED
        if argument == "停止":
            session = self.sessions.get(incoming.key)
            if session is None:
                return texts.NOTHING_TO_STOP
            # Non-short-circuit: what is queued is dropped along with the answer in progress.
            stopped = session.stop_current() | bool(session.drop_queued())
            return texts.STOPPED if stopped else texts.NOTHING_TO_STOP
        return texts.DIALOG_USAGE

    async def clear(self, key: str) -> None:
        """Clear one conversation's window, in memory and in the store, under its lock."""
        session = self.sessions.get_or_create(key, touch=False)
        async with session.lock:
            await session.bot.clear()
            session.loaded = True

    async def status(self, key: str, *, show_sessions: bool) -> str:
        """Context use, compressions and where history is kept."""
        session = self.sessions.get_or_create(key, touch=False)
        if not session.loaded:
            async with session.lock:
                await session.ensure_loaded()
        chatbot = session.bot
        summary = chatbot.summary
        last = chatbot.stats.last_at
        return texts.dialog_status(
            context_tokens=chatbot.context_tokens,
            budget_tokens=self.budget_tokens,
            message_count=len(chatbot.window),
            summary_tokens=self.counter.count(summary) if summary is not None else None,
            compressions=chatbot.stats.count,
            last_compressed=last.astimezone(self.zone).strftime("%Y-%m-%d %H:%M") if last else None,
            persistent=self.persistent,
            resident_sessions=len(self.sessions) if show_sessions else None,
        )


class Commands:
    """Routes a command to the feature that owns it."""

    def __init__(self, dialog: DialogCommands, memory: MemoryCommandHandler) -> None:
        self.dialog = dialog
        self.memory = memory

    async def run(self, incoming: Incoming, command: Command) -> str:
        """The answer to `~对话 …` or `~记忆 …`."""
        if command.name == "对话":
            return await self.dialog.run(incoming, f"{command.action} {command.argument}".strip())
        return await self.memory.run(
            incoming.key,
            command.action,
            command.argument,
            is_manager=incoming.speaker.is_manager,
            caller=incoming.turn_speaker,
            is_superuser=incoming.speaker.is_superuser,
        )
