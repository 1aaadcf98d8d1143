"""The forwarded chat records one message fetches with `get_forward_msg`: a few calls, run
at once where they can be, within one deadline for the whole message, nested records
included. A record not fetched is a short marker saying why."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from enum import Enum
from typing import Any

from nonebot.adapters.onebot.v11 import Bot, MessageSegment

from .segments import FORWARD_MARKER, data_of

logger = logging.getLogger("nonebot_plugin_aimemory")

# Records one message may fetch (nested ones included) and the time all its fetches may
# take, counted from the first: a call may hang until its timeout, and a record of twenty
# unreachable records, fetched one by one, once held the answer for 96 s.
MAX_FORWARD_FETCHES_PER_MESSAGE = 5
FORWARD_FETCH_SECONDS = 5.0
UNAVAILABLE_FORWARD = "[合并转发的聊天记录（无法获取）]"
UNREAD_FORWARD = "[合并转发：未能读取]"


class Unfetched(Enum):
    """Why a record's messages are not shown: the implementation refused (or sent nothing),
    or the message ran out of fetches or time."""

    FAILED = UNAVAILABLE_FORWARD
    UNREAD = UNREAD_FORWARD


ForwardNodes = list[Any] | Unfetched


def nested_records(segments: Iterable[MessageSegment]) -> list[dict[str, Any]]:
    """The data of the forward segments among `segments`, in order."""
    return [data_of(segment) for segment in segments if segment.type == "forward"]


def marker_of(nodes: ForwardNodes) -> str:
    """How a nested record shows in its message's line: the plain marker when its messages
    were fetched (they follow, indented), otherwise why they were not."""
    return FORWARD_MARKER if isinstance(nodes, list) else nodes.value


class ForwardFetcher:
    """The records one message fetches: MAX_FORWARD_FETCHES_PER_MESSAGE calls at most, all
    within FORWARD_FETCH_SECONDS of the first; a record named twice is fetched once."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self.fetches_left = MAX_FORWARD_FETCHES_PER_MESSAGE
        self._deadline: float | None = None
        self._fetched: dict[str, ForwardNodes] = {}

    async def prefetch(self, records: Iterable[dict[str, Any]]) -> None:
        """Fetch the records that need it all at once (within the budget), so one that
        hangs holds up the others no longer than the deadline."""
        ids = (_record_id(record) for record in records if _inline_nodes(record) is None)
        wanted = [record_id for record_id in dict.fromkeys(ids) if record_id]
        await asyncio.gather(*(self._fetch(record_id) for record_id in wanted))

    async def nodes(self, record: dict[str, Any]) -> ForwardNodes:
        """The record's messages: inline (NapCat sends them along), prefetched, or fetched
        now with what is left of the budget."""
        inline = _inline_nodes(record)
        if inline is not None:
            return inline
        record_id = _record_id(record)
        if not record_id:
            return Unfetched.FAILED
        await self._fetch(record_id)
        return self._fetched[record_id]

    async def _fetch(self, record_id: str) -> None:
        if record_id in self._fetched:
            return
        seconds_left = self._seconds_left()
        if self.fetches_left <= 0 or seconds_left <= 0:
            logger.info("left forwarded record %s unread: out of fetches or time", record_id)
            self._fetched[record_id] = Unfetched.UNREAD
            return
        # Taken before the first await, so calls running at once never exceed the budget.
        self.fetches_left -= 1
        self._fetched[record_id] = await self._call(record_id, seconds_left)

    async def _call(self, record_id: str, seconds: float) -> ForwardNodes:
        try:
            answer = await asyncio.wait_for(self.bot.get_forward_msg(id=record_id), seconds)
        except asyncio.TimeoutError:
            logger.info("get_forward_msg %s gave no answer in %.1f s", record_id, seconds)
            return Unfetched.UNREAD
        except Exception as exc:
            logger.info("get_forward_msg %s failed: %r", record_id, exc)
            return Unfetched.FAILED
        return _answer_nodes(answer) or Unfetched.FAILED

    def _seconds_left(self) -> float:
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + FORWARD_FETCH_SECONDS
        return self._deadline - now


def _inline_nodes(record: dict[str, Any]) -> list[Any] | None:
    nodes = record.get("content")
    return nodes if isinstance(nodes, list) and nodes else None


def _record_id(record: dict[str, Any]) -> str:
    return str(record.get("id") or "")


def _answer_nodes(answer: Any) -> list[Any] | None:
    """The messages of a `get_forward_msg` answer in any implementation's shape."""
    nodes = answer
    if isinstance(answer, dict):
        nodes = answer.get("messages") or answer.get("message")
    return nodes if isinstance(nodes, list) and nodes else None
