"""Clearing a test chat, so the operator can try again from the start: its windows (every
persona's), its memories and its speakers' personal memories for good (tombstones too, or
the same fact could not be saved again), and its chat log. Its token usage stays: tokens
spent on tests were spent, and the panel shows them as the test chat's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..chatlog import RecordedChat
from ..memory import MemoryService
from ..scopes import Scope
from .members import is_test_chat, speakers_of

if TYPE_CHECKING:
    from ..runtime import Runtime


@dataclass(frozen=True, slots=True)
class Cleared:
    """What a clearing removed: windows, memories and chat-log rows."""

    windows: int
    memories: int
    chat_log_rows: int


async def clear_test_chat(runtime: Runtime, chat: Scope) -> Cleared:
    """Clear `chat`, which must be one of the try page's chats (ValueError otherwise: a
    real chat is never cleared here)."""
    if not is_test_chat(chat):
        raise ValueError(f"not a test chat: {chat}")
    chat = chat.log_chat
    personas = runtime.personas.catalog.names()  # 默认 first: the chat's own key
    windows = {chat.with_persona(persona) for persona in personas}
    for window in sorted(windows, key=str):
        await _clear_window(runtime, window.key)
    memories = 0
    service = getattr(runtime.memory, "service", None)
    if isinstance(service, MemoryService):
        people = [Scope.person(m.user_id) for m in speakers_of(chat)]
        places = {
            runtime.conversation.memory_key(scope.with_persona(persona).key)
            for scope in (chat, *people)
            for persona in personas
        }
        for place in sorted(places):
            memories += await service.erase(place)
    rows = 0
    if isinstance(runtime.chat_log, RecordedChat):
        # Rows still queued would be written after the deletion.
        await runtime.chat_log.flush()
        rows = await runtime.chat_log.writer.store.delete_chat(chat.key)
    return Cleared(len(windows), memories, rows)


async def _clear_window(runtime: Runtime, key: str) -> None:
    """Forget one window in memory and in the store, after the turn it may be running."""
    session = runtime.sessions.get_or_create(key, touch=False)
    async with session.lock:
        await session.bot.clear()
        session.loaded = True
