"""Context sizes of windows that are not resident, for the overview: measured in the
background and kept until the window changes, so answering never loads a window."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...engine import Message, ToolRegistry, message_tokens
from ...scopes import Scope
from ...store import StoredWindow

if TYPE_CHECKING:
    from ...runtime import Runtime

logger = logging.getLogger("nonebot_plugin_aimemory")


@dataclass(frozen=True, slots=True)
class _Measured:
    messages: int
    updated_at: str
    tokens: int


class ContextSizes:
    """Context sizes of windows that are not resident, measured in the background (one
    window at a time, tokenised off the event loop) and kept until the window changes: the
    overview never loads a window while answering."""

    def __init__(self) -> None:
        self._known: dict[str, _Measured] = {}
        self._waiting: dict[str, StoredWindow] = {}
        self._task: asyncio.Task[None] | None = None
        # (kind of chat, persona) -> system prompt and tools tokens: the prompt differs from
        # chat to chat only by the chat's number, a token or two of an estimate.
        self._fixed: dict[tuple[str, str], int] = {}

    def get(self, window: StoredWindow) -> int | None:
        """The measured size of this version of the window, or None (then it is queued)."""
        known = self._known.get(window.key)
        if known is not None and (known.messages, known.updated_at) == (
            window.messages,
            window.updated_at,
        ):
            return known.tokens
        self._waiting[window.key] = window
        return None

    def measure_soon(self, runtime: Runtime) -> None:
        """Start measuring what is queued, unless that is under way."""
        if self._waiting and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._measure(runtime))

    async def _measure(self, runtime: Runtime) -> None:
        while self._waiting:
            key, window = self._waiting.popitem()
            try:
                messages = await runtime.history.load(key)
                fixed = await self._fixed_tokens(runtime, key)
                tokens = await asyncio.to_thread(_window_tokens, runtime, messages)
            except Exception:
                logger.exception("panel could not measure the window of %s", key)
                continue
            self._known[key] = _Measured(window.messages, window.updated_at, fixed + tokens)

    async def _fixed_tokens(self, runtime: Runtime, key: str) -> int:
        scope = Scope.parse(key)
        shape = (scope.kind.value, scope.persona_name)
        if shape not in self._fixed:
            self._fixed[shape] = await asyncio.to_thread(_fixed_request_tokens, runtime, key)
        return self._fixed[shape]

    async def close(self) -> None:
        """Stop measuring (at shutdown)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def _fixed_request_tokens(runtime: Runtime, key: str) -> int:
    """What every request of the window carries besides it: system prompt and tools."""
    specs = ToolRegistry(runtime.builtin_tools(key)).specs_json()
    system = message_tokens(Message("system", runtime.system_prompt_for(key)), runtime.counter)
    return system + (runtime.counter.count(specs.decode()) if specs else 0)


def _window_tokens(runtime: Runtime, messages: Sequence[Message]) -> int:
    return sum(message_tokens(m, runtime.counter) for m in messages)
