"""A group's conversation window cleared in memory, for auto-clear (conversation/autoclear.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from .sessions import SessionCache


@asynccontextmanager
async def group_cleared_in_memory(
    sessions: SessionCache, window_key: Callable[[str], str], chat_key: str
) -> AsyncIterator[str]:
    """Clear the window of a group's current persona (`window_key` of the group's chat as
    one account has it, `chat_key`) in memory and hold its session until the caller has
    cleared the stored copy (auto-clear batches those deletes); yields that window's key."""
    key = window_key(chat_key)
    session = sessions.get_or_create(key, touch=False)
    async with session.lock:
        session.bot.forget()
        session.loaded = True
        yield key
