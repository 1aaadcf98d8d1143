"""Rolling compression of a conversation window into a summary plus a verbatim tail, with a
truncation fallback that always leaves a history the API accepts."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from .hooks import PreCompactHooks
from .llm import LLMClient, LLMError, Usage
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
        """Defaults: keep a fifth of the budget verbatim, cap the summary at a tenth."""
        return cls(
            budget_tokens=budget_tokens,
            threshold=threshold,
            keep_recent_tokens=keep_recent_tokens
            if keep_recent_tokens is not None
            else budget_tokens // 5,
            summary_max_tokens=summary_max_tokens or max(budget_tokens // 10, 64),
            chunk_tokens=chunk_tokens or max(budget_tokens // 2, 256),
        )

    @property
    def trigger_tokens(self) -> float:
        return self.budget_tokens * self.threshold


@dataclass(slots=True)
class Compaction:
    """A compression's outcome: the new window and what it cost."""

    messages: list[Message]
    folded: list[Message]
    summary: str | None
    usage: Usage = field(default_factory=Usage)
    fell_back: bool = False


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
    """Keep whole lines of `summary` up to `max_tokens` (the model was asked to stay under)."""
    if counter.count(summary) <= max_tokens:
        return summary
    kept: list[str] = []
    used = 0
    for line in summary.splitlines():
        cost = counter.count(line) + 1
        if used + cost > max_tokens:
            break
        kept.append(line)
        used += cost
    if not kept:
        return summary[: max(int(max_tokens * CHARS_PER_CHUNK_TOKEN), 1)]
    return "\n".join(kept)


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
        except LLMError as exc:
            logger.warning("compressor failed for %s (%s); truncating instead", key, exc)
            return self.truncate(key, window, reason=exc.kind)
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
        summary = previous or ""
        usage = Usage()
        max_chars = int(self.policy.summary_max_tokens * CHARS_PER_CHUNK_TOKEN)
        system = Message("system", COMPRESSOR_PROMPT.format(max_chars=max_chars))
        chunks = chunk_lines(render_transcript(folded), self.policy.chunk_tokens, self.counter)
        for chunk in chunks:
            request = Message(
                "user", f"已有摘要：\n{summary or '（无）'}\n\n需要合并的对话：\n{chunk}"
            )
            completion = await self.llm.complete([system, request], context=f"compress {key}")
            usage += completion.usage or Usage()
            text = completion.message.text.strip()
            if not text:
                raise LLMError("empty", "compressor returned no summary")
            summary = cap_summary(text, self.policy.summary_max_tokens, self.counter)
        return summary, usage
