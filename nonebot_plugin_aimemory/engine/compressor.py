"""Rolling compression of a conversation window into a summary plus a verbatim tail, with a
truncation fallback that always leaves a history the API accepts."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .errors import LLMError
from .hooks import PreCompactHooks
from .llm import Completion, LLMClient
from .messages import Message
from .summary_cap import CHARS_PER_CHUNK_TOKEN, cap_summary, details_kept
from .tokens import TokenCounter, message_tokens
from .transcript import chunk_lines, render_transcript
from .usage import Usage
from .window import first_user_index_at_or_after, truncate_oldest_half

logger = logging.getLogger("nonebot_plugin_aimemory")


@dataclass(frozen=True, slots=True)
class SummaryPrompts:
    """Every text the compressor sends or stores. The engine holds no wording of its own:
    the plugin passes these in (its prompts module), so they can be reviewed with the rest."""

    fold_system: str
    """System prompt of a fold; `{max_chars}` is the summary's length cap."""
    fold_request: str
    """The fold's user message; `{summary}` is the summary so far, `{chunk}` the transcript."""
    no_summary: str
    """Stands in for `{summary}` before the first fold."""
    shorten_system: str
    """System prompt asking for a shorter summary; `{max_chars}` is the cap."""
    shorten_request: str
    """The shortening call's user message; `{summary}` is the summary that is too long."""
    summary_prefix: str
    """Starts the stored summary message; a window is recognised as summarised by it, so
    it must never change (histories stored by older versions begin with it)."""
    summary_ack: str
    """The assistant's acknowledgement after the summary, so roles keep alternating."""
    assistant_label: str
    """Prefix of the assistant's lines in the folded transcript."""


