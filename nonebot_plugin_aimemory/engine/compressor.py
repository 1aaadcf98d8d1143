"""Rolling compression of a conversation window into a summary plus a verbatim tail, with a
truncation fallback that always leaves a history the API accepts."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .hooks import PreCompactHooks
from .llm import Completion, LLMClient, LLMError, Usage
from .messages import Message
from .tokens import TokenCounter, message_tokens
from .window import first_user_index_at_or_after, truncate_oldest_half

logger = logging.getLogger("nonebot_plugin_aimemory")

SUMMARY_PREFIX = "以下是之前的对话摘要："
SUMMARY_ACK = "好的，我已了解之前的对话内容，会在接下来的对话中参考。"
# Characters of transcript per token of chunk budget: CJK runs ~0.8 chars/token, so stay under.
CHARS_PER_CHUNK_TOKEN = 0.7
COMPRESSOR_PROMPT = """你是对话压缩器。请把“需要合并的对话”与“已有摘要”合并成一份新的摘要，供同一个 AI 助手在之后的对话中参考。

必须保留：
- 关键事实、人名/昵称与 QQ 号；群聊里谁说了什么
- 用户的意图和偏好
- 已做出的决定和得出的结论
- 尚未解决的问题、做出的承诺和约定
必须删除：工具调用的细节、寒暄客套、中间推理过程。
已有摘要里的内容除非被新对话明确推翻，否则必须保留在新摘要里。

