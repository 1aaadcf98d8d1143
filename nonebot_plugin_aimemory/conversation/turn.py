"""The turn as a use case, with no NoneBot in sight: take an `Incoming`, merge it into its
speaker's burst (`bursts.py`), queue the burst's turn in the session, put relevant memories
before it, run `ChatBot.turn`, write the chat-log rows, choose the apology when something
fails (key and balance problems: one notice per chat per 10 minutes, one private message to
the SUPERUSERS per hour), and return what to send. Model calls made for a chat are counted
for it (engine/usage.py); a chat over its daily quota gets one notice an hour instead
(how often each notice goes out: `notices.py`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import tzinfo
from typing import Protocol

from .. import texts
from ..engine import (
    AllowanceUsedUp,
    ChatBot,
    LLMError,
    Message,
    Part,
    SavesInTurn,
    StoreError,
    TextPart,
    TurnSpeaker,
    UsageRecorder,
    Voice,
    attributed_to,
    hearing,
    speaking,
    tracing,
    watching_saves,
)
from ..store import ChatRow
from .autoclear import GroupAutoClear
from .bursts import Burst, OpenBursts
from .claims import MessageClaims
from .failures import failure_text, log_failure
from .incoming import Command, Incoming, Outcome, nothing, parts_text, say
from .log_rows import ChatLogSink, assistant_row, log_user_once, read_here, user_row
from .notes import with_notes
from .notices import NoticeTimes
from .sessions import SessionCache, TurnStopped

logger = logging.getLogger("nonebot_plugin_aimemory")


class RelevantMemories(Protocol):
    """The memories relevant to a message, put before it for one turn (notes.py)."""

    async def block(self, scope: str, query: str, speaker: TurnSpeaker | None = None) -> str:
        """The quoted block of the scope's memories relevant to `query` ('' for none);
        `speaker`'s personal memories visible here count too."""
        ...

    async def keep_requested(
        self, scope: str, text: str, speaker: TurnSpeaker, saves: SavesInTurn
    ) -> bool:
        """Keep what `text` asked `speaker`'s turn to remember if it saved nothing."""
        ...


class CommandHandler(Protocol):
    """Answers `~对话` / `~记忆` commands."""

    async def run(self, incoming: Incoming, command: Command) -> str:
        """The one-line (or few-line) answer to the command."""
        ...


async def nothing_to_prepare() -> None:
    """A turn that needs nothing loaded first."""


