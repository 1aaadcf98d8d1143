"""A group's conversation window cleared in memory, for auto-clear (conversation/autoclear.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from ..scopes import Scope
from .sessions import SessionCache


@asynccontextmanager
async def group_cleared_in_memory(
    sessions: SessionCache, window_key: Callable[[str], str], group_id: str
) -> AsyncIterator[str]:
    """Clear the window of a group's current persona (`window_key` of the group's chat) in
    memory and hold its session until the caller has cleared the stored copy (auto-clear
    batches those deletes); yields that window's key."""
    key = window_key(str(Scope.group(group_id)))
    session = sessions.get_or_create(key, touch=False)
    async with session.lock:
        session.bot.forget()
        session.loaded = True
        yield key
