"""What the panel's JSON API answers, built from the running bot's parts: the overview of
every chat, one scope's memories (read and changed through MemoryService, so through the
same rules as the tools and commands), tombstones, review state, chat log and usage. No
web framework here: routes.py turns these into HTTP."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .. import texts
from ..chatlog.feature import RecordedChat
from ..chatlog.scheduler import ReviewScheduler
from ..engine.errors import LLMError
from ..engine.messages import Message
from ..engine.tokens import message_tokens
from ..engine.tools import ToolRegistry
from ..engine.usage import ROLES, TokenCounts, summed
from ..memory.rules import MISSING
from ..memory.service import MemoryFull, MemoryService, SaveOutcome, UpdateOutcome
from ..personas.keys import chat_key_of, persona_of
from ..store.overview_store import OverviewStore, StoredWindow
from .scopes import Scope

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..store.chat_log_store import ChatRow
    from ..store.memory_store import MemoryRecord

logger = logging.getLogger("nonebot_plugin_aimemory")

CHAT_LOG_DEFAULT_LIMIT = 50
CHAT_LOG_MAX_LIMIT = 200
USAGE_MAX_DAYS = 90
MEMORY_SEARCH_LIMIT = 50
# How often the overview reads the chat log's chats in full (in between: only new rows).
LOGGED_CHATS_FULL_READ_SECONDS = 300.0


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


class PanelError(Exception):
    """An answer other than success: its HTTP status and JSON body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body


def not_found(what: str) -> PanelError:
    return PanelError(404, {"error": "not_found", "reason": texts.panel_not_found(what)})


def memory_json(record: MemoryRecord) -> dict[str, Any]:
    """A memory as the API shows it (its vector and normalised form stay inside)."""
    shown: dict[str, Any] = {
        "id": record.id,
        "content": record.content,
        "tags": list(record.tags),
        "user_id": record.user_id,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "source": record.source,
        "private": record.private,
    }
    if record.deleted_at is not None:
        shown["deleted_at"] = record.deleted_at
    return shown


def chat_row_json(row: ChatRow) -> dict[str, Any]:
    """A chat-log row as the API shows it."""
    return {
        "id": row.id,
        "created_at": row.created_at,
        "role": row.role,
        "speaker_id": row.speaker_id,
        "speaker_name": row.speaker_name,
        "text": row.text,
        "addressed": row.addressed,
        "refused": row.refused,
    }


def counts_json(counts: TokenCounts) -> dict[str, int]:
    return {
        "prompt_tokens": counts.prompt_tokens,
        "completion_tokens": counts.completion_tokens,
        "cached_tokens": counts.cached_tokens,
        "total_tokens": counts.total_tokens,
        "calls": counts.calls,
    }


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
        shape = (key[:2], persona_of(key))
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
        if self._clock() - self._full_at > LOGGED_CHATS_FULL_READ_SECONDS:
            self._chats, self._through = await store.logged_chats()
            self._full_at = self._clock()
        else:
            added, self._through = await store.logged_since(self._through)
            for chat, last in added.items():
                if last > self._chats.get(chat, ""):
                    self._chats[chat] = last
        return self._chats


