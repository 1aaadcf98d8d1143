"""One conversation's turn loop: window + new message → LLM → tools → reply → store."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .llm import LLMClient, LLMError, Usage
from .messages import Message, tool_result
from .tokens import TokenCounter, message_tokens
from .tools import ToolRegistry
from .window import Window, api_safe

logger = logging.getLogger("nonebot_plugin_aimemory")


class HistoryStore(Protocol):
    """Where a conversation's window is persisted, row per message."""

    async def load(self, key: str) -> list[Message]: ...

    async def append(self, key: str, messages: Sequence[Message]) -> None: ...

    async def replace(self, key: str, messages: Sequence[Message]) -> None: ...

    async def clear(self, key: str) -> None: ...


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What a turn produced: the reply text, usage over all calls and tool rounds used."""

    reply: str
    usage: Usage
    tool_rounds: int


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
    ) -> None:
        self.key = key
        self.llm = llm
        self.store = store
        self.counter = counter
        self.tools = tools or ToolRegistry()
        self.max_tool_rounds = max_tool_rounds
        # Text-only models reject image parts: they then see the images' text markers.
        self.send_images = send_images
        self.window = Window(counter)
        self.system_message = Message("system", system_prompt)
        # Prompt size of the last request, from the API's usage (or estimated without one).
        self.context_tokens = 0

    async def load(self) -> None:
        """Fill the window from the store (an unreadable store leaves it empty)."""
        try:
            messages = await self.store.load(self.key)
        except Exception:
            logger.exception("could not load history of %s, starting empty", self.key)
            messages = []
        self.window.replace(messages)
        self.context_tokens = self.estimate_request_tokens(self.window.messages) if messages else 0

    async def clear(self) -> None:
        """Forget the conversation, in memory and in the store."""
        self.window.clear()
        self.context_tokens = 0
        await self._persist(self.store.clear(self.key))

    async def turn(self, message: Message, *, persist_user_text: str | None = None) -> TurnResult:
        """Answer `message`. `persist_user_text`, when given, is what the window keeps of it
        instead of its per-turn injections. Raises LLMError when no answer can be had; the
        user's message and finished tool rounds are kept even then (and on cancellation)."""
        kept_user = message if persist_user_text is None else message.with_text(persist_user_text)
        kept_user = kept_user.with_image_markers()
        if not self.send_images:
            message = message.with_image_markers()
        pending: list[Message] = []
        usage = Usage()
        rounds = 0
        try:
            while True:
                force_answer = rounds >= self.max_tool_rounds
                completion = await self._call(message, pending, force_answer)
                usage += completion.usage or Usage()
                reply = completion.message
                if reply.tool_calls and not force_answer:
                    rounds += 1
                    results = [
                        tool_result(call, await self.tools.execute(call, context=self.key))
                        for call in reply.tool_calls
                    ]
                    pending += [reply, *results]
                    continue
                if not reply.text:
                    raise LLMError("empty", f"only tool calls after {rounds} rounds ({self.key})")
                pending.append(Message("assistant", reply.text))
                return TurnResult(reply.text, usage, rounds)
        finally:
            # Runs on success, failure and cancellation alike: pending only ever holds whole
            # tool rounds, so what is kept is always a valid history.
            await self._commit([kept_user, *pending])

    async def _call(self, message: Message, pending: list[Message], force_answer: bool):
        request = [self.system_message, *api_safe([*self.window.messages, message, *pending])]
        extra = {"tool_choice": "none"} if force_answer and self.tools.names else None
        completion = await self.llm.complete(
            request, self.tools.specs_json(), context=self.key, extra=extra
        )
        if completion.usage is not None:
            self.context_tokens = completion.usage.prompt_tokens
        else:
            self.context_tokens = self.estimate_request_tokens(request[1:])
        return completion

    def estimate_request_tokens(self, messages: Sequence[Message]) -> int:
        """Tokenizer estimate of a request made of the system prompt, tools and `messages`."""
        if messages is self.window.messages:
            body = self.window.tokens
        else:
            body = sum(message_tokens(m, self.counter) for m in messages)
        tools = self.tools.specs_json()
        tools_tokens = self.counter.count(tools.decode()) if tools else 0
        return message_tokens(self.system_message, self.counter) + tools_tokens + body

    async def _commit(self, messages: list[Message]) -> None:
        self.window.extend(messages)
        await self._persist(self.store.append(self.key, messages))

    async def _persist(self, write) -> None:
        """Run a store write to completion even if the turn is cancelled; log a failure."""
        task = asyncio.ensure_future(write)
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("history write failed for %s; keeping it in memory only", self.key)