@dataclass(frozen=True, slots=True)
class CompressionPolicy:
    """When to compress and how much to keep, all in tokens."""

    budget_tokens: int
    threshold: float = 0.8
    keep_recent_tokens: int = 0
    summary_max_tokens: int = 0
    chunk_tokens: int = 0
    landing: float = 0.625
    """Where a fold lands (system prompt, tools, summary and tail), as a share of the
    trigger: half the budget at the default threshold, so the next fold is far away."""
    fit_tail: bool = False
    """Keep less than `keep_recent_tokens` when the fold would land above `landing` (the
    default); an explicitly set tail is only ever cut to stay under the threshold."""

    @classmethod
    def for_budget(
        cls,
        budget_tokens: int,
        *,
        threshold: float = 0.8,
        keep_recent_tokens: int | None = None,
        summary_max_tokens: int | None = None,
        chunk_tokens: int | None = None,
    ) -> CompressionPolicy:
        """Defaults: keep up to a fifth of the budget verbatim (less when the system prompt
        and tools leave no room for it under half the budget), cap the summary at a tenth,
        fold in chunks of seven tenths."""
        return cls(
            budget_tokens=budget_tokens,
            threshold=threshold,
            keep_recent_tokens=keep_recent_tokens
            if keep_recent_tokens is not None
            else budget_tokens // 5,
            summary_max_tokens=summary_max_tokens or max(budget_tokens // 10, 64),
            # Large enough that one call folds what a threshold compression folds (~0.6).
            chunk_tokens=chunk_tokens or max(budget_tokens * 7 // 10, 256),
            fit_tail=keep_recent_tokens is None,
        )

    @property
    def trigger_tokens(self) -> float:
        """The window size, in tokens, at which compression starts."""
        return self.budget_tokens * self.threshold

    @property
    def landing_tokens(self) -> float:
        """The request size, in tokens, a fold aims to leave beside a small fixed prompt."""
        return self.trigger_tokens * self.landing

    def aim(self, head_tokens: float = 0) -> FoldAim:
        """Where a fold aims when the least it can leave is `head_tokens` (system prompt,
        tools, a summary at its cap): `landing_tokens`, or, when that leaves no room for a
        verbatim tail, halfway from the head to the trigger. Measured with a real 1.5B model
        at a 2 000-token budget (system prompt and tools 1 028): the plain landing point was
        below the fixed part, every fold fell short, kept no tail, and handed over to
        truncation, which drops what it cuts from the window and the summary alike. A head
        at the trigger leaves nothing reachable: the plain landing point, for truncation."""
        landing = self.landing_tokens
        if landing <= head_tokens < self.trigger_tokens:
            landing = (head_tokens + self.trigger_tokens) / 2
        return FoldAim(self.trigger_tokens, landing)


@dataclass(frozen=True, slots=True)
class FoldAim:
    """The request sizes, in tokens, at which a fold starts and where it aims to land."""

    trigger_tokens: float
    landing_tokens: float

    @property
    def refold_tokens(self) -> int:
        """Growth after a fold that fell short of the landing point before the next fold:
        the room a fold that lands there leaves below the threshold."""
        return int(self.trigger_tokens - self.landing_tokens)


@dataclass(slots=True)
class Compaction:
    """A compression's outcome: the new window and what it cost."""

    messages: list[Message]
    folded: list[Message]
    summary: str | None
    usage: Usage = field(default_factory=Usage)
    fell_back: bool = False


class FoldError(LLMError):
    """Folding failed part-way; `spent` is the usage of the calls that had already answered."""

    def __init__(self, cause: LLMError, spent: Usage) -> None:
        super().__init__(cause.kind, cause.detail, cause.status)
        self.spent = spent


def split_summary(
    messages: Sequence[Message], prompts: SummaryPrompts
) -> tuple[str | None, list[Message]]:
    """The summary at the head of a window (if any) and the messages after it."""
    prefix = prompts.summary_prefix
    if (
        len(messages) >= 2
        and messages[0].role == "user"
        and messages[0].text.startswith(prefix)
        and messages[1].role == "assistant"
        and not messages[1].tool_calls
    ):
        return messages[0].text[len(prefix) :].strip(), list(messages[2:])
    return None, list(messages)


def summary_messages(summary: str, prompts: SummaryPrompts) -> list[Message]:
    """The summary as a user message plus an acknowledgment, so roles keep alternating (a
    second system message is rejected by Qwen, Llama and Gemma chat templates)."""
    return [
        Message("user", f"{prompts.summary_prefix}\n{summary}"),
        Message("assistant", prompts.summary_ack),
    ]


def tail_start(messages: Sequence[Message], keep_tokens: int, counter: TokenCounter) -> int:
    """Where the verbatim tail begins: about `keep_tokens` from the end, at a user message."""
    kept = 0
    index = len(messages)
    while index > 0 and kept + message_tokens(messages[index - 1], counter) <= keep_tokens:
        index -= 1
        kept += message_tokens(messages[index], counter)
    return first_user_index_at_or_after(messages, index)


def fold_chunks(lines: Sequence[str], chunk_tokens: int, counter: TokenCounter) -> list[str]:
    """The transcript in chunks of at most `chunk_tokens`, one fold call each; a line too
    long for one chunk is cut in pieces."""
    return chunk_lines(
        lines,
        chunk_tokens,
        piece_chars=int(chunk_tokens * CHARS_PER_CHUNK_TOKEN),
        # A piece's tokens plus one for its line break.
        size=lambda piece: counter.count(piece) + 1,
        separator_size=0,
    )


class Compressor:
    """Folds the older part of a window into a rolling summary with a (cheaper) model."""

    def __init__(
        self,
        llm: LLMClient,
        counter: TokenCounter,
        policy: CompressionPolicy,
        hooks: PreCompactHooks | None = None,
        *,
        prompts: SummaryPrompts,
    ) -> None:
        self.llm = llm
        self.counter = counter
        self.policy = policy
        self.hooks = hooks
        self.prompts = prompts
        self._summary_frame_tokens: int | None = None

    def split_summary(self, window: Sequence[Message]) -> tuple[str | None, list[Message]]:
        """The summary at the head of `window` (if any) and the messages after it."""
        return split_summary(window, self.prompts)

    def _transcript(self, messages: Sequence[Message]) -> list[str]:
        return render_transcript(messages, assistant_label=self.prompts.assistant_label)

    def tail_tokens(self, fixed_tokens: int) -> int:
        """The verbatim tail a fold keeps beside `fixed_tokens` of system prompt and tools:
        `keep_recent_tokens`, less when the folded request (summary at its cap) would land
        above the policy's landing point, or, for a tail set explicitly, above the threshold."""
        policy = self.policy
        head = self._head_tokens(fixed_tokens)
        ceiling = policy.aim(head).landing_tokens if policy.fit_tail else policy.trigger_tokens
        return max(0, min(policy.keep_recent_tokens, int(ceiling) - head))

    def aim(self, fixed_tokens: int) -> FoldAim:
        """Where a fold beside `fixed_tokens` of system prompt and tools aims to land."""
        return self.policy.aim(self._head_tokens(fixed_tokens))

    def _head_tokens(self, fixed_tokens: int) -> int:
        """The least a fold leaves: the fixed part and a summary at its cap."""
        if self._summary_frame_tokens is None:
            frame = summary_messages("", self.prompts)
            self._summary_frame_tokens = sum(message_tokens(m, self.counter) for m in frame)
        return fixed_tokens + self.policy.summary_max_tokens + self._summary_frame_tokens

    async def compact(
        self,
        key: str,
        window: Sequence[Message],
        *,
        keep_recent_tokens: int | None = None,
        fixed_tokens: int = 0,
    ) -> Compaction | None:
        """Summarise all but the recent tail (`tail_tokens(fixed_tokens)` unless given); on
        any compressor failure, truncate instead. None when everything already fits in the
        tail (folding would gain nothing)."""
        previous, body = self.split_summary(window)
        keep = self.tail_tokens(fixed_tokens) if keep_recent_tokens is None else keep_recent_tokens
        start = tail_start(body, keep, self.counter)
        folded, tail = body[:start], body[start:]
        if not self._transcript(folded):
            return None
        await self._tell(key, folded)
        try:
            summary, usage = await self._fold(previous, folded, key)
        except FoldError as exc:
            logger.warning("compressor failed for %s (%s); truncating instead", key, exc)
            truncated = await self.drop_oldest_half(key, window, reason=exc.kind, told=start)
            # Earlier chunks were paid for even though their summary is thrown away.
            return replace(truncated, usage=exc.spent)
        return Compaction([*summary_messages(summary, self.prompts), *tail], folded, summary, usage)

    async def drop_oldest_half(
        self, key: str, window: Sequence[Message], *, reason: str, told: int = 0
    ) -> Compaction:
        """`truncate`, the PreCompact hooks told what it drops beyond the first `told`
        messages of the body (those a failed fold had announced)."""
        compaction = self.truncate(key, window, reason=reason)
        await self._tell(key, compaction.folded[told:])
        return compaction

    async def drop_to_tail(
        self, key: str, window: Sequence[Message], keep_tokens: int, *, reason: str
    ) -> Compaction:
        """`truncate_to_tail`, the PreCompact hooks told what it drops."""
        compaction = self.truncate_to_tail(key, window, keep_tokens, reason=reason)
        await self._tell(key, compaction.folded)
        return compaction

    async def _tell(self, key: str, leaving: Sequence[Message]) -> None:
        """Tell the PreCompact hooks which messages are about to leave the window, folded
        or dropped: a truncation loses them from the window all the same, and the facts
        said in them are what long-term memory must keep first."""
        if self.hooks is not None:
            await self.hooks.fire(key, leaving)

    def truncate(self, key: str, window: Sequence[Message], *, reason: str) -> Compaction:
        """Fallback: keep the summary (if any) and the newer half of the rest, cut at a user
        message; in the extreme nothing but the summary is left."""
        previous, body = self.split_summary(window)
        kept = truncate_oldest_half(body)
        head = summary_messages(previous, self.prompts) if previous else []
        logger.warning(
            "window of %s truncated (%s): %d of %d messages kept",
            key,
            reason,
            len(kept),
            len(body),
        )
        dropped = body[: len(body) - len(kept)]
        return Compaction([*head, *kept], dropped, previous, fell_back=True)

    def truncate_to_tail(
        self, key: str, window: Sequence[Message], keep_tokens: int, *, reason: str
    ) -> Compaction:
        """Fallback without a compressor call: make the cut a fold would make, but drop
        what is before it instead of folding it; the summary (if any) stays."""
        previous, body = self.split_summary(window)
        kept = body[tail_start(body, keep_tokens, self.counter) :]
        head = summary_messages(previous, self.prompts) if previous else []
        logger.info(
            "window of %s truncated to its last ~%d tokens (%s): %d of %d messages kept",
            key,
            keep_tokens,
            reason,
            len(kept),
            len(body),
        )
        dropped = body[: len(body) - len(kept)]
        return Compaction([*head, *kept], dropped, previous, fell_back=True)

    async def _fold(
        self, previous: str | None, folded: Sequence[Message], key: str
    ) -> tuple[str, Usage]:
        """Merge `folded` into `previous` chunk by chunk; raises FoldError with the usage
        spent so far when a call fails."""
        summary = previous or ""
        usage = Usage()
        chunks = fold_chunks(self._transcript(folded), self.policy.chunk_tokens, self.counter)
        try:
            for chunk in chunks:
                completion = await self._fold_chunk(summary, chunk, key)
                usage += completion.usage or Usage()
                text = completion.message.text.strip()
                if not text:
                    raise LLMError("empty", "compressor returned no summary")
                summary, shorten_usage = await self._within_cap(text, key)
                usage += shorten_usage
        except LLMError as exc:
            raise FoldError(exc, usage) from exc
        return summary, usage

    async def _fold_chunk(self, summary: str, chunk: str, key: str) -> Completion:
        """One compressor call merging `chunk` into the summary so far."""
        max_chars = int(self.policy.summary_max_tokens * CHARS_PER_CHUNK_TOKEN)
        prompts = self.prompts
        system = Message("system", prompts.fold_system.format(max_chars=max_chars))
        request = Message(
            "user", prompts.fold_request.format(summary=summary or prompts.no_summary, chunk=chunk)
        )
        return await self.llm.complete([system, request], context=f"compress {key}")

    async def _within_cap(self, summary: str, key: str) -> tuple[str, Usage]:
        """Ask once for a shorter summary when it is over the cap; cut only what still is."""
        cap = self.policy.summary_max_tokens
        usage = Usage()
        if self.counter.count(summary) <= cap:
            return summary, usage
        max_chars = int(cap * CHARS_PER_CHUNK_TOKEN)
        try:
            completion = await self.llm.complete(
                [
                    Message("system", self.prompts.shorten_system.format(max_chars=max_chars)),
                    Message("user", self.prompts.shorten_request.format(summary=summary)),
                ],
                context=f"shorten summary {key}",
            )
            usage += completion.usage or Usage()
            shorter = completion.message.text.strip()
        except LLMError as exc:
            logger.info("shortening the summary of %s failed: %s", key, exc)
            shorter = ""
        return self._keeping_details(summary, shorter, key), usage

    def _keeping_details(self, summary: str, shorter: str, key: str) -> str:
        """The model's shorter summary, cut to the cap if still over it, unless a hard cut
        of the long one keeps more of its details (a model may shorten by dropping them)."""
        cap = self.policy.summary_max_tokens
        hard_cut = cap_summary(summary, cap, self.counter)
        if not shorter:
            return hard_cut
        tokens = self.counter.count(shorter)
        if tokens > cap:
            logger.warning(
                "summary of %s still %d tokens after shortening; cutting it to %d", key, tokens, cap
            )
            shorter = cap_summary(shorter, cap, self.counter)
        if details_kept(summary, hard_cut) > details_kept(summary, shorter):
            logger.info("the shortened summary of %s lost details; cutting the long one", key)
            return hard_cut
        return shorter
