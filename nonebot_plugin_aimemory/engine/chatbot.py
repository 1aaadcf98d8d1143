"""One conversation's turn loop: window + new message → (compress) → LLM → tools → reply →
store, committed before the reply is handed back to be sent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .cadence import FoldCadence
from .compressor import Compaction, Compressor
from .errors import ContextLengthError, LLMError, is_reasoning_missing_error
from .history import CompressionStats, HistoryStore, StoreError
from .llm import Completion, LLMClient, Usage
from .messages import Message, tool_result
from .tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter, message_tokens
from .tools import (
    MAX_TOOL_CALLS_KEPT_PER_ROUND,
    ToolRegistry,
    ToolRound,
    fit_round_results,
    result_floor_tokens,
)
from .window import Window, with_reasoning_placeholders

logger = logging.getLogger("nonebot_plugin_aimemory")

# The results of one tool round take at most this share of the budget: with the verbatim
# tail (a fifth) and the summary (a tenth) a round still leaves room for the next one.
TOOL_RESULTS_BUDGET_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What a turn produced: the reply, usage over all calls (compression included), tool
    rounds used and how often the window was compressed (or, that failing, truncated)."""

    reply: str
    usage: Usage
    tool_rounds: int
    compressions: int = 0


@dataclass(frozen=True, slots=True)
class Compacted:
    """What one compaction did: the compressor's usage and whether the window changed."""

    usage: Usage = field(default_factory=Usage)
    changed: bool = False


