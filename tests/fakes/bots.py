"""A OneBot v11 bot whose API calls are recorded and answered instantly, for tests that
drive `nonebot.message.handle_event` directly (concurrency, ordering, many events)."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any

import nonebot
from nonebot.adapters.onebot.v11 import Adapter, Bot, Message, MessageEvent
from nonebot.message import handle_event

SELF_ID = "42"


@dataclass
class ApiCall:
    api: str
    data: dict[str, Any]

    @property
    def text(self) -> str:
        """The plain text of a send_msg call."""
        message = self.data.get("message")
        if isinstance(message, Message):
            return message.extract_plain_text()
        return str(message)

    @property
    def segment_types(self) -> list[str]:
        message = self.data.get("message")
        return [seg.type for seg in message] if isinstance(message, Message) else []


class RecordingBot(Bot):
    """Records every call; `get_group_member_info` answers with `member_roles`."""

    def __init__(self, self_id: str = SELF_ID) -> None:
        super().__init__(nonebot.get_adapter(Adapter), self_id)
        self.calls: list[ApiCall] = []
        self.member_roles: dict[int, str] = {}
        self._ids = itertools.count(1)

    async def call_api(self, api: str, **data: Any) -> Any:
        self.calls.append(ApiCall(api, data))
        if api == "send_msg":
            return {"message_id": next(self._ids)}
        if api == "get_group_member_info":
            return {"role": self.member_roles.get(int(data["user_id"]), "member")}
        return None

    @property
    def sent(self) -> list[ApiCall]:
        return [c for c in self.calls if c.api == "send_msg"]

    @property
    def sent_texts(self) -> list[str]:
        return [c.text for c in self.sent]

    async def receive(self, event: MessageEvent) -> None:
        """Handle one event as NoneBot would (after the adapter's own checks)."""
        await handle_event(self, event)

    async def receive_all(self, *events: MessageEvent) -> None:
        """Handle events concurrently, each in its own task, in arrival order."""
        tasks = [asyncio.create_task(handle_event(self, e)) for e in events]
        await asyncio.gather(*tasks)
