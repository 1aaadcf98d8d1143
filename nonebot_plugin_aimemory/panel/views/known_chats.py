"""Which chats the panel knows: the chat scopes the overview lists, and so the chat pages
that open (any other chat's page is a 404 saying so).

Listed: every stored window (`g:1`, `g:1@10001#猫娘`: one row per account and persona);
for a chat as one account has it with only token usage or a persona choice, the window of
the persona it plays now; every scope with memories or tombstones, but for those a listed
window's page shows already (shared memories: `g:1`'s are on `g:1@10001`'s page) where no
usage or persona choice of the scope's own chat key says its account is there too; and
for a chat with only chat-log rows (the log is the chat's, not an account's), the home
account's window of the persona it plays. A
person's page (`u:<QQ号>`) always opens, empty or not: the overview's look-up form takes
any QQ number. Without a database nothing is stored, so nothing is listed.

A page asks the database each time (`scope_is_known`, a few index seeks). The overview
reads windows and the chat log each time, but the chats with memories, usage or a persona
choice in full only every FULL_READ_SECONDS (a thousand of them cost milliseconds), so a
chat whose only trace is new shows up there within that time."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...store import OverviewStore
from ..scopes import Scope

if TYPE_CHECKING:
    from ...personas import Personas
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


@dataclass(frozen=True, slots=True)
class StoredKeys:
    """The keys the overview lists chats from: stored windows, scopes with memories or
    tombstones, chats (as one account has them) with usage or a persona choice, and chats
    with a chat log."""

    windows: Iterable[str]
    memory_scopes: Iterable[str]
    active: Iterable[str]
    logged: Iterable[str]

    def every(self) -> list[str]:
        """All of them, for what is asked of every key (which accounts they name)."""
        return [*self.windows, *self.memory_scopes, *self.active, *self.logged]


def listed_scopes(
    personas: Personas, keys: StoredKeys, memories_of: Callable[[Scope], Scope]
) -> set[Scope]:
    """The chat scopes the overview lists (see the module's docstring); `memories_of`
    gives the scope whose memories a window's page shows."""
    listed = set(_chats(keys.windows))
    memory_scopes = _chats(keys.memory_scopes)
    active = {scope.chat_key: scope for scope in _chats(keys.active) if scope.persona is None}
    with_own = {scope.chat_key for scope in (*listed, *memory_scopes)}
    for chat_key in active.keys() - with_own:
        listed.add(Scope.parse(personas.window_key(chat_key)))
    shown = {memories_of(scope) for scope in listed}
    listed.update(
        scope for scope in memory_scopes if scope not in shown or scope.chat_key in active
    )
    heard = {scope.log_chat for scope in listed}
    for chat in _chats(keys.logged):
        if chat == chat.log_chat and chat not in heard:
            listed.add(Scope.parse(personas.window_key(chat.chat_key)))
    return listed


def _chats(keys: Iterable[str]) -> list[Scope]:
    """The chats' scopes among `keys` (not a person's, nor a key that is no scope)."""
    return [
        scope
        for key in keys
        if (scope := Scope.parse_or_none(key)) is not None and not scope.is_personal
    ]


async def scope_is_known(runtime: Runtime, scope: Scope) -> bool:
    """Whether the scope's page opens: a person's always, a chat's when the overview lists
    it (or memories are kept under its key, which the overview may show on an account's
    page instead), found with one query instead of reading the whole overview."""
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