class Conversation:
    """Answers what people say to the bot, counts what they say around it."""

    def __init__(
        self,
        *,
        sessions: SessionCache,
        autoclear: GroupAutoClear,
        chat_log: ChatLogSink,
        memories: RelevantMemories,
        commands: CommandHandler,
        zone: tzinfo,
        configured: bool,
        log_ambient: bool,
        usage: UsageRecorder,
        daily_quota_tokens: int = 0,
        window_key: Callable[[str], str] = lambda chat_key: chat_key,
        memory_key: Callable[[str], str] = lambda window_key: window_key,
        copies: MessageClaims | None = None,
        prepare: Callable[[], Awaitable[None]] = nothing_to_prepare,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sessions = sessions
        self.usage = usage
        self.daily_quota_tokens = daily_quota_tokens
        # A chat's turns go to its current persona's window (personas/choices.py).
        self.window_key = window_key
        # A window's memories: the chat's, shared by the accounts (memory/placement.py).
        self.memory_key = memory_key
        # Which copy of a message does what, whichever accounts and processes got it.
        self.copies = copies or MessageClaims()
        # What a turn needs loaded (tokenizer, segmenter), loaded off the event loop before
        # the first one rather than at start-up.
        self.prepare = prepare
        self.autoclear = autoclear
        self.chat_log = chat_log
        self.memories = memories
        self.commands = commands
        self.zone = zone
        self.configured = configured
        self.log_ambient = log_ambient
        self.clock = clock  # seconds, for the notice intervals only
        self.bursts = OpenBursts()
        self._closing = False
        self.notices = NoticeTimes()

    async def answer(self, incoming: Incoming) -> Outcome:
        """What to send for this message (often nothing: it was not for the bot)."""
        matched = await self.copies.match(incoming, log_ambient=self.log_ambient)
        if matched is None:
            return nothing()  # another bot process took this very copy
        incoming = matched
        if incoming.command is not None:
            return await self._command(incoming, incoming.command)
        if not incoming.addressed:
            self._note_ambient(incoming)
            return nothing()
        if incoming.group_id is not None:
            self.autoclear.note_addressed(incoming.key)
        if not self.configured:
            return say(texts.NOT_CONFIGURED)
        content = incoming.content
        if not parts_text(content.plain()) and not content.quotes_a_message:
            return say(texts.EMPTY_MESSAGE)
        if self._over_quota(incoming):
            return self._quota_notice(incoming, [incoming])
        return await self._queued_turn(incoming)

    def _over_quota(self, incoming: Incoming) -> bool:
        """Whether the chat used its daily quota (SUPERUSERS may always go on)."""
        quota = self.daily_quota_tokens
        if quota <= 0 or incoming.speaker.is_superuser:
            return False
        return self.usage.today_total(incoming.key) >= quota

    def _quota_notice(self, first: Incoming, unanswered: list[Incoming]) -> Outcome:
        """The quota notice at most once per chat an hour (and again on a new day); the
        `unanswered` messages are logged, not answered."""
        for incoming in unanswered:
            self._log_plain(incoming)
        now, day = self.clock(), self.usage.today()
        if not self.notices.quota_notice_due(first.key, day, now):
            return nothing()
        logger.info("daily token quota used up in %s", first.key)
        return self._apology(first, texts.DAILY_QUOTA_USED_UP)

    async def _command(self, incoming: Incoming, command: Command) -> Outcome:
        try:
            # A command's model calls (a memory search's embedding) are the chat's.
            with attributed_to(incoming.key):
                return say(await self.commands.run(incoming, command))
        except Exception:
            logger.exception("command %s failed in %s", command.text, incoming.key)
            return say(texts.COMMAND_FAILED)

    def _note_ambient(self, incoming: Incoming) -> None:
        """The hot path of a busy group: a counter, and (if enabled) a batched log row
        without downloads or API calls."""
        if incoming.group_id is None:
            return
        self.autoclear.note_unaddressed(incoming.key)
        if self.log_ambient:
            text = parts_text(incoming.content.plain())
            if text:
                self._log_user(incoming, user_row(incoming, text, addressed=False))

    async def _queued_turn(self, incoming: Incoming) -> Outcome:
        """Join the speaker's open burst, or open one and queue its turn. Nothing awaits
        before that, so one chat's messages are taken in arrival order; a turn keeps its
        session until its reply was sent, so replies go out in that order too."""
        read_here(self.chat_log, incoming)
        chars = len(parts_text(incoming.content.plain()))
        burst = self.bursts.find(incoming.key, incoming.speaker.user_id)
        if burst is not None:
            if not burst.has_room_for(chars):
                return self._turned_away(burst, incoming)
            return await burst.add(incoming, chars)
        burst = self.bursts.open(incoming.key, incoming.speaker.user_id)
        waiter = burst.add(incoming, chars)

        async def job(chatbot: ChatBot) -> None:
            # Tools acting for a person (personal memories) read the speaker from here; the
            # turn's model calls (compression and images included) are counted for the chat;
            # the trace goes with the answer, to the newest message's handler.
            trace = burst.messages[-1].trace
            with speaking(incoming.turn_speaker), attributed_to(incoming.key), tracing(trace):
                await self._answer_burst(chatbot, burst)

        session = self.sessions.get_or_create(self.window_key(incoming.key))
        finished = session.submit(job, owner=burst)
        finished.add_done_callback(lambda done: self._after_burst(burst, done))
        return await waiter

    async def _answer_burst(self, chatbot: ChatBot, burst: Burst) -> None:
        self.bursts.close(burst)
        messages = burst.start()
        if self._closing:
            await self._keep_unanswered(chatbot, messages)
            return
        if self._over_quota(messages[0]):  # checked again now that its turn has come
            outcome = self._quota_notice(messages[0], messages)
        else:
            outcome = await self._turn(chatbot, messages)
        burst.answer(outcome)
        await outcome.wait_delivered()

    def _after_burst(self, burst: Burst, finished: asyncio.Future[object]) -> None:
        """A burst dropped before its turn (`~对话 停止`, shutdown) is still logged; no
        handler is left waiting, whatever happened."""
        self.bursts.close(burst)
        if not burst.started:
            for incoming in burst.messages:
                self._log_plain(incoming)
        if finished.cancelled():
            logger.info("queued messages in %s dropped", burst.key)
        elif isinstance(finished.exception(), TurnStopped):
            logger.info("answer in %s stopped by a user", burst.key)
        elif (error := finished.exception()) is not None:
            logger.error("turn in %s failed", burst.key, exc_info=error)
        burst.settle()

    def _turned_away(self, burst: Burst, incoming: Incoming) -> Outcome:
        """Beyond what one turn answers: logged only, with one notice per burst."""
        self._log_plain(incoming)
        if burst.overflowed:
            return nothing()
        burst.overflowed = True
        logger.info("burst of %s in %s over the per-turn cap", incoming.speaker.user_id, burst.key)
        return say(texts.BURST_TOO_LONG)

    def _log_plain(self, incoming: Incoming) -> None:
        text = parts_text(incoming.content.plain())
        if text:
            self._log_user(incoming, user_row(incoming, text))

    async def _turn(self, chatbot: ChatBot, messages: list[Incoming]) -> Outcome:
        """Read the messages in full, run one turn on them; a short apology when it fails."""
        # The apologies are the chat's, whichever persona answers.
        first = messages[0]
        rows: list[ChatRow] = []
        try:
            await self.prepare()
            parts, text, voices = await self._read_all(messages, rows)
            message, persist_text = with_notes(
                user_message(first.line_prefix(self.zone), parts),
                [
                    await self.memories.block(
                        self.memory_key(chatbot.key), text, first.turn_speaker
                    ),
                    await self.chat_log.recalled(
                        first.log_key, text, _seen(chatbot, text), asker=first.speaker.name
                    ),
                ],
            )
            # A memory saved in the turn is attributed by whose words it holds.
            with watching_saves() as saves, hearing(voices):
                result = await chatbot.turn(
                    message,
                    persist_user_text=persist_text,
                    may_call=lambda: not self._over_quota(first),
                )
            # Kept before the answer goes out: what the member is told must be true.
            await self.memories.keep_requested(
                self.memory_key(chatbot.key), text, first.turn_speaker, saves
            )
        except AllowanceUsedUp:  # its messages are logged and kept in the window
            return self._quota_notice(first, [])
        except LLMError as exc:
            log_failure(chatbot.key, chatbot.llm.model, exc)
            return self._failed(first, chatbot.llm.model, exc, rows)
        except StoreError as exc:  # a locked file, a full disk: its message says it all
            logger.error("turn failed in %s: %s", chatbot.key, exc)
            return self._apology(first, texts.TURN_FAILED)
        except Exception:
            logger.exception("turn failed in %s", chatbot.key)
            return self._apology(first, texts.TURN_FAILED)
        # The review the row asks for is of the window's memories (a persona's, the chat's
        # whichever account), reading the chat's log: once, however many accounts answer.
        self._log(assistant_row(first, result.reply), review_for=self.memory_key(chatbot.key))
        return Outcome([result.reply], from_model=True)

    async def _read_all(
        self, messages: list[Incoming], rows: list[ChatRow]
    ) -> tuple[list[Part], str, list[Voice]]:
        """The burst's messages in full, one per line, and whose words they hold; each
        one's chat-log row is written as it is read (into `rows`)."""
        parts: list[Part] = []
        lines: list[str] = []
        voices: list[Voice] = []
        for incoming in messages:
            content = await incoming.content.rich()
            line = parts_text(content.parts)
            row = user_row(incoming, line)
            if self._log_user(incoming, row):
                rows.append(row)
            if parts:
                parts.append(TextPart("\n"))
            parts += content.parts
            lines.append(line)
            voices += [incoming.own_voice(content), *content.voices]
        return parts, "\n".join(lines), voices

    async def _keep_unanswered(self, chatbot: ChatBot, messages: list[Incoming]) -> None:
        """At shutdown a queued burst gets no answer, but it is not lost: its messages go
        to the chat log and, as one user message, to the window (answered after restart
        with the next message)."""
        for incoming in messages:
            self._log_plain(incoming)
        parts: list[Part] = []
        for incoming in messages:
            if parts:
                parts.append(TextPart("\n"))
            parts += incoming.content.plain()
        await chatbot.keep_unanswered(user_message(messages[0].line_prefix(self.zone), parts))

    async def close(self, grace_seconds: float) -> None:
        """Shutdown: turns in flight get `grace_seconds` to finish and are then stopped
        (their user messages stay in the window); queued bursts are kept unanswered."""
        self._closing = True
        await self.sessions.settle(grace_seconds)
        await self.copies.close()

    def _failed(self, first: Incoming, model: str, error: LLMError, rows: list[ChatRow]) -> Outcome:
        """What to send after a failed turn; refused messages are marked in the chat log."""
        if error.kind == "refused":
            for row in rows:
                self.chat_log.mark_refused(row)
        if error.kind == "account":
            return self._account_problem(first, model, error)
        return self._apology(first, failure_text(error))

    def _account_problem(self, first: Incoming, model: str, error: LLMError) -> Outcome:
        """The key or balance notice at most once per chat in ten minutes (nothing in
        between), and what the service said for the SUPERUSERS at most once an hour."""
        now = self.clock()
        outcome = nothing()
        if self.notices.account_notice_due(first.key, now):
            outcome = self._apology(first, texts.LLM_ACCOUNT_PROBLEM)
        if self.notices.superusers_notice_due(now):
            outcome.notify_superusers = texts.account_problem_for_superusers(
                model=model, status=error.status, code=error.code, message=error.provider_message
            )
        return outcome

    def _apology(self, first: Incoming, apology: str) -> Outcome:
        """The chat log keeps an apology like any reply the bot sent."""
        self._log(assistant_row(first, apology))
        return say(apology)

    def _log_user(self, incoming: Incoming, row: ChatRow) -> bool:
        """Queue a person's message, once for all the copies received (log_rows.py);
        whether this row is the one logged."""
        return log_user_once(self.chat_log, incoming, row)

    def _log(self, row: ChatRow, *, review_for: str | None = None) -> None:
        """Queue a chat-log row. A flush it starts writes (and embeds) every chat's rows; it
        runs as background work, which is nobody's usage (engine/background.py)."""
        self.chat_log.add(row, review_for=review_for)


def user_message(prefix: str, parts: list[Part]) -> Message:
    """The user line the model sees: send time (and speaker in groups) before the content."""
    content: list[Part] = [TextPart(prefix), *parts]
    if all(isinstance(p, TextPart) for p in content):
        return Message("user", "".join(p.text for p in content if isinstance(p, TextPart)))
    return Message("user", tuple(content))


def _seen(chatbot: ChatBot, text: str) -> list[str]:
    """What the model reads of the people anyway this turn: the message and the window's."""
    return [text, *(m.text for m in chatbot.window.messages if m.role == "user")]