class PanelData:
    """The panel's answers for the runtime in use."""

    def __init__(self, names: ChatNameSource) -> None:
        self.names = names
        self.sizes = ContextSizes()
        self.logged = LoggedChats()

    # -- overview ---------------------------------------------------------------------

    async def chats(self, runtime: Runtime) -> list[dict[str, Any]]:
        """Every chat with a stored window, a chat log or a resident session."""
        windows: dict[str, StoredWindow] = {}
        logged: dict[str, str] = {}
        if runtime.persistent:
            store = OverviewStore(runtime.database)
            windows = {w.key: w for w in await store.windows()}
            logged = await self.logged.read(store)
        keys = set(windows)
        chats_with_windows = {chat_key_of(key) for key in keys}
        keys.update(
            runtime.personas.window_key(chat) for chat in logged if chat not in chats_with_windows
        )
        today = runtime.usage.today_totals()
        defined = runtime.personas.defined
        rows = [
            self._chat_row(
                runtime, key, windows.get(key), logged.get(chat_key_of(key)), today, defined
            )
            for key in keys
        ]
        self.sizes.measure_soon(runtime)
        rows.sort(key=lambda row: (row["last_active"] or "", row["scope"]), reverse=True)
        return rows

    async def chat(self, runtime: Runtime, scope: Scope) -> dict[str, Any]:
        """One scope's row of the overview (an empty one for a chat never seen), with its
        memory count and cap."""
        window: StoredWindow | None = None
        last_logged: str | None = None
        if runtime.persistent and not scope.personal:
            store = OverviewStore(runtime.database)
            window = await store.window(scope.key)
            last_logged = await store.last_logged(scope.chat_key)
        row = self._chat_row(
            runtime,
            scope.key,
            window,
            last_logged,
            runtime.usage.today_totals(),
            runtime.personas.defined,
        )
        self.sizes.measure_soon(runtime)
        service = _service(runtime)
        row["personal"] = scope.personal
        row["memories"] = await service.count(scope.key) if service else 0
        row["max_memories"] = service.max_entries_for(scope.key) if service else 0
        row["memory_available"] = service is not None
        row["chat_log_available"] = _chat_log(runtime) is not None and not scope.personal
        return row

    def _chat_row(
        self,
        runtime: Runtime,
        key: str,
        window: StoredWindow | None,
        last_logged: str | None,
        today: dict[str, int],
        personas_defined: bool,
    ) -> dict[str, Any]:
        """One chat's row of the overview (no query: what it needs was read before)."""
        chat_key = chat_key_of(key)
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
        persona = persona_of(key) if personas_defined or "#" in key else None
        last_active = window.updated_at if window is not None else None
        if last_logged is not None and (last_active is None or last_logged > last_active):
            last_active = last_logged
        return {
            "scope": key,
            "chat_key": chat_key,
            "name": self.names.name(chat_key),
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

    async def people(self, runtime: Runtime) -> list[dict[str, Any]]:
        """Every person with personal memories."""
        if not runtime.persistent:
            return []
        found = await OverviewStore(runtime.database).personal_scopes()
        return [
            {
                "scope": person.scope,
                "user_id": chat_key_of(person.scope)[2:],
                "name": self.names.name("f:" + chat_key_of(person.scope)[2:]),
                "persona": persona_of(person.scope) if "#" in person.scope else None,
                "memories": person.memories,
            }
            for person in found
        ]

    # -- memories ---------------------------------------------------------------------

    async def memories(self, runtime: Runtime, scope: Scope, query: str | None) -> list[dict]:
        """Live memories, newest first; with `query`, the best matches first."""
        service = _require_service(runtime)
        if query and query.strip():
            hits = await service.search(scope.key, query, MEMORY_SEARCH_LIMIT)
            return [memory_json(hit.memory) for hit in hits]
        return [memory_json(record) for record in await service.list(scope.key)]

    async def create_memory(self, runtime: Runtime, scope: Scope, body: dict) -> dict[str, Any]:
        """Save through every rule; the saved memory with near-duplicate hints, or why not."""
        service = _require_service(runtime)
        content = body.get("content")
        if not isinstance(content, str):
            raise PanelError(400, {"error": "bad_request", "reason": texts.PANEL_CONTENT_NEEDED})
        outcome = await service.save(
            scope.key, content, tags=_tags(body.get("tags")), source="command"
        )
        if outcome.status == "saved" and outcome.memory is not None:
            return {
                **memory_json(outcome.memory),
                "similar": [memory_json(r) for r in outcome.similar],
                "truncated": outcome.truncated,
            }
        raise _save_refusal(outcome)

    async def update_memory(
        self, runtime: Runtime, scope: Scope, memory_id: str, body: dict
    ) -> dict[str, Any]:
        """Change content, tags (and a personal memory's privacy) through the rules."""
        service = _require_service(runtime)
        if await service.get(scope.key, memory_id) is None:
            raise not_found(memory_id)
        content = body.get("content", MISSING)
        if content is not MISSING and not isinstance(content, str):
            raise PanelError(400, {"error": "bad_request", "reason": texts.PANEL_CONTENT_NEEDED})
        tags = _tags(body["tags"]) if "tags" in body else MISSING
        if "private" in body and not scope.personal:
            raise PanelError(400, {"error": "bad_request", "reason": texts.PANEL_PRIVATE_ONLY})
        outcome = await service.update(scope.key, memory_id, content=content, tags=tags)
        if outcome.status != "updated" or outcome.memory is None:
            raise _update_refusal(outcome, memory_id)
        record = outcome.memory
        if "private" in body:
            changed = await service.set_private(scope.key, memory_id, bool(body["private"]))
            if changed is None:
                raise not_found(memory_id)
            record = changed
        return {**memory_json(record), "truncated": outcome.truncated}

    async def delete_memory(self, runtime: Runtime, scope: Scope, memory_id: str) -> dict:
        """A person's deletion: the memory goes, its tombstone stays (restorable)."""
        deleted = await _require_service(runtime).forget(scope.key, memory_id, by_person=True)
        if deleted is None:
            raise not_found(memory_id)
        return memory_json(deleted)

    async def restore_memory(self, runtime: Runtime, scope: Scope, memory_id: str) -> dict:
        """Undo a deletion (refused when the scope is full)."""
        service = _require_service(runtime)
        try:
            restored = await service.restore(scope.key, memory_id)
        except MemoryFull:
            raise PanelError(
                409,
                {
                    "error": "full",
                    "reason": texts.panel_memory_full(service.max_entries_for(scope.key)),
                },
            ) from None
        if restored is None:
            raise not_found(memory_id)
        return memory_json(restored)

    async def tombstones(self, runtime: Runtime, scope: Scope) -> list[dict[str, Any]]:
        """Deleted memories (restorable while kept) and tombstones of purged ones: what a
        save of the same content would be refused for."""
        service = _require_service(runtime)
        records = await service.store.load_scope(scope.key)
        stones = await service.store.load_tombstone_records(scope.key)
        deleted = {r.id: r for r in records if r.deleted}
        shown: list[dict[str, Any]] = []
        for record in sorted(deleted.values(), key=lambda r: r.deleted_at or "", reverse=True):
            shown.append({**memory_json(record), "restorable": True})
        for stone in stones:
            if stone.memory_id not in deleted:
                shown.append(
                    {
                        "id": stone.memory_id,
                        "content": stone.normalized,
                        "user_id": stone.user_id,
                        "restorable": False,
                    }
                )
        return shown

    # -- review, chat log, usage ------------------------------------------------------

    async def review(self, runtime: Runtime, scope: Scope) -> dict[str, Any]:
        """The background reviewer's state for this scope."""
        reviews = _reviews(runtime, scope)
        if reviews is None:
            return {"available": False}
        state = await reviews.store.get(scope.key)
        return {
            "available": True,
            "enabled": reviews.enabled(state),
            "interval_seconds": reviews.interval(state),
            "last_review_at": state.last_review_at,
            "pending": state.pending,
            "failures": state.failures,
            "running": scope.key in reviews.running,
        }

    async def review_now(self, runtime: Runtime, scope: Scope) -> dict[str, Any]:
        """Run the reviewer on this scope now, as `~记忆 立即生成` does."""
        reviews = _reviews(runtime, scope)
        chat_log = _chat_log(runtime)
        if reviews is None or chat_log is None:
            raise PanelError(
                409, {"error": "unavailable", "reason": texts.REVIEW_NO_EXTERNAL_CONTEXT}
            )
        await chat_log.flush()
        try:
            outcome = await reviews.run_now(scope.key)
        except LLMError as exc:
            logger.warning("panel review of %s failed: %s", scope.key, exc)
            raise PanelError(
                502, {"error": "review_failed", "reason": texts.REVIEW_FAILED}
            ) from None
        return {
            "created": outcome.created if outcome else 0,
            "updated": outcome.updated if outcome else 0,
        }

    async def chat_log(
        self, runtime: Runtime, scope: Scope, query: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """The chat's newest rows (oldest first), or with `query` its best matches."""
        chat_log = _chat_log(runtime)
        if chat_log is None or scope.personal:
            return []
        limit = max(1, min(limit, CHAT_LOG_MAX_LIMIT))
        await chat_log.flush()
        store = chat_log.writer.store
        if query and query.strip():
            rows = await store.search(scope.chat_key, query, limit)
        else:
            rows = await store.recent(scope.chat_key, limit)
        return [chat_row_json(row) for row in rows]

    async def usage(self, runtime: Runtime, scope: Scope, days: int) -> list[dict[str, Any]]:
        """The chat's tokens on each of the last `days` days (today last), by role."""
        days = max(1, min(days, USAGE_MAX_DAYS))
        if scope.personal:
            return []
        per_day = await runtime.usage.per_day(scope.chat_key, days)
        return [
            {
                "day": day,
                **counts_json(summed(by_role.values())),
                "by_role": {
                    role: counts_json(counts)
                    for role, counts in sorted(by_role.items(), key=_role_order)
                },
            }
            for day, by_role in per_day
        ]

    async def close(self) -> None:
        """Stop background measuring."""
        await self.sizes.close()


def _role_order(pair: tuple[str, TokenCounts]) -> tuple[int, str]:
    role = pair[0]
    return (ROLES.index(role) if role in ROLES else len(ROLES), role)


def _service(runtime: Runtime) -> MemoryService | None:
    """The memory service; None without a database (memory is off)."""
    service = getattr(runtime.memory, "service", None)
    return service if isinstance(service, MemoryService) else None


def _require_service(runtime: Runtime) -> MemoryService:
    service = _service(runtime)
    if service is None:
        raise PanelError(409, {"error": "unavailable", "reason": texts.MEMORY_UNAVAILABLE_PANEL})
    return service


def _chat_log(runtime: Runtime) -> RecordedChat | None:
    return runtime.chat_log if isinstance(runtime.chat_log, RecordedChat) else None


def _reviews(runtime: Runtime, scope: Scope) -> ReviewScheduler | None:
    """The reviewer, when there is one and the scope is a chat's."""
    chat_log = _chat_log(runtime)
    if chat_log is None or scope.personal or not isinstance(chat_log.reviews, ReviewScheduler):
        return None
    return chat_log.reviews


def _tags(raw: object) -> list[object] | None:
    """Tags from a JSON body: a list, or a comma-separated string as typed in a form."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return [tag.strip() for tag in raw.replace("，", ",").split(",") if tag.strip()]
    if isinstance(raw, list):
        return list(raw)
    raise PanelError(400, {"error": "bad_request", "reason": texts.PANEL_TAGS_LIST})


def _save_refusal(outcome: SaveOutcome) -> PanelError:
    """Why a save did not happen, as the tools and commands would say it."""
    body: dict[str, Any] = {"error": outcome.status, "reason": texts.panel_save_refused(outcome)}
    if outcome.memory is not None:
        body["memory"] = memory_json(outcome.memory)
    status = 422 if outcome.status in ("refused", "empty") else 409
    return PanelError(status, body)


def _update_refusal(outcome: UpdateOutcome, memory_id: str) -> PanelError:
    if outcome.status == "not_found":
        return not_found(memory_id)
    body: dict[str, Any] = {
        "error": outcome.status,
        "reason": texts.panel_update_refused(outcome.status, outcome.reason),
    }
    if outcome.status == "duplicate" and outcome.memory is not None:
        body["memory"] = memory_json(outcome.memory)
    status = 422 if outcome.status in ("refused", "empty") else 409
    return PanelError(status, body)