@dataclass(slots=True)
class _TurnSpend:
    """Usage and window-changing compactions of the turn so far."""

    usage: Usage = field(default_factory=Usage)
    compressions: int = 0

    def add(self, compacted: Compacted) -> None:
        self.usage += compacted.usage
        self.compressions += compacted.changed


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
        self.window = Window(counter)
        self.system_message = Message("system", system_prompt)
        # Prompt size of the last request, from the API's usage (or estimated without one).
        self.context_tokens = 0
        self.stats = CompressionStats()
        self._fixed_tokens: int | None = None
        self._cadence = FoldCadence()
        # A store write failed or was cut off (disk full, file locked, cancelled): the stored
        # window may miss messages, so the next write stores the whole window instead of
        # appending after a gap.
        self._store_behind = False

    @property
    def summary(self) -> str | None:
        """The running summary at the head of the window, if compression made one (the
        compressor's prompts are what recognise it, so none without a compressor)."""
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
        """Keep a user message without answering it (at shutdown); the next turn's request
        carries it, like a message whose answer failed."""
        await self._keep([message.with_image_markers()])

    async def clear(self) -> None:
        """Forget the conversation, in memory and in the store; raises StoreError when the
        store could not forget it (its next write then stores the window whole)."""
        self.forget()
        try:
            await self.store.clear(self.key)
        except asyncio.CancelledError:
            self._store_behind = True
            raise
        except Exception as exc:
            self._store_behind = True
            raise StoreError(f"could not clear the stored window of {self.key}") from exc
        self._store_behind = False

    def forget(self) -> None:
        """Forget the conversation in memory only (the caller clears the store)."""
        self.window.clear()
        self.context_tokens = 0
        self.stats = CompressionStats()

    async def turn(self, message: Message, *, persist_user_text: str | None = None) -> TurnResult:
        """Answer `message`; the turn's messages are committed to the store before this
        returns, so the reply may be sent. `persist_user_text`, when given, is what the window
        keeps of it instead of its per-turn injections. Raises LLMError when no answer can be
        had, StoreError when the answer could not be stored; after a transient failure (a
        store's too) and on cancellation the user's message and finished tool rounds are
        kept, after any other only what the provider had accepted (`_kept_after`)."""
        kept_user = message if persist_user_text is None else message.with_text(persist_user_text)
        kept_user = kept_user.with_image_markers()
        if not self.send_images:
            message = message.with_image_markers()
        pending: list[Message] = []
        spend = _TurnSpend()
        rounds = 0
        # How much of `pending` the last accepted request carried (None: none was accepted).
        accepted: int | None = None
        kept: list[Message] | None = None
        answered = False
        try:
            if self._over_threshold():
                spend.add(await self._compact(reason="threshold"))
            while True:
                if self._request_over_budget(message, pending) and self._can_fold():
                    spend.add(
                        await self._compact(
                            reason="request over budget",
                            keep_recent_tokens=self._tail_room(message, pending),
                        )
                    )
                force_answer = rounds >= self.max_tool_rounds or not self._room_for_a_round(
                    message, pending
                )
                completion = await self._call_recovering(message, pending, force_answer, spend)
                accepted = len(pending)
                spend.usage += completion.usage or Usage()
                reply = completion.message
                if reply.tool_calls and not force_answer:
                    rounds += 1
                    reply, results = await self._run_tools(reply, message, pending)
                    pending += [reply, *results]
                    continue
                if not reply.text:
                    raise LLMError("empty", f"only tool calls after {rounds} rounds ({self.key})")
                # Thinking models need the reasoning of an exchange that made tool calls in
                # every later request (DeepSeek answers 400 without it); any other
                # exchange's reasoning they ignore, so keeping it would only cost tokens.
                reasoning = reply.reasoning if rounds else None
                pending.append(Message("assistant", reply.text, reasoning=reasoning))
                answered = True
                await self._store_answered([kept_user, *pending])
                return TurnResult(reply.text, spend.usage, rounds, spend.compressions)
        except LLMError as exc:
            kept = _kept_after(exc, kept_user, pending, accepted)
            raise
        finally:
            # On failure and cancellation alike (an answer was stored above): pending only
            # ever holds whole tool rounds, so what is kept is always a valid history.
            if not answered:
                kept = [kept_user, *pending] if kept is None else kept
                if kept:
                    await self._keep(kept)

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
            compaction = self.compressor.truncate_to_tail(
                self.key, before, keep, reason=f"{reason}; the last fold fell short"
            )
        if compaction is None:
            if keep_recent_tokens != 0:
                return Compacted()
            # Even the whole window has nothing to fold: the only way down is truncation.
            compaction = self.compressor.truncate(self.key, before, reason="nothing to fold")
        if compaction.messages == before:
            logger.info("compressing %s (%s) left the window as it was", self.key, reason)
            return Compacted(compaction.usage)
        self._apply(compaction)
        self._note_cadence(compaction, before_tokens)
        compressed_at = None if compaction.fell_back else datetime.now(timezone.utc)
        if compressed_at is not None:
            self.stats = CompressionStats(self.stats.count + 1, compressed_at)
        await self._store_window(compressed_at=compressed_at)
        return Compacted(compaction.usage, changed=True)

    def _apply(self, compaction: Compaction) -> None:
        self.window.replace(compaction.messages)
        # After a fallback the size is unknown: 0 makes the next turn re-check and converge.
        self.context_tokens = 0 if compaction.fell_back else self.estimate_window_tokens()

    def _note_cadence(self, compaction: Compaction, before_tokens: int) -> None:
        """Tell the cadence what a compaction did; warn when a fold falls short of its
        landing point, since truncation then keeps the window down until it regrew."""
        assert self.compressor is not None
        if compaction.fell_back:
            self._cadence.after_truncation(before_tokens, self.window.tokens)
            return
        policy = self.compressor.policy
        request_tokens = self.estimate_window_tokens()
        self._cadence.after_fold(self.window.tokens, request_tokens, policy)
        if self._cadence.fell_short:
            logger.warning(
                "%s: ~%d tokens after folding, above the %d a fold aims for (threshold %d; "
                "system prompt and tools take %d): truncating instead of folding until the "
                "window grew by %d tokens",
                self.key,
                request_tokens,
                policy.landing_tokens,
                policy.trigger_tokens,
                request_tokens - self.window.tokens,
                self._cadence.regrow_tokens,
            )

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

    def _request_over_budget(self, message: Message, pending: Sequence[Message]) -> bool:
        if self.compressor is None:
            return False
        extra = sum(message_tokens(m, self.counter) for m in (message, *pending))
        return self.estimate_window_tokens() + extra > self.compressor.policy.budget_tokens

    def _tail_room(self, message: Message, pending: Sequence[Message]) -> int:
        """How much verbatim tail still fits beside the summary and this turn's messages."""
        assert self.compressor is not None
        policy = self.compressor.policy
        extra = sum(message_tokens(m, self.counter) for m in (message, *pending))
        fixed = self.estimate_window_tokens() - self.window.tokens
        room = policy.budget_tokens - fixed - extra - policy.summary_max_tokens
        return max(0, min(policy.keep_recent_tokens, room))

    async def _run_tools(
        self, reply: Message, message: Message, pending: Sequence[Message]
    ) -> tuple[Message, list[Message]]:
        """Run the round `reply` asks for; returns the reply as the history keeps it (ids
        unique, calls bounded by the limit and by the answers the budget holds) and one
        result per call, all within the round's room."""
        largest = reply.with_tool_calls(reply.tool_calls[:MAX_TOOL_CALLS_KEPT_PER_ROUND])
        room = self._results_room(message, [*pending, largest])
        capacity = None if room is None else room // result_floor_tokens(self.counter)
        taken = self._call_ids_in_use(pending)
        tool_round = ToolRound.of(reply.tool_calls, taken, capacity=capacity)
        if len(tool_round.run) < tool_round.requested:
            logger.warning(
                "%s: the model made %d tool calls in one round; %d run, %d refused, %d dropped",
                self.key,
                tool_round.requested,
                len(tool_round.run),
                len(tool_round.refused),
                tool_round.dropped,
            )
        reply = reply.with_tool_calls(tool_round.calls)
        texts = await self.tools.execute_round(tool_round, context=self.key)
        if room is not None:
            framing = len(texts) * MESSAGE_OVERHEAD_TOKENS
            texts = fit_round_results(texts, room - framing, self.counter)
        results = [tool_result(c, t) for c, t in zip(tool_round.calls, texts, strict=True)]
        return reply, results

    def _call_ids_in_use(self, pending: Sequence[Message]) -> set[str]:
        """Tool-call ids of the window and this turn: DeepSeek refuses a request in which
        one id appears twice, even in different rounds."""
        return {c.id for m in (*self.window.messages, *pending) for c in m.tool_calls}

    def _room_for_a_round(self, message: Message, pending: Sequence[Message]) -> bool:
        """Whether another tool round still fits in the budget (the least one: a call and
        its answer, cut to its note); if not, the next call must answer instead."""
        room = self._results_room(message, pending)
        return room is None or room >= 2 * result_floor_tokens(self.counter)

    def _results_room(self, message: Message, pending: Sequence[Message]) -> int | None:
        """Tokens the results of the next round may take, framing included: the round's
        share of the budget, less when the request would go over the budget even with the
        window folded into its summary. None without a compressor (no budget)."""
        if self.compressor is None:
            return None
        policy = self.compressor.policy
        extra = sum(message_tokens(m, self.counter) for m in (message, *pending))
        fixed = self.estimate_window_tokens() - self.window.tokens
        window = min(self.window.tokens, policy.summary_max_tokens)
        share = int(policy.budget_tokens * TOOL_RESULTS_BUDGET_SHARE)
        return max(0, min(share, policy.budget_tokens - fixed - window - extra))

    def _can_fold(self) -> bool:
        """Something beyond an existing summary is left to fold or truncate."""
        assert self.compressor is not None
        return bool(self.compressor.split_summary(self.window.messages)[1])

    async def _call_recovering(
        self, message: Message, pending: list[Message], force_answer: bool, spend: _TurnSpend
    ) -> Completion:
        """`_call`; after a context-length error shrink the window (after a thinking model's
        "pass the reasoning back" error, fill in the old exchanges' reasoning) and send the
        request once more. One retry per request bounds a turn to two calls per tool round."""
        try:
            return await self._call(message, pending, force_answer)
        except ContextLengthError as exc:
            error = exc
        except LLMError as exc:
            if not await self._fill_missing_reasoning(exc):
                raise
            return await self._call(message, pending, force_answer)
        if self.compressor is None or not self.window.messages:
            raise error
        compacted = await self._compact(reason="context length error", keep_recent_tokens=0)
        spend.add(compacted)
        if not compacted.changed:
            raise error  # the same request would fail the same way
        return await self._call(message, pending, force_answer)

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
        await self._store_window()
        return True

    async def _call(
        self, message: Message, pending: list[Message], force_answer: bool
    ) -> Completion:
        request = [self.system_message, *self.window.api_safe_with([message, *pending])]
        extra = {"tool_choice": "none"} if force_answer and self.tools.names else None
        completion = await self.llm.complete(
            request, self.tools.specs_json(), context=self.key, extra=extra
        )
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

    async def _store_answered(self, messages: list[Message]) -> None:
        """Commit an answered turn, then take it into the window. When the store fails the
        turn fails as after a transient failure: nothing of it was stored (the transaction
        rolled back), the window keeps the user's message and finished tool rounds but not
        the answer nobody will see, and the next write stores the window whole."""
        failure = await self._commit(messages)
        if failure is not None:
            self._hold_unstored(messages[:-1])
            raise StoreError(
                f"could not store the turn, so its reply is not sent: {failure!r}"
            ) from failure

    async def _keep(self, messages: list[Message]) -> None:
        """Commit what a failed, stopped or unanswered turn keeps; when the store fails the
        window keeps it anyway (logged), and the next write stores the window whole."""
        failure = await self._commit(messages)
        if failure is not None:
            self._hold_unstored(messages)
            logger.error(
                "history write failed for %s; kept in memory, stored with the next turn: %r",
                self.key,
                failure,
            )

    async def _commit(self, messages: list[Message]) -> Exception | None:
        """Store `messages` after the window (with the whole window, when the store is
        behind), then extend the window with them; or return the store's failure, the
        window left as it was. Cancelled while the write runs (it runs on to its end), the
        window takes them: whether they were committed or not, the next write stores the
        window whole."""
        try:
            if self._store_behind:
                await self.store.replace(self.key, [*self.window.messages, *messages])
            else:
                await self.store.append(self.key, messages)
        except asyncio.CancelledError:
            self._hold_unstored(messages)
            raise
        except Exception as exc:
            return exc
        self._store_behind = False
        self.window.extend(messages)
        return None

    def _hold_unstored(self, messages: list[Message]) -> None:
        """Keep in the window messages the store may not hold."""
        self.window.extend(messages)
        self._store_behind = True

    async def _store_window(self, *, compressed_at: datetime | None = None) -> None:
        """Store the window whole after it was rewritten in memory (a compaction, filled-in
        reasoning). A failure is logged and leaves the store behind: the turn's own commit
        then stores the window whole, or fails the turn."""
        try:
            await self.store.replace(self.key, self.window.messages, compressed_at=compressed_at)
        except asyncio.CancelledError:
            self._store_behind = True
            raise
        except Exception as exc:
            self._store_behind = True
            logger.error(
                "history write failed for %s; kept in memory, stored with the next turn: %r",
                self.key,
                exc,
            )
            return
        self._store_behind = False


def _kept_after(
    error: LLMError, user: Message, pending: list[Message], accepted: int | None
) -> list[Message] | None:
    """What a failed turn keeps of its messages; None keeps them all. A transient failure
    keeps them all, to be answered with the next message (so does a context-length error,
    which compression deals with). Any other failure, a content refusal above all, would
    repeat on the same messages: what the failed request added is dropped (the user's
    message on the first call, the newest tool round after that) and what the provider had
    already accepted is kept: the user's message with the tool rounds before the newest."""
    if error.transient or isinstance(error, ContextLengthError):
        return None
    if accepted is None:
        return []
    return [user, *pending[:accepted]]