只输出摘要本身，用简短的条目，分成三节，格式如下：
事实：
- …
决定：
- …
待办与未决：
- …
总长度不超过 {max_chars} 字。"""


SHORTEN_PROMPT = """你是对话压缩器。下面这份对话摘要太长了，请把它压缩到不超过 {max_chars} 字。
合并重复或相近的条目，删去次要细节；人名/昵称与 QQ 号、偏好、决定、约定和承诺必须保留。
保持原来的三节格式（事实 / 决定 / 待办与未决），只输出摘要本身。"""


@dataclass(frozen=True, slots=True)
class CompressionPolicy:
    """When to compress and how much to keep, all in tokens."""

    budget_tokens: int
    threshold: float = 0.8
    keep_recent_tokens: int = 0
    summary_max_tokens: int = 0
    chunk_tokens: int = 0

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
        """Defaults: keep a fifth of the budget verbatim, cap the summary at a tenth, fold in
        chunks of seven tenths."""
        return cls(
            budget_tokens=budget_tokens,
            threshold=threshold,
            keep_recent_tokens=keep_recent_tokens
            if keep_recent_tokens is not None
            else budget_tokens // 5,
            summary_max_tokens=summary_max_tokens or max(budget_tokens // 10, 64),
            # Large enough that one call folds what a threshold compression folds (~0.6).
            chunk_tokens=chunk_tokens or max(budget_tokens * 7 // 10, 256),
        )

    @property
    def trigger_tokens(self) -> float:
        """The window size, in tokens, at which compression starts."""
        return self.budget_tokens * self.threshold


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


def split_summary(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """The summary at the head of a window (if any) and the messages after it."""
    if (
        len(messages) >= 2
        and messages[0].role == "user"
        and messages[0].text.startswith(SUMMARY_PREFIX)
        and messages[1].role == "assistant"
        and not messages[1].tool_calls
    ):
        return messages[0].text[len(SUMMARY_PREFIX) :].strip(), list(messages[2:])
    return None, list(messages)


def summary_messages(summary: str) -> list[Message]:
    """The summary as a user message plus an acknowledgment, so roles keep alternating (a
    second system message is rejected by Qwen, Llama and Gemma chat templates)."""
    return [Message("user", f"{SUMMARY_PREFIX}\n{summary}"), Message("assistant", SUMMARY_ACK)]


def tail_start(messages: Sequence[Message], keep_tokens: int, counter: TokenCounter) -> int:
    """Where the verbatim tail begins: about `keep_tokens` from the end, at a user message."""
    kept = 0
    index = len(messages)
    while index > 0 and kept + message_tokens(messages[index - 1], counter) <= keep_tokens:
        index -= 1
        kept += message_tokens(messages[index], counter)
    return first_user_index_at_or_after(messages, index)


def render_transcript(messages: Sequence[Message]) -> list[str]:
    """The folded messages as plain lines; tool calls and their results are left out."""
    lines: list[str] = []
    for message in messages:
        text = message.text.strip()
        if not text or message.role in ("tool", "system"):
            continue
        lines.append(text if message.role == "user" else f"助手：{text}")
    return lines


def chunk_lines(lines: Sequence[str], chunk_tokens: int, counter: TokenCounter) -> list[str]:
    """Group lines into chunks of at most `chunk_tokens`; an oversized line is cut in pieces."""
    piece_chars = max(int(chunk_tokens * CHARS_PER_CHUNK_TOKEN), 1)
    chunks: list[str] = []
    current: list[str] = []
    current_tokens = 0
    for line in lines:
        pieces = [line[i : i + piece_chars] for i in range(0, len(line), piece_chars)] or [""]
        for piece in pieces:
            tokens = counter.count(piece) + 1
            if current and current_tokens + tokens > chunk_tokens:
                chunks.append("\n".join(current))
                current, current_tokens = [], 0
            current.append(piece)
            current_tokens += tokens
    if current:
        chunks.append("\n".join(current))
    return chunks


def cap_summary(summary: str, max_tokens: int, counter: TokenCounter) -> str:
    """Hard-cut `summary` to `max_tokens`, the last resort after asking the model to shorten
    it: section headers stay, and the oldest items of the longest section go first."""
    if counter.count(summary) <= max_tokens:
        return summary
    lines = summary.splitlines()
    costs = [counter.count(line) + 1 for line in lines]
    headers = {i for i, line in enumerate(lines) if _is_section_header(line)}
    sections: list[list[int]] = [[]]
    for index in range(len(lines)):
        if index in headers:
            sections.append([])
        else:
            sections[-1].append(index)
    total = sum(costs)
    dropped: set[int] = set()
    while total > max_tokens:
        longest = max(sections, key=len)
        if not longest:
            break
        index = longest.pop(0)
        dropped.add(index)
        total -= costs[index]
    kept = "\n".join(line for i, line in enumerate(lines) if i not in dropped)
    if counter.count(kept) > max_tokens:  # headers alone, or one enormous line
        kept = kept[: max(int(max_tokens * CHARS_PER_CHUNK_TOKEN), 1)]
    return kept


def _is_section_header(line: str) -> bool:
    stripped = line.strip()
    return (
        bool(stripped)
        and stripped.endswith(("：", ":"))
        and not stripped.startswith(("-", "•", "*"))
    )


class Compressor:
    """Folds the older part of a window into a rolling summary with a (cheaper) model."""

    def __init__(
        self,
        llm: LLMClient,
        counter: TokenCounter,
        policy: CompressionPolicy,
        hooks: PreCompactHooks | None = None,
    ) -> None:
        self.llm = llm
        self.counter = counter
        self.policy = policy
        self.hooks = hooks

    async def compact(
        self, key: str, window: Sequence[Message], *, keep_recent_tokens: int | None = None
    ) -> Compaction | None:
        """Summarise all but the recent tail; on any compressor failure, truncate instead.
        None when everything already fits in the tail (folding would gain nothing)."""
        previous, body = split_summary(window)
        keep = self.policy.keep_recent_tokens if keep_recent_tokens is None else keep_recent_tokens
        start = tail_start(body, keep, self.counter)
        folded, tail = body[:start], body[start:]
        if not render_transcript(folded):
            return None
        if self.hooks is not None:
            await self.hooks.fire(key, folded)
        try:
            summary, usage = await self._fold(previous, folded, key)
        except FoldError as exc:
            logger.warning("compressor failed for %s (%s); truncating instead", key, exc)
            # Earlier chunks were paid for even though their summary is thrown away.
            return replace(self.truncate(key, window, reason=exc.kind), usage=exc.spent)
        return Compaction([*summary_messages(summary), *tail], folded, summary, usage)

    def truncate(self, key: str, window: Sequence[Message], *, reason: str) -> Compaction:
        """Fallback: keep the summary (if any) and the newer half of the rest, cut at a user
        message; in the extreme nothing but the summary is left."""
        previous, body = split_summary(window)
        kept = truncate_oldest_half(body)
        head = summary_messages(previous) if previous else []
        logger.warning(
            "window of %s truncated (%s): %d of %d messages kept",
            key,
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
        chunks = chunk_lines(render_transcript(folded), self.policy.chunk_tokens, self.counter)
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
        system = Message("system", COMPRESSOR_PROMPT.format(max_chars=max_chars))
        request = Message("user", f"已有摘要：\n{summary or '（无）'}\n\n需要合并的对话：\n{chunk}")
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
                    Message("system", SHORTEN_PROMPT.format(max_chars=max_chars)),
                    Message("user", f"需要缩短的摘要：\n{summary}"),
                ],
                context=f"shorten summary {key}",
            )
            usage += completion.usage or Usage()
            shorter = completion.message.text.strip()
            if shorter:
                summary = shorter
        except LLMError as exc:
            logger.info("shortening the summary of %s failed: %s", key, exc)
        tokens = self.counter.count(summary)
        if tokens > cap:
            logger.warning(
                "summary of %s still %d tokens after shortening; cutting it to %d", key, tokens, cap
            )
            summary = cap_summary(summary, cap, self.counter)
        return summary, usage
