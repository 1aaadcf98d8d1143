"""The overview: every chat the database holds anything of (known_chats.py decides which),
a row per bot account and persona with its window's context against the budget and
today's tokens, labelled with its account (accounts.py); one scope's row with the count of
the memories its page shows (404 for a chat the overview would not list); the people with
personal memories. A chat's name, last chat-log line and memories are the chat's,
whichever account: an account's row shows those of its chat. Names come from a
ChatNameSource, never waiting for the OneBot API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ... import texts
from ...store import OverviewStore, StoredWindow
from ...trychat import chat_title
from ..scopes import Scope
from .accounts import AccountView, account_view
from .chat_log import recorded_chat
from .context_sizes import ContextSizes
from .errors import refusal
from .known_chats import ChatsWithData, LoggedChats, StoredKeys, listed_scopes, scope_is_known
from .memories import memories_of, memory_service

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


@dataclass(frozen=True, slots=True)
class _Shared:
    """What every row of one answer is built with: today's tokens per chat (as one account
    has it), whether personas are defined, and the accounts."""

    today: dict[str, int]
    personas_defined: bool
    accounts: AccountView


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
        """Every chat scope the database holds anything of (see `listed_scopes`): a row per
        account and persona, its chat's rows side by side."""
        windows: dict[str, StoredWindow] = {}
        logged: dict[str, str] = {}
        memory_scopes: set[str] = set()
        active: set[str] = set()
        if runtime.persistent:
            store = OverviewStore(runtime.database)
            windows = {w.key: w for w in await store.windows()}
            logged = await self.logged.read(store)
            memory_scopes, active = await self.with_data.read(store)
        keys = StoredKeys(windows, memory_scopes, active, logged)
        scopes = listed_scopes(runtime.personas, keys, lambda scope: memories_of(runtime, scope))
        shared = self._shared(runtime, account_view(runtime, keys.every()))
        rows = [
            (
                scope,
                self._chat_row(
                    runtime, scope, windows.get(scope.key), logged.get(scope.log_chat.key), shared
                ),
            )
            for scope in scopes
        ]
        self.sizes.measure_soon(runtime)
        return _side_by_side(rows)

    async def chat(self, runtime: Runtime, scope: Scope) -> dict[str, Any]:
        """One scope's row of the overview, with the count and cap of the memories its
        page shows; 404 for a chat the overview does not list (a person's row is always
        there, maybe empty)."""
        if not await scope_is_known(runtime, scope):
            raise refusal(404, "not_found", texts.panel_chat_not_found(str(scope)))
        window: StoredWindow | None = None
        last_logged: str | None = None
        if runtime.persistent and not scope.is_personal:
            store = OverviewStore(runtime.database)
            window = await store.window(scope.key)
            last_logged = await store.last_logged(scope.log_chat.key)
        shared = self._shared(runtime, await self._accounts(runtime, scope))
        row = self._chat_row(runtime, scope, window, last_logged, shared)
        self.sizes.measure_soon(runtime)
        row.update(await _memory_facts(runtime, scope, shared.accounts))
        row["chat_log_available"] = recorded_chat(runtime) is not None and not scope.is_personal
        if scope.is_personal:
            # A person's memories are nobody's window: the row is of whoever keeps them.
            owner = row["account"] = row["memory_account"]
            row["home_account"] = owner is not None and owner == shared.accounts.home
        return row

    def _shared(self, runtime: Runtime, accounts: AccountView) -> _Shared:
        return _Shared(runtime.usage.today_totals(), runtime.personas.defined, accounts)

    async def _accounts(self, runtime: Runtime, *seen: Scope) -> AccountView:
        """The accounts, from every stored key as the overview reads them, and `seen`."""
        keys = [scope.key for scope in seen]
        if runtime.persistent:
            store = OverviewStore(runtime.database)
            keys += [window.key for window in await store.windows()]
            memory_scopes, active = await self.with_data.read(store)
            keys += [*memory_scopes, *active]
        return account_view(runtime, keys)

    def _chat_row(
        self,
        runtime: Runtime,
        scope: Scope,
        window: StoredWindow | None,
        last_logged: str | None,
        shared: _Shared,
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
        persona = scope.persona_name if shared.personas_defined or scope.persona else None
        last_active = window.updated_at if window is not None else None
        if last_logged is not None and (last_active is None or last_logged > last_active):
            last_active = last_logged
        return {
            "scope": key,
            "chat_key": chat_key,
            "log_chat": scope.log_chat.key,
            "name": self.name(scope),
            "persona": persona,
            "context_tokens": context,
            "context_estimated": estimated,
            "budget_tokens": runtime.budget_tokens,
            "messages": messages,
            "compressions": compressions,
            "last_active": last_active,
            "tokens_today": shared.today.get(chat_key, 0),
            "resident": session is not None,
            # The try page's made-up chats: listed, and their usage shown, as tests.
            "test": scope.is_test,
            **shared.accounts.fields(scope),
        }

    def name(self, scope: Scope) -> str | None:
        """The chat's name (whichever account or persona), or for a person the nickname of
        their private chat, if known; the try page's made-up names for its test chats."""
        if scope.is_test:
            return chat_title(scope)
        chat = Scope.friend(scope.id) if scope.is_personal else scope.log_chat
        return self.names.name(str(chat))

    async def people(self, runtime: Runtime) -> list[dict[str, Any]]:
        """Every person with personal memories, with the account whose they are (None for
        memories the accounts share)."""
        if not runtime.persistent:
            return []
        found = await OverviewStore(runtime.database).personal_scopes()
        people = [
            (scope, person.memories)
            for person in found
            if (scope := Scope.parse_or_none(person.scope)) is not None
        ]
        accounts = await self._accounts(runtime, *(scope for scope, _ in people))
        return [
            {
                "scope": scope.key,
                "user_id": scope.id,
                "name": self.name(scope),
                "persona": scope.persona,
                "memories": memories,
                "account": accounts.memory_account(scope),
                "several_accounts": accounts.several,
                "test": scope.is_test,
            }
            for scope, memories in people
        ]

    async def close(self) -> None:
        """Stop background measuring."""
        await self.sizes.close()


async def _memory_facts(runtime: Runtime, scope: Scope, accounts: AccountView) -> dict[str, Any]:
    """What a page says of the memories it shows: where they live, whose they are, how
    many of how many it may hold."""
    kept = memories_of(runtime, scope)
    service = memory_service(runtime)
    return {
        "personal": scope.is_personal,
        "memory_scope": kept.key,
        "memory_account": accounts.memory_account(kept),
        "memory_shared": kept.account is None and accounts.shared_memory,
        "memories": await service.count(kept.key) if service else 0,
        "max_memories": service.max_entries_for(kept.key) if service else 0,
        "memory_available": service is not None,
    }


def _side_by_side(rows: list[tuple[Scope, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The rows, newest chat first, the accounts' rows of one chat (and persona) together:
    the newest first, the home account's before the others on a tie."""
    newest: dict[Scope, str] = {}
    for scope, row in rows:
        newest[scope.shared] = max(newest.get(scope.shared, ""), row["last_active"] or "")
    rows.sort(key=lambda pair: (pair[0].account is not None, int(pair[0].account or 0)))
    rows.sort(
        key=lambda pair: (
            newest[pair[0].shared],
            pair[0].shared.key,
            pair[1]["last_active"] or "",
        ),
        reverse=True,
    )
    return [row for _, row in rows]
