"""Before the window is folded, ask the compressor model for durable facts in the folded
messages and save them as memories, in the background, never delaying a reply."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from .engine.compressor import render_transcript
from .engine.llm import LLMClient, LLMError
from .engine.messages import Message
from .memory import MemoryService
from .model_json import parse_json_object

logger = logging.getLogger("nonebot_plugin_aimemory")

MAX_TRANSCRIPT_CHARS = 12_000
MAX_FACTS = 10
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
        """Returns how many new memories were saved."""
        transcript = "\n".join(render_transcript(messages))[-MAX_TRANSCRIPT_CHARS:]
        if not transcript.strip():
            return 0
        try:
            completion = await self.llm.complete(
                [Message("system", EXTRACT_PROMPT), Message("user", transcript)],
                context=f"extract {scope}",
            )
        except LLMError as exc:
            logger.info("fact extraction before compression failed for %s: %s", scope, exc)
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
        logger.info("saved %d memories from messages folded in %s", saved, scope)
        return saved

    async def drain(self) -> None:
        """Wait for extractions still running (used at shutdown)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


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
