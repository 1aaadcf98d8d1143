"""The overview: every chat the database holds anything of (known_chats.py decides which),
its context against the budget and today's tokens; one scope's row with its memory count
(404 for a chat the overview would not list); the people with personal memories. Names
come from a ChatNameSource, never waiting for the OneBot API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ... import texts
from ...store.overview_store import OverviewStore, StoredWindow
from ..scopes import Scope
from .chat_log import recorded_chat
from .context_sizes import ContextSizes
from .errors import refusal
from .known_chats import ChatsWithData, LoggedChats, listed_scopes, scope_is_known
from .memories import memory_service

if TYPE_CHECKING:
    from ...runtime import Runtime


class ChatNameSource(Protocol):
    """Names of chats when known (onebot/names.py); never waits for the OneBot API."""

    def name(self, chat_key: str) -> str | None:
        """The group name or friend nickname, or None."""
        ...


class NoNames:
    """No names at all (tests, a bot without OneBot)."""

    def name(self, chat_key: str) -> str | None:
        """Always unknown."""
        return None


class PanelData:
    """The overview's answers for the runtime in use, and what it keeps between them (chat
    names, measured context sizes, the logged chats, the chats with other data); closed at
    shutdown."""

    def __init__(self, names: ChatNameSource) -> None:
        self.names = names
        self.sizes = ContextSizes()
        self.logged = LoggedChats()
        self.with_data = ChatsWithData()

    async def chats(self, runtime: Runtime) -> list[dict[str, Any]]:
        """Every chat scope the database holds anything of (see `listed_scopes`)."""
        windows: dict[str, StoredWindow] = {}
        logged: dict[str, str] = {}
        memory_scopes: set[str] = set()
        active: set[str] = set()
        if runtime.persistent:
            store = OverviewStore(runtime.database)
            windows = {w.key: w for w in await store.windows()}
            logged = await self.logged.read(store)
            memory_scopes, active = await self.with_data.read(store)
        scopes = listed_scopes(runtime.personas, [*windows, *memory_scopes], [*logged, *active])
        today = runtime.usage.today_totals()
        defined = runtime.personas.defined
        rows = [
            self._chat_row(
                runtime, scope, windows.get(str(scope)), logged.get(scope.chat_key), today, defined
            )
            for scope in scopes
        ]
        self.sizes.measure_soon(runtime)
        rows.sort(key=lambda row: (row["last_active"] or "", row["scope"]), reverse=True)
        return rows

    async def chat(self, runtime: Runtime, scope: Scope) -> dict[str, Any]:
        """One scope's row of the overview, with its memory count and cap; 404 for a chat
        the overview does not list (a person's row is always there, maybe empty)."""
        if not await scope_is_known(runtime, scope):
            raise refusal(404, "not_found", texts.panel_chat_not_found(str(scope)))
        window: StoredWindow | None = None
        last_logged: str | None = None
        if runtime.persistent and not scope.is_personal:
            store = OverviewStore(runtime.database)
            window = await store.window(scope.key)
            last_logged = await store.last_logged(scope.chat_key)
        row = self._chat_row(
            runtime,
            scope,
            window,
            last_logged,
            runtime.usage.today_totals(),
            runtime.personas.defined,
        )
        self.sizes.measure_soon(runtime)
        service = memory_service(runtime)
        row["personal"] = scope.is_personal
        row["memories"] = await service.count(scope.key) if service else 0
        row["max_memories"] = service.max_entries_for(scope.key) if service else 0
        row["memory_available"] = service is not None
        row["chat_log_available"] = recorded_chat(runtime) is not None and not scope.is_personal
        return row

    def _chat_row(
        self,
        runtime: Runtime,
        scope: Scope,
        window: StoredWindow | None,
        last_logged: str | None,
        today: dict[str, int],
        personas_defined: bool,
    ) -> dict[str, Any]:
        """One chat's row of the overview (no query: what it needs was read before)."""
        key, chat_key = str(scope), scope.chat_key
        session = runtime.sessions.get(key)
        estimated = False
        if session is not None and session.loaded:
            bot = session.bot
            context: int | None = bot.context_tokens
            messages, compressions = len(bot.window), bot.stats.count
        elif window is not None:
            context = self.sizes.get(window)
            messages, compressions, estimated = window.messages, window.compressions, True
        else:
            context, messages, compressions = 0, 0, 0
        persona = scope.persona_name if personas_defined or scope.persona else None
        last_active = window.updated_at if window is not None else None
        if last_logged is not None and (last_active is None or last_logged > last_active):
            last_active = last_logged
        return {
            "scope": key,
            "chat_key": chat_key,
            "name": self.name(scope),
            "persona": persona,
            "context_tokens": context,
            "context_estimated": estimated,
            "budget_tokens": runtime.budget_tokens,
            "messages": messages,
            "compressions": compressions,
            "last_active": last_active,
            "tokens_today": today.get(chat_key, 0),
            "resident": session is not None,
        }

    def name(self, scope: Scope) -> str | None:
        """The chat's name, or for a person the nickname of their private chat, if known."""
        chat = Scope.friend(scope.id) if scope.is_personal else scope.chat
        return self.names.name(str(chat))

    async def people(self, runtime: Runtime) -> list[dict[str, Any]]:
        """Every person with personal memories."""
        if not runtime.persistent:
            return []
        found = await OverviewStore(runtime.database).personal_scopes()
        return [
            {
                "scope": person.scope,
                "user_id": scope.id,
                "name": self.name(scope),
                "persona": scope.persona,
                "memories": person.memories,
            }
            for person in found
            if (scope := Scope.parse_or_none(person.scope)) is not None
        ]

    async def close(self) -> None:
        """Stop background measuring."""
        await self.sizes.close()
