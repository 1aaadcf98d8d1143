"""Before the window is folded, ask the compressor model for durable facts in the folded
messages and save them as memories, in the background, never delaying a reply."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from ..engine.compressor import render_transcript
from ..engine.llm import LLMClient, LLMError
from ..engine.messages import Message
from ..text.model_json import parse_json_object
from .service import MemoryService

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_TRANSCRIPT_CHARS = 12_000  # one extraction request
MAX_CHUNKS = 4  # per fold; beyond that only the newest messages are examined
MAX_FACTS = 10  # per extraction request
EXTRACT_PROMPT = """你负责从即将被压缩的聊天记录里提取值得长期记住的事实。
只提取长期有效的信息：某人的偏好、称呼、个人情况、约定、计划、重要事件和决定。
不要提取：寒暄、一次性的问题、临时情绪、未确认的猜测、证件号/银行卡号/密码等敏感信息。
每条事实必须脱离对话也能看懂：写清主语（昵称和 QQ 号）和具体内容。
只输出一个 JSON 对象，不要输出其他文字：
{"facts":[{"content":"小明(12345)吃素","tags":["饮食"],"user_id":"12345"}]}
没有值得记住的内容时输出 {"facts":[]}。"""


class FactExtractor:
    """A PreCompact listener; saving goes through the memory rules like any other write."""

    def __init__(self, llm: LLMClient, memory: MemoryService) -> None:
        self.llm = llm
        self.memory = memory
        self._tasks: set[asyncio.Task[int]] = set()

    async def on_pre_compact(self, key: str, messages: Sequence[Message]) -> None:
        """Start extraction and return at once: compression does not wait for it."""
        task = asyncio.ensure_future(self.extract_and_save(key, messages))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def extract_and_save(self, scope: str, messages: Sequence[Message]) -> int:
        """Returns how many new memories were saved. A long fold is examined in chunks of
        at most `MAX_TRANSCRIPT_CHARS`, oldest first, one extraction request each."""
        chunks = transcript_chunks(render_transcript(messages))
        saved = 0
        for index, chunk in enumerate(chunks, 1):
            saved += await self._extract_chunk(scope, chunk, f"{index}/{len(chunks)}")
        logger.info("saved %d memories from messages folded in %s", saved, scope)
        return saved

    async def _extract_chunk(self, scope: str, transcript: str, part: str) -> int:
        """Ask for the facts of one chunk and save them; returns how many were new."""
        try:
            completion = await self.llm.complete(
                [Message("system", EXTRACT_PROMPT), Message("user", transcript)],
                context=f"extract {scope} {part}",
            )
        except LLMError as exc:
            # The other chunks may still get through: a timeout is often about one request.
            logger.info(
                "fact extraction (%s) before compression failed for %s: %s", part, scope, exc
            )
            return 0
        saved = 0
        for fact in parse_facts(completion.message.text)[:MAX_FACTS]:
            outcome = await self.memory.save(
                scope,
                fact["content"],
                tags=fact.get("tags"),
                user_id=fact.get("user_id"),
                source="extract",
            )
            saved += outcome.status == "saved"
        return saved

    async def drain(self) -> None:
        """Wait for extractions still running (used at shutdown)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def transcript_chunks(lines: Sequence[str]) -> list[str]:
    """The transcript cut at line ends into chunks of at most `MAX_TRANSCRIPT_CHARS` (a
    longer line is cut in pieces), oldest first; at most `MAX_CHUNKS`, the newest kept."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        pieces = [
            line[i : i + MAX_TRANSCRIPT_CHARS] for i in range(0, len(line), MAX_TRANSCRIPT_CHARS)
        ]
        for piece in pieces:
            if current and size + 1 + len(piece) > MAX_TRANSCRIPT_CHARS:
                chunks.append("\n".join(current))
                current, size = [], 0
            size += len(piece) + (1 if current else 0)
            current.append(piece)
    if current:
        chunks.append("\n".join(current))
    return [chunk for chunk in chunks if chunk.strip()][-MAX_CHUNKS:]


def parse_facts(text: str) -> list[dict]:
    """The valid facts of the model's JSON answer; anything malformed is skipped."""
    data = parse_json_object(text)
    facts = data.get("facts") if data else None
    if not isinstance(facts, list):
        return []
    valid = []
    for fact in facts:
        if (
            isinstance(fact, dict)
            and isinstance(fact.get("content"), str)
            and fact["content"].strip()
        ):
            tags = fact.get("tags")
            user_id = fact.get("user_id")
            valid.append(
                {
                    "content": fact["content"],
                    "tags": tags if isinstance(tags, list) else None,
                    "user_id": str(user_id)
                    if isinstance(user_id, str | int) and str(user_id)
                    else None,
                }
            )
    return valid
