"""The panel over HTTP: an APIRouter of our own with the pages (pages.py) and the JSON API
under one base path. Every page and API call needs a logged-in session (cookie) or, for the
API, `Authorization: Bearer <token>`; a write through the cookie also needs the session's
CSRF token in `X-CSRF-Token`: those checks, and the rest, are the dependencies of
dependencies.py. The memory routes act on the memories the scope's page shows (an
account's window shows the memories the accounts share: `memories_of`). FastAPI is imported only here and in the modules this imports, and only
when the panel is switched on (it is not a dependency of the plugin)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from ..memory import MemoryService
from ..runtime import Runtime
from .auth import PanelAuth
from .dependencies import (
    ApiDependencies,
    ApiRoute,
    RuntimeGetter,
    api_dependencies,
    api_json,
    chat_scope,
)
from .pages import PanelPages
from .scopes import Scope
from .try_routes import try_router
from .views import (
    CHAT_LOG_DEFAULT_LIMIT,
    MemoryCreate,
    MemoryPatch,
    PanelData,
    chat_log,
    memories,
    review,
    usage,
)
from .views.usage import USAGE_DEFAULT_DAYS


def build_router(
    base_path: str, auth: PanelAuth, data: PanelData, runtime: RuntimeGetter
) -> APIRouter:
    """Every route of the panel under `base_path`."""
    base = base_path.rstrip("/")
    deps = api_dependencies(auth, runtime)
    api = APIRouter(
        prefix=f"{base}/api",
        route_class=ApiRoute,
        include_in_schema=False,
        dependencies=[deps.body_size],
    )
    _add_overview_routes(api, deps, data)
    _add_memory_reads(api, deps)
    _add_memory_writes(api, deps)
    _add_chat_routes(api, deps)
    router = APIRouter()
    router.include_router(PanelPages(base, auth, runtime).router())
    router.include_router(api)
    router.include_router(try_router(base, deps))
    return router


def _add_overview_routes(api: APIRouter, deps: ApiDependencies, data: PanelData) -> None:
    @api.get("/chats", dependencies=[deps.read])
    async def list_chats(runtime: Runtime = deps.runtime) -> JSONResponse:
        return api_json(await data.chats(runtime))

    @api.get("/people", dependencies=[deps.read])
    async def list_people(runtime: Runtime = deps.runtime) -> JSONResponse:
        return api_json(await data.people(runtime))

    @api.get("/chats/{scope}", dependencies=[deps.read])
    async def get_chat(
        scope: Scope = Depends(chat_scope), runtime: Runtime = deps.runtime
    ) -> JSONResponse:
        return api_json(await data.chat(runtime, scope))


def _add_memory_reads(api: APIRouter, deps: ApiDependencies) -> None:
    @api.get("/chats/{scope}/memories", dependencies=[deps.read])
    async def get_memories(
        q: str | None = None,
        scope: Scope = deps.memory_scope,
        service: MemoryService = deps.service,
    ) -> JSONResponse:
        return api_json(await memories.list_memories(service, scope, q))

    @api.get("/chats/{scope}/tombstones", dependencies=[deps.read])
    async def get_tombstones(
        scope: Scope = deps.memory_scope, service: MemoryService = deps.service
    ) -> JSONResponse:
        return api_json(await memories.tombstones(service, scope))


def _add_memory_writes(api: APIRouter, deps: ApiDependencies) -> None:
    @api.post("/chats/{scope}/memories", dependencies=[deps.write])
    async def post_memory(
        scope: Scope = deps.memory_scope,
        body: MemoryCreate = deps.creation,
        service: MemoryService = deps.service,
    ) -> JSONResponse:
        return api_json(await memories.create_memory(service, scope, body), 201)

    @api.patch("/chats/{scope}/memories/{memory_id}", dependencies=[deps.write])
    async def patch_memory(
        memory_id: str,
        scope: Scope = deps.memory_scope,
        body: MemoryPatch = deps.patch,
        service: MemoryService = deps.service,
    ) -> JSONResponse:
        return api_json(await memories.update_memory(service, scope, memory_id, body))

    @api.delete("/chats/{scope}/memories/{memory_id}", dependencies=[deps.write])
    async def delete_memory(
        memory_id: str,
        scope: Scope = deps.memory_scope,
        service: MemoryService = deps.service,
    ) -> JSONResponse:
        return api_json(await memories.delete_memory(service, scope, memory_id))

    @api.post("/chats/{scope}/memories/{memory_id}/restore", dependencies=[deps.write])
    async def post_restore(
        memory_id: str,
        scope: Scope = deps.memory_scope,
        service: MemoryService = deps.service,
    ) -> JSONResponse:
        return api_json(await memories.restore_memory(service, scope, memory_id))


def _add_chat_routes(api: APIRouter, deps: ApiDependencies) -> None:
    @api.get("/chats/{scope}/review", dependencies=[deps.read])
    async def get_review(
        scope: Scope = Depends(chat_scope), runtime: Runtime = deps.runtime
    ) -> JSONResponse:
        return api_json(await review.review_state(runtime, scope))

    @api.post("/chats/{scope}/review", dependencies=[deps.write])
    async def post_review(
        scope: Scope = Depends(chat_scope), runtime: Runtime = deps.runtime
    ) -> JSONResponse:
        return api_json(await review.review_now(runtime, scope))

    @api.get("/chats/{scope}/chatlog", dependencies=[deps.read])
    async def get_chat_log(
        q: str | None = None,
        limit: str | None = None,
        scope: Scope = Depends(chat_scope),
        runtime: Runtime = deps.runtime,
    ) -> JSONResponse:
        rows = await chat_log.chat_log_rows(runtime, scope, q, _int(limit, CHAT_LOG_DEFAULT_LIMIT))
        return api_json(rows)

    @api.get("/chats/{scope}/usage", dependencies=[deps.read])
    async def get_usage(
        days: str | None = None,
        scope: Scope = Depends(chat_scope),
        runtime: Runtime = deps.runtime,
    ) -> JSONResponse:
        return api_json(await usage.usage_per_day(runtime, scope, _int(days, USAGE_DEFAULT_DAYS)))


def _int(raw: str | None, default: int) -> int:
    """A number from the query; a missing or malformed one is the default (never a 422)."""
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default
