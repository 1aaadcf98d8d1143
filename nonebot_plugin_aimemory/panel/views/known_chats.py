"""Which chats the panel knows: the chat scopes the overview lists, and so the chat pages
that open (any other chat's page is a 404 saying so).

Listed: every scope with a stored window, memories or tombstones under its own key; and for
a chat with only chat-log rows, token usage or a persona choice (no scope of it stored
under its own key), the scope of the persona it plays now. A person's page (`u:<QQ号>`)
always opens, empty or not: the overview's look-up form takes any QQ number. Without a
database nothing is stored, so nothing is listed.

A page asks the database each time (`scope_is_known`, a few index seeks). The overview
reads windows and the chat log each time, but the chats with memories, usage or a persona
choice in full only every FULL_READ_SECONDS (a thousand of them cost milliseconds), so a
chat whose only trace is new shows up there within that time."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...store.overview_store import OverviewStore
from ..scopes import Scope

if TYPE_CHECKING:
    from ...personas.choices import Personas
    from ...runtime import Runtime

# How often the overview reads the chat log's chats in full (in between: only new rows), and
# the chats with memories, usage or a persona choice (in between: as last read).
FULL_READ_SECONDS = 300.0


class LoggedChats:
    """Every logged chat and its newest row's time, read in full now and then and otherwise
    from the rows added since the last read (the log only grows between retention runs,
    which the next full read catches up with)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._chats: dict[str, str] = {}
        self._through = 0
        self._full_at = float("-inf")

    async def read(self, store: OverviewStore) -> dict[str, str]:
        """Every logged chat and the time of its newest row."""
        if self._clock() - self._full_at > FULL_READ_SECONDS:
            self._chats, self._through = await store.logged_chats()
            self._full_at = self._clock()
        else:
            added, self._through = await store.logged_since(self._through)
            for chat, last in added.items():
                if last > self._chats.get(chat, ""):
                    self._chats[chat] = last
        return self._chats


class ChatsWithData:
    """The chat scopes with memories or tombstones, and the chats with token usage or a
    persona choice, read in full at most every FULL_READ_SECONDS (windows and the chat log,
    read each time, list nearly every chat anyway)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._memory_scopes: set[str] = set()
        self._active: set[str] = set()
        self._read_at = float("-inf")

    async def read(self, store: OverviewStore) -> tuple[set[str], set[str]]:
        """(scopes with memories or tombstones, chats with usage or a persona choice)."""
        if self._clock() - self._read_at > FULL_READ_SECONDS:
            self._memory_scopes = await store.memory_scopes()
            self._active = await store.active_chats()
            self._read_at = self._clock()
        return self._memory_scopes, self._active


def listed_scopes(
    personas: Personas, stored_keys: Iterable[str], active_chats: Iterable[str]
) -> set[Scope]:
    """The chat scopes the overview lists: each scope stored under its own key (a window,
    memories, tombstones), and for each active chat (chat log, usage, a persona choice)
    with none of those, the scope of its current persona."""
    scopes = {
        scope
        for key in stored_keys
        if (scope := Scope.parse_or_none(key)) is not None and not scope.is_personal
    }
    with_own = {scope.chat_key for scope in scopes}
    for chat in active_chats:
        scope = Scope.parse_or_none(chat)
        if scope is None or scope.is_personal or scope.persona or chat in with_own:
            continue
        scopes.add(Scope.parse(personas.window_key(chat)))
    return scopes


async def scope_is_known(runtime: Runtime, scope: Scope) -> bool:
    """Whether the scope's page opens: a person's always, a chat's when the overview lists
    it, found with one query instead of reading the whole overview."""
    if scope.is_personal:
        return True
    if not runtime.persistent:
        return False
    traces = await OverviewStore(runtime.database).traces(str(scope), scope.chat_key)
    if traces.own:
        return True
    return (
        traces.of_chat
        and not traces.in_chat
        and str(scope) == runtime.personas.window_key(scope.chat_key)
    )
