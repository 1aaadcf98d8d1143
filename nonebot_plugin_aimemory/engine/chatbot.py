"""One conversation's turn loop: window + new message → (compress) → LLM → tools → reply →
store, committed before the reply is handed back to be sent."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timezone

from .answer_notes import AnswerNotes
from .cadence import FoldCadence
from .compressor import Compaction, Compressor
from .errors import ContextLengthError, LLMError, is_reasoning_missing_error
from .history import CompressionStats, HistoryStore
from .llm import Completion, LLMClient
from .messages import Message
from .request_room import RequestRoom
from .stored_window import StoredWindow
from .tokens import TokenCounter, message_tokens
from .tools import MAX_TOOL_CALLS_KEPT_PER_ROUND, ToolRegistry, result_floor_tokens
from .turn_outcome import (
    AnswerMode,
    Compacted,
    MayCall,
    TurnProgress,
    TurnResult,
    always,
    check_allowance,
    kept_after,
)
from .turn_request import turn_request
from .usage import Usage
from .window import Window, with_reasoning_placeholders

logger = logging.getLogger("nonebot_plugin_aimemory")


class ChatBot:
    """A conversation: its window, system prompt, tools and the loop that answers a message."""

    def __init__(
        self,
        key: str,
        *,
        llm: LLMClient,
        store: HistoryStore,
        counter: TokenCounter,
        system_prompt: str,
        tools: ToolRegistry | None = None,
        max_tool_rounds: int = 8,
        send_images: bool = False,
        compressor: Compressor | None = None,
        notes: AnswerNotes | None = None,
    ) -> None:
        self.key = key
        self.llm = llm
        self.store = store
        self.counter = counter
        self.tools = tools or ToolRegistry()
        self.max_tool_rounds = max_tool_rounds
        # Text-only models reject image parts: they then see the images' text markers.
        self.send_images = send_images
        self.compressor = compressor
        self.notes = notes or AnswerNotes()
        self.window = Window(counter)
        self.system_message = Message("system", system_prompt)
        # Prompt size of the last request, from the API's usage (or estimated without one).
        self.context_tokens = 0
        self.stats = CompressionStats()
        self._fixed_tokens: int | None = None
        self._cadence = FoldCadence()
        self._stored = StoredWindow(key, self.window, store)

    @property
    def summary(self) -> str | None:
        """The running summary at the head of the window (none without a compressor)."""
        if self.compressor is None:
            return None
        return self.compressor.split_summary(self.window.messages)[0]

    async def load(self) -> None:
        """Fill the window from the store (an unreadable store leaves it empty)."""
        try:
            messages = await self.store.load(self.key)
            self.stats = await self.store.load_stats(self.key)
        except Exception:
            logger.exception("could not load history of %s, starting empty", self.key)
            messages = []
        self.window.replace(messages)
        self.context_tokens = self.estimate_window_tokens() if messages else 0

    async def keep_unanswered(self, message: Message) -> None:
        """Keep a message unanswered (at shutdown); the next turn's request carries it."""
        await self._stored.keep([message.with_image_markers()])

    async def clear(self) -> None:
        """Forget the conversation in memory and in the store (StoreError if it could not)."""
        self.forget()
        await self._stored.clear()

    def forget(self) -> None:
        """Forget the conversation in memory only (the caller clears the store)."""
        self.window.clear()
        self.context_tokens = 0
        self.stats = CompressionStats()

    async def turn(
        self,
        message: Message,
        *,
        persist_user_text: str | None = None,
        may_call: MayCall = always,
    ) -> TurnResult:
        """Answer `message`; the turn's messages are committed to the store before this
        returns, so the reply may be sent. `persist_user_text`, when given, is what the window
        keeps of it instead of its per-turn injections; `may_call` is asked before each model
        call. Raises LLMError when no answer can be had, AllowanceUsedUp when `may_call`
        said no, StoreError when the answer could not be stored; after a transient failure (a
        store's too), a used-up allowance and on cancellation the user's message and finished
        tool rounds are kept, after any other only what the provider had accepted
        (`kept_after`)."""
        # Background calls wait for the whole turn, not only for each of its calls.
        async with self.llm.traffic.turn():
            return await self._turn(message, persist_user_text, may_call)

    async def _turn(
        self, message: Message, persist_user_text: str | None, may_call: MayCall
    ) -> TurnResult:
        kept_user = message if persist_user_text is None else message.with_text(persist_user_text)
        kept_user = kept_user.with_image_markers()
        if not self.send_images:
            message = message.with_image_markers()
        progress = TurnProgress()
        kept: list[Message] | None = None
        answered = False
        try:
            text = await self._answer(message, progress, may_call, kept_user.text)
            answered = True
            await self._stored.store_answered([kept_user, *progress.kept_pending()])
            return TurnResult(text, progress.usage, progress.rounds, progress.compressions)
        except LLMError as exc:
            kept = kept_after(exc, kept_user, progress.kept_pending(), progress.accepted)
            raise
        finally:
            # On failure and cancellation alike (an answer was stored above): pending only
            # ever holds whole tool rounds, so what is kept is always a valid history.
            if not answered:
                kept = [kept_user, *progress.kept_pending()] if kept is None else kept
                if kept:
                    await self._stored.keep(kept)

    async def _answer(
        self, message: Message, progress: TurnProgress, may_call: MayCall, asked: str
    ) -> str:
        """Call the model, running the tool rounds it asks for, until it answers; the answer
        is appended to `progress.pending` and its text returned. `may_call` is asked before
        each step that calls the model, so a limit is passed by one call at most. A model
        that loops, repeats itself, invents tools or says nothing is asked again with
        fewer choices (AnswerMode) before the turn gives up."""
        pending = progress.pending
        if self._over_threshold():
            check_allowance(may_call, self.key)
            progress.add(await self._compact(reason="threshold"))
        while True:
            if self._request_over_budget(message, pending) and self._can_fold():
                check_allowance(may_call, self.key)
                progress.add(
                    await self._compact(
                        reason="request over budget",
                        keep_recent_tokens=self._tail_room(message, pending),
                    )
                )
            if progress.mode is AnswerMode.TOOLS and (
                progress.rounds >= self.max_tool_rounds
                or not self._room_for_a_round(message, pending)
            ):
                progress.mode = AnswerMode.NO_TOOL_CHOICE
            check_allowance(may_call, self.key)
            completion = await self._call_recovering(message, pending, progress)
            progress.accepted = len(pending)
            progress.usage += completion.usage or Usage()
            reply = self.notes.said(
                completion.message, progress.last_asked, asked, self.tools.names
            )
            if reply.tool_calls and progress.mode is AnswerMode.TOOLS:
                loop = progress.loop_in(reply.tool_calls, self.tools.names)
                if loop is not None:
                    self.notes.ask_plainer(progress, self.key, loop)
                    continue
                progress.note_calls(reply.tool_calls, self.tools.names)
                progress.rounds += 1
                progress.add_round(*await self._run_tools(reply, message, pending))
                continue
            if not reply.text:
                reply = reply.with_text(self.notes.after_nothing(reply, progress, self.key))
                if not reply.text:
                    continue
            turn = [message, *pending]
            if self.notes.refuses(reply.text, turn, asked, progress, self.key):
                continue
            if self.notes.asks_again(reply.text, asked, self.window.messages, progress, self.key):
                message = message.with_note(self.notes.repeat)
                continue
            # Thinking models need the reasoning of an exchange that made tool calls in
            # every later request (DeepSeek answers 400 without it); any other
            # exchange's reasoning they ignore, so keeping it would only cost tokens.
            reasoning = reply.reasoning if progress.rounds else None
            pending.append(Message("assistant", reply.text, reasoning=reasoning))
            return reply.text

    async def compact(self, *, reason: str, keep_recent_tokens: int | None = None) -> Usage:
        """Fold the older window into the summary (or truncate if that fails); returns the
        compressor's usage. The new window replaces the stored one."""
        return (await self._compact(reason=reason, keep_recent_tokens=keep_recent_tokens)).usage

    async def _compact(self, *, reason: str, keep_recent_tokens: int | None = None) -> Compacted:
        """`compact`, also telling whether the window changed: only a change is counted, as
        a compression in the stats or as a reason to retry a request."""
        assert self.compressor is not None
        logger.info(
            "compressing %s (%s): %d messages, ~%d tokens",
            self.key,
            reason,
            len(self.window),
            self.context_tokens,
        )
        before = list(self.window.messages)
        before_tokens = self.window.tokens
        fixed_tokens = self.estimate_window_tokens() - before_tokens
        if self._cadence.may_fold(before_tokens):
            compaction = await self.compressor.compact(
                self.key, before, keep_recent_tokens=keep_recent_tokens, fixed_tokens=fixed_tokens
            )
        else:
            # The last fold fell short and folding again would too: drop instead, for free.
            keep = keep_recent_tokens
            if keep is None:
                keep = self.compressor.tail_tokens(fixed_tokens)
            compaction = await self.compressor.drop_to_tail(
                self.key, before, keep, reason=f"{reason}; the last fold fell short"
            )
        if compaction is None:
            if keep_recent_tokens != 0:
                return Compacted()
            # Even the whole window has nothing to fold: the only way down is truncation.
            compaction = await self.compressor.drop_oldest_half(
                self.key, before, reason="nothing to fold"
            )
        if compaction.messages == before:
            logger.info("compressing %s (%s) left the window as it was", self.key, reason)
            return Compacted(compaction.usage)
        self._apply(compaction)
        self._note_cadence(compaction, before_tokens)
        compressed_at = None if compaction.fell_back else datetime.now(timezone.utc)
        if compressed_at is not None:
            self.stats = CompressionStats(self.stats.count + 1, compressed_at)
        await self._stored.store_whole(compressed_at=compressed_at)
        return Compacted(compaction.usage, changed=True)

    def _apply(self, compaction: Compaction) -> None:
        self.window.replace(compaction.messages)
        # After a fallback the size is unknown: 0 makes the next turn re-check and converge.
        self.context_tokens = 0 if compaction.fell_back else self.estimate_window_tokens()

    def _note_cadence(self, compaction: Compaction, before_tokens: int) -> None:
        """Tell the cadence what a compaction did."""
        assert self.compressor is not None
        if compaction.fell_back:
            self._cadence.after_truncation(before_tokens, self.window.tokens)
        else:
            request_tokens = self.estimate_window_tokens()
            aim = self.compressor.aim(request_tokens - self.window.tokens)
            self._cadence.after_fold_of(self.key, self.window.tokens, request_tokens, aim)

    def _over_threshold(self) -> bool:
        """The last prompt was over the threshold and the window regrew since the last fold
        (a fold is never repeated on a window it already folded)."""
        compressor = self.compressor
        return (
            compressor is not None
            and bool(self.window.messages)
            and self.context_tokens > compressor.policy.trigger_tokens
            and self._cadence.due(self.window.tokens)
        )

    def _room(self, message: Message, pending: Sequence[Message]) -> RequestRoom | None:
        """The request's room under the budget; None without a compressor (no budget)."""
        if self.compressor is None:
            return None
        turn_tokens = sum(message_tokens(m, self.counter) for m in (message, *pending))
        fixed_tokens = self.estimate_window_tokens() - self.window.tokens
        return RequestRoom(self.compressor.policy, fixed_tokens, self.window.tokens, turn_tokens)

    def _request_over_budget(self, message: Message, pending: Sequence[Message]) -> bool:
        room = self._room(message, pending)
        return room is not None and room.over_budget

    def _tail_room(self, message: Message, pending: Sequence[Message]) -> int:
        """How much verbatim tail still fits beside the summary and this turn's messages."""
        room = self._room(message, pending)
        assert room is not None
        return room.tail_tokens

    async def _run_tools(
        self, reply: Message, message: Message, pending: Sequence[Message]
    ) -> tuple[Message, list[Message], list[Message | None]]:
        """Run the round `reply` asks for within the room the budget leaves it, ids unique
        in the conversation (ToolRegistry.run_round)."""
        largest = reply.with_tool_calls(reply.tool_calls[:MAX_TOOL_CALLS_KEPT_PER_ROUND])
        room = self._results_room(message, [*pending, largest])
        taken = self._call_ids_in_use(pending)
        return await self.tools.run_round(reply, room, taken, self.counter, context=self.key)

    def _call_ids_in_use(self, pending: Sequence[Message]) -> set[str]:
        """Tool-call ids of the window and this turn (DeepSeek refuses an id twice)."""
        return {c.id for m in (*self.window.messages, *pending) for c in m.tool_calls}

    def _room_for_a_round(self, message: Message, pending: Sequence[Message]) -> bool:
        """Whether another tool round still fits in the budget (the least one: a call and
        its answer, cut to its note); if not, the next call must answer instead."""
        room = self._results_room(message, pending)
        return room is None or room >= 2 * result_floor_tokens(self.counter)

    def _results_room(self, message: Message, pending: Sequence[Message]) -> int | None:
        """Tokens the next round's results may take (request_room.py); None: no budget."""
        room = self._room(message, pending)
        return None if room is None else room.results_tokens

    def _can_fold(self) -> bool:
        """Something beyond an existing summary is left to fold or truncate."""
        assert self.compressor is not None
        return bool(self.compressor.split_summary(self.window.messages)[1])

    async def _call_recovering(
        self, message: Message, pending: list[Message], progress: TurnProgress
    ) -> Completion:
        """`_call`; after a context-length error shrink the window (after a thinking model's
        "pass the reasoning back" error, fill in the old exchanges' reasoning) and send the
        request once more. One retry per request bounds a turn to two calls per tool round.
        An answer with neither text nor calls comes back as such, for the turn to ask
        again."""
        message, pending = self.notes.on_request(message, pending, progress)
        try:
            return await self._call(message, pending, progress)
        except ContextLengthError as exc:
            error = exc
        except LLMError as exc:
            if exc.kind == "empty":
                return Completion(Message("assistant", None), None, "stop")
            if not await self._fill_missing_reasoning(exc):
                raise
            return await self._call(message, pending, progress)
        if self.compressor is None or not self.window.messages:
            raise error
        compacted = await self._compact(reason="context length error", keep_recent_tokens=0)
        progress.add(compacted)
        if not compacted.changed:
            raise error  # the same request would fail the same way
        return await self._call(message, pending, progress)

    async def _fill_missing_reasoning(self, error: LLMError) -> bool:
        """After a thinking model refused a window whose tool exchanges lack their reasoning
        (stored before it was kept), give them a placeholder and store the window whole;
        whether there was anything to fill."""
        if not is_reasoning_missing_error(error):
            return False
        filled = with_reasoning_placeholders(self.window.messages)
        if filled is None:
            return False
        logger.warning(
            "%s: the model wants reasoning back for old tool exchanges; filled", self.key
        )
        self.window.replace(filled)
        await self._stored.store_whole()
        return True

    async def _call(
        self, message: Message, pending: list[Message], progress: TurnProgress
    ) -> Completion:
        mode = progress.mode
        told = turn_request(self.window, message, pending, progress, self.notes.results_framing)
        request = [self.system_message, *told]
        progress.last_asked = told[-1].text
        tools = None if mode is AnswerMode.NO_TOOLS else self.tools.specs_json()
        extra = {"tool_choice": "none"} if mode is AnswerMode.NO_TOOL_CHOICE and tools else None
        completion = await self.llm.complete(request, tools, context=self.key, extra=extra)
        if completion.usage is not None:
            self.context_tokens = completion.usage.prompt_tokens
        else:
            extra_tokens = sum(message_tokens(m, self.counter) for m in (message, *pending))
            self.context_tokens = self.estimate_window_tokens() + extra_tokens
        return completion

    def estimate_window_tokens(self) -> int:
        """Tokenizer estimate of a request holding the system prompt, tools and the window."""
        if self._fixed_tokens is None:
            tools = self.tools.specs_json()
            tools_tokens = self.counter.count(tools.decode()) if tools else 0
            self._fixed_tokens = message_tokens(self.system_message, self.counter) + tools_tokens
        return self._fixed_tokens + self.window.tokens
