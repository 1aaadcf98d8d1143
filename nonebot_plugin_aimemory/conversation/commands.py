"""`~对话` commands (status, clear, stop and token usage for the current conversation), and the router
that sends `~记忆` to the memory commands and `~人设` to the persona commands. A chat's
conversation is its current persona's: every command acts on that persona's window and
memories (see scopes.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import tzinfo
from typing import Protocol

from .. import texts
from ..engine import TokenCounter, TokenCounts, TurnSpeaker, UsageRecorder, in_role_order, summed
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


class PersonaCommandHandler(Protocol):
    """Answers `~人设 <action> <argument>` in one chat."""

    async def run(self, chat_key: str, action: str, argument: str, *, may_switch: bool) -> str:
        """The answer to the command."""
        ...


class CurrentPersonas(Protocol):
    """Which persona each chat plays (personas/choices.py)."""

    def window_key(self, chat_key: str) -> str:
        """The key of the current persona's window and memories in the chat."""
        ...

    def shown_name(self, chat_key: str) -> str | None:
        """The current persona's name for status lines (None: no personas defined)."""
        ...


# Days `~对话 用量` adds up besides today (today included).
USAGE_WEEK_DAYS = 7
# Chats a SUPERUSER's `~对话 用量` lists by tokens used.
USAGE_TOP_CHATS = 5


class DialogCommands:
    """`~对话 状态 | 清空 | 停止 | 用量` for the conversation the command was sent in."""

    def __init__(
        self,
        sessions: SessionCache,
        counter: TokenCounter,
        *,
        budget_tokens: int,
        persistent: bool,
        zone: tzinfo,
        personas: CurrentPersonas,
        usage: UsageRecorder,
        daily_quota_tokens: int = 0,
    ) -> None:
        self.sessions = sessions
        self.personas = personas
        self.usage = usage
        self.daily_quota_tokens = daily_quota_tokens
        self.counter = counter
        self.budget_tokens = budget_tokens
        self.persistent = persistent
        self.zone = zone

    async def run(self, incoming: Incoming, argument: str) -> str:
        """Answer `~对话 <argument>` for the current persona's conversation."""
        key = self.personas.window_key(incoming.key)
        if argument == "状态":
            status = await self.status(key, show_sessions=incoming.speaker.is_superuser)
            return _with_account(
                _with_persona(status, self.personas.shown_name(incoming.key)), incoming
            )
        if argument == "清空":
            if not incoming.speaker.is_manager:
                return texts.PERMISSION_DENIED
            await self.clear(key)
            return texts.CLEARED
        if argument == "停止":
            return self.stop(key, incoming)
        if argument == "用量":
            # Usage is the chat's, whichever persona spent it.
            if incoming.speaker.is_superuser and incoming.group_id is None:
                return await self.usage_of_all_chats()
            return _with_account(await self.usage_of(incoming.key), incoming)
        return texts.DIALOG_USAGE

    def stop(self, key: str, incoming: Incoming) -> str:
        """`~对话 停止`: a member stops their own messages, queued and being answered; a
        manager (in private chat, the person) everyone's. The reply says how many."""
        speaker = incoming.speaker
        session = self.sessions.get(key)
        if session is None:
            return texts.NOTHING_TO_STOP
        stopped = session.stop(None if speaker.is_manager else speaker.user_id)
        if stopped.messages:
            return texts.stopped_messages(
                answering=stopped.answering,
                queued=stopped.queued,
                everyone=speaker.is_manager and incoming.group_id is not None,
            )
        if not speaker.is_manager and session.busy:
            return texts.NOTHING_OF_YOURS_TO_STOP
        return texts.NOTHING_TO_STOP

    async def usage_of(self, chat_key: str) -> str:
        """This chat's tokens today and over the last 7 days, by role."""
        today = self.usage.today()
        week_start = self.usage.days_before(today, USAGE_WEEK_DAYS - 1)
        return texts.usage_report(
            today=_period("今天", await self.usage.by_role(chat_key, today, today)),
            week=_period("近 7 天", await self.usage.by_role(chat_key, week_start, today)),
            today_used_tokens=self.usage.today_total(chat_key),
            quota_tokens=self.daily_quota_tokens,
        )

    async def usage_of_all_chats(self) -> str:
        """Every chat's tokens added up, today and over the last 7 days, and the chats that
        used the most."""
        today = self.usage.today()
        week_start = self.usage.days_before(today, USAGE_WEEK_DAYS - 1)
        return texts.usage_report_all_chats(
            today=_period("今天", await self.usage.totals(today, today)),
            week=_period("近 7 天", await self.usage.totals(week_start, today)),
            top_chats=await self.usage.top_chats(week_start, today, USAGE_TOP_CHATS),
        )

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

    def __init__(
        self,
        dialog: DialogCommands,
        memory: MemoryCommandHandler,
        personas: PersonaCommandHandler,
        current: CurrentPersonas,
        memory_key: Callable[[str], str] = lambda window_key: window_key,
    ) -> None:
        self.dialog = dialog
        self.memory = memory
        self.personas = personas
        self.current = current
        # `~记忆` acts on the window's memories, shared by the accounts (memory/placement.py).
        self.memory_key = memory_key

    async def run(self, incoming: Incoming, command: Command) -> str:
        """The answer to `~对话 …`, `~记忆 …` or `~人设 …`."""
        if command.name == "对话":
            return await self.dialog.run(incoming, f"{command.action} {command.argument}".strip())
        speaker = incoming.speaker
        if command.name == "人设":
            # In private chat the person decides; in a group its managers do.
            may_switch = speaker.is_manager or incoming.group_id is None
            return await self.personas.run(
                incoming.key, command.action, command.argument, may_switch=may_switch
            )
        current = self.current
        answer = await self.memory.run(
            self.memory_key(current.window_key(incoming.key)),
            command.action,
            command.argument,
            is_manager=speaker.is_manager,
            caller=incoming.turn_speaker,
            is_superuser=speaker.is_superuser,
        )
        if command.action == "状态" and not command.argument:
            answer = _with_persona(answer, current.shown_name(incoming.key))
        return answer


def _period(title: str, by_role: dict[str, TokenCounts]) -> str:
    return texts.usage_period(title, summed(by_role.values()), in_role_order(by_role))


def _with_account(report: str, incoming: Incoming) -> str:
    """A report of one account's window or usage names the account when several answer
    here (each has its own)."""
    if len(incoming.peers) <= 1:
        return report
    return f"{texts.account_line(incoming.account)}\n{report}"


def _with_persona(status: str, persona: str | None) -> str:
    """A status report with the current persona named first (when there are personas)."""
    return status if persona is None else f"{texts.persona_current(persona)}\n{status}"
