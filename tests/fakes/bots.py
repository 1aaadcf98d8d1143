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
ARRIVAL_TIMEOUT_SECONDS = 3.0
ARRIVAL_POLL_SECONDS = 0.0002


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
        """Handle events concurrently, each in its own task, reaching the plugin in the
        order given: each is sent as soon as the one before reached the conversation (or
        was done with). Not all in one instant: NoneBot resolves the sync dependencies of
        other plugins' command rules (the `/status` fixture's) in worker threads, so events
        sent in one instant may reach the plugin's matcher in any order."""
        from nonebot_plugin_aimemory.runtime import current_runtime

        runtime = current_runtime()
        assert runtime is not None, "the plugin is not running"
        conversation = runtime.conversation
        answer = conversation.answer
        arrived = 0

        async def counted(incoming: Any) -> Any:
            nonlocal arrived
            arrived += 1  # before the first await of `answer`, which queues the message
            return await answer(incoming)

        conversation.answer = counted  # type: ignore[method-assign]
        tasks: list[asyncio.Task[None]] = []
        try:
            for count, event in enumerate(events, start=1):
                task = asyncio.create_task(handle_event(self, event))
                tasks.append(task)
                deadline = asyncio.get_running_loop().time() + ARRIVAL_TIMEOUT_SECONDS
                while arrived < count and not task.done():  # a thread hop or two
                    assert asyncio.get_running_loop().time() < deadline, "never arrived"
                    await asyncio.sleep(ARRIVAL_POLL_SECONDS)
        finally:
            del conversation.answer
        await asyncio.gather(*tasks)
