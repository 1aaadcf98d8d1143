"""The panel over HTTP: an APIRouter with the login, the pages (static files shipped in
`static/`) and the JSON API under one path. Every page and API call needs a logged-in
session (cookie) or, for the API, `Authorization: Bearer <token>`; a write through the
cookie also needs the session's CSRF token in `X-CSRF-Token`. FastAPI is imported only here,
and only when the panel is switched on (it is not a dependency of the plugin)."""

from __future__ import annotations

import html
import json
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from .. import texts
from .auth import (
    CSRF_COOKIE,
    CSRF_HEADER,
    SESSION_COOKIE,
    SESSION_SECONDS,
    PanelAuth,
    PanelSession,
    csrf_matches,
)
from .scopes import BadScope, Scope, parse_scope
from .views import CHAT_LOG_DEFAULT_LIMIT, PanelData, PanelError

if TYPE_CHECKING:
    from ..runtime import Runtime

RuntimeGetter = Callable[[], "Runtime | None"]
# The files of static/ the router serves, with their types; nothing else is reachable.
STATIC_TYPES = {
    "panel.css": "text/css; charset=utf-8",
    "panel.js": "text/javascript; charset=utf-8",
    "overview.js": "text/javascript; charset=utf-8",
    "chat.js": "text/javascript; charset=utf-8",
}
PAGES = ("login.html", "overview.html", "chat.html")
# The login form's body is a few dozen bytes; anything much longer is not one.
MAX_LOGIN_BODY_BYTES = 4096
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def static_text(name: str) -> str:
    """A file shipped in panel/static/."""
    return (
        resources.files("nonebot_plugin_aimemory.panel")
        .joinpath("static")
        .joinpath(name)
        .read_text(encoding="utf-8")
    )


class PanelRoutes:
    """The handlers, bound to one token, one base path and the runtime in use."""

    def __init__(
        self, base_path: str, auth: PanelAuth, data: PanelData, runtime: RuntimeGetter
    ) -> None:
        self.base = base_path.rstrip("/")
        self.auth = auth
        self.data = data
        self.runtime = runtime
        self._files = {name: static_text(name) for name in (*PAGES, *STATIC_TYPES)}

    # -- pages and login --------------------------------------------------------------

    def page(self, name: str, status: int = 200, error: str = "") -> HTMLResponse:
        body = self._files[name].replace("{{base}}", html.escape(self.base))
        body = body.replace("{{error}}", html.escape(error))
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    async def home(self, request: Request) -> Response:
        if self._session_of(request) is None:
            return self.page("login.html")
        return self.page("overview.html")

    async def chat_page(self, request: Request, scope: str) -> Response:
        if self._session_of(request) is None:
            return self.page("login.html", 401, texts.PANEL_UNAUTHORIZED)
        try:
            parse_scope(scope)
        except BadScope:
            return HTMLResponse(
                html.escape(texts.PANEL_BAD_SCOPE), status_code=400, headers=SECURITY_HEADERS
            )
        return self.page("chat.html")

    async def bare_path(self) -> Response:
        return RedirectResponse(f"{self.base}/", status_code=307)

    async def login(self, request: Request) -> Response:
        client = _client(request)
        if self.auth.limited(client):
            return self.page("login.html", 429, texts.PANEL_TOO_MANY_ATTEMPTS)
        raw = await request.body()
        form = parse_qs(raw[:MAX_LOGIN_BODY_BYTES].decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0]
        if not self.auth.token_matches(token):
            self.auth.note_failure(client)
            return self.page("login.html", 401, texts.PANEL_WRONG_TOKEN)
        sid, session = self.auth.open_session()
        response = RedirectResponse(f"{self.base}/", status_code=303, headers=SECURITY_HEADERS)
        secure = _is_https(request)
        response.set_cookie(
            SESSION_COOKIE,
            sid,
            max_age=SESSION_SECONDS,
            path=f"{self.base}/",
            httponly=True,
            samesite="strict",
            secure=secure,
        )
        # Readable by the pages (they copy it into the header), sent by no other site.
        response.set_cookie(
            CSRF_COOKIE,
            session.csrf,
            max_age=SESSION_SECONDS,
            path=f"{self.base}/",
            httponly=False,
            samesite="strict",
            secure=secure,
        )
        return response

    async def logout(self, request: Request) -> Response:
        # The cookie is SameSite=Strict: another site's form cannot log anyone out.
        self.auth.close_session(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(f"{self.base}/", status_code=303, headers=SECURITY_HEADERS)
        response.delete_cookie(SESSION_COOKIE, path=f"{self.base}/")
        response.delete_cookie(CSRF_COOKIE, path=f"{self.base}/")
        return response

    async def static(self, name: str) -> Response:
        if name not in STATIC_TYPES:
            return JSONResponse({"error": "not_found"}, status_code=404)
        return Response(
            self._files[name],
            media_type=STATIC_TYPES[name],
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )

    # -- the JSON API -----------------------------------------------------------------

    def _session_of(self, request: Request) -> PanelSession | None:
        return self.auth.session(request.cookies.get(SESSION_COOKIE))

    def _refusal(self, request: Request, *, write: bool) -> JSONResponse | None:
        """Why this API request may not go on (401 / 403 / 429), or None."""
        header = request.headers.get("Authorization", "")
        if header[:7].lower() == "bearer ":
            client = _client(request)
            if self.auth.limited(client):
                return _error(429, "rate_limited", texts.PANEL_TOO_MANY_ATTEMPTS)
            if self.auth.token_matches(header[7:].strip()):
                return None
            self.auth.note_failure(client)
            return _error(401, "unauthorized", texts.PANEL_WRONG_TOKEN)
        session = self._session_of(request)
        if session is None:
            return _error(401, "unauthorized", texts.PANEL_UNAUTHORIZED)
        if write and not csrf_matches(session, request.headers.get(CSRF_HEADER)):
            return _error(403, "csrf", texts.PANEL_CSRF_REJECTED)
        return None

    def api(
        self,
        handler: Callable[..., Awaitable[Any]],
        *,
        write: bool = False,
        scoped: bool = True,
        with_body: bool = False,
        status: int = 200,
    ) -> Callable[..., Awaitable[Response]]:
        """Wrap `handler(runtime, [scope], **path/query params, [body])` in the checks:
        auth, CSRF for writes, a valid scope, a running bot, a JSON object body."""

        async def endpoint(request: Request) -> Response:
            refusal = self._refusal(request, write=write)
            if refusal is not None:
                return refusal
            params: dict[str, Any] = dict(request.path_params)
            args: list[Any] = []
            if scoped:
                try:
                    args.append(parse_scope(params.pop("scope")))
                except BadScope:
                    return _error(400, "bad_scope", texts.PANEL_BAD_SCOPE)
            runtime = self.runtime()
            if runtime is None:
                return _error(503, "not_running", texts.PANEL_NOT_RUNNING)
            if with_body:
                body = await _json_object(request)
                if body is None:
                    return _error(400, "bad_request", texts.PANEL_BAD_JSON)
                params["body"] = body
            try:
                result = await handler(runtime, *args, request=request, **params)
            except PanelError as error:
                return JSONResponse(error.body, status_code=error.status, headers=_API_HEADERS)
            return JSONResponse(result, status_code=status, headers=_API_HEADERS)

        return endpoint

    # Handlers: each takes the runtime, the scope when scoped, and what the URL carries.

    async def list_chats(self, runtime: Runtime, *, request: Request) -> Any:
        return await self.data.chats(runtime)

    async def list_people(self, runtime: Runtime, *, request: Request) -> Any:
        return await self.data.people(runtime)

    async def get_chat(self, runtime: Runtime, scope: Scope, *, request: Request) -> Any:
        return await self.data.chat(runtime, scope)

    async def list_memories(self, runtime: Runtime, scope: Scope, *, request: Request) -> Any:
        return await self.data.memories(runtime, scope, request.query_params.get("q"))

    async def create_memory(
        self, runtime: Runtime, scope: Scope, *, request: Request, body: dict
    ) -> Any:
        return await self.data.create_memory(runtime, scope, body)

    async def update_memory(
        self, runtime: Runtime, scope: Scope, *, request: Request, memory_id: str, body: dict
    ) -> Any:
        return await self.data.update_memory(runtime, scope, memory_id, body)

    async def delete_memory(
        self, runtime: Runtime, scope: Scope, *, request: Request, memory_id: str
    ) -> Any:
        return await self.data.delete_memory(runtime, scope, memory_id)

    async def restore_memory(
        self, runtime: Runtime, scope: Scope, *, request: Request, memory_id: str
    ) -> Any:
        return await self.data.restore_memory(runtime, scope, memory_id)

    async def tombstones(self, runtime: Runtime, scope: Scope, *, request: Request) -> Any:
        return await self.data.tombstones(runtime, scope)

    async def review(self, runtime: Runtime, scope: Scope, *, request: Request) -> Any:
        return await self.data.review(runtime, scope)

    async def review_now(
        self, runtime: Runtime, scope: Scope, *, request: Request, body: dict | None = None
    ) -> Any:
        return await self.data.review_now(runtime, scope)

    async def chat_log(self, runtime: Runtime, scope: Scope, *, request: Request) -> Any:
        query = request.query_params
        limit = _int(query.get("limit"), CHAT_LOG_DEFAULT_LIMIT)
        return await self.data.chat_log(runtime, scope, query.get("q"), limit)

    async def usage(self, runtime: Runtime, scope: Scope, *, request: Request) -> Any:
        return await self.data.usage(runtime, scope, _int(request.query_params.get("days"), 30))


_API_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def build_router(routes: PanelRoutes) -> APIRouter:
    """Every route of the panel under `routes.base`."""
    router = APIRouter()
    base, api = routes.base, f"{routes.base}/api"
    add = router.add_api_route
    add(base, routes.bare_path, methods=["GET"], include_in_schema=False)
    add(f"{base}/", routes.home, methods=["GET"], include_in_schema=False)
    add(f"{base}/login", routes.login, methods=["POST"], include_in_schema=False)
    add(f"{base}/logout", routes.logout, methods=["POST"], include_in_schema=False)
    add(f"{base}/static/{{name}}", routes.static, methods=["GET"], include_in_schema=False)
    add(f"{base}/chats/{{scope}}", routes.chat_page, methods=["GET"], include_in_schema=False)
    endpoints: list[tuple[str, str, Callable[..., Awaitable[Response]]]] = [
        ("GET", "/chats", routes.api(routes.list_chats, scoped=False)),
        ("GET", "/people", routes.api(routes.list_people, scoped=False)),
        ("GET", "/chats/{scope}", routes.api(routes.get_chat)),
        ("GET", "/chats/{scope}/memories", routes.api(routes.list_memories)),
        (
            "POST",
            "/chats/{scope}/memories",
            routes.api(routes.create_memory, write=True, with_body=True, status=201),
        ),
        (
            "PATCH",
            "/chats/{scope}/memories/{memory_id}",
            routes.api(routes.update_memory, write=True, with_body=True),
        ),
        (
            "DELETE",
            "/chats/{scope}/memories/{memory_id}",
            routes.api(routes.delete_memory, write=True),
        ),
        (
            "POST",
            "/chats/{scope}/memories/{memory_id}/restore",
            routes.api(routes.restore_memory, write=True),
        ),
        ("GET", "/chats/{scope}/tombstones", routes.api(routes.tombstones)),
        ("GET", "/chats/{scope}/review", routes.api(routes.review)),
        ("POST", "/chats/{scope}/review", routes.api(routes.review_now, write=True)),
        ("GET", "/chats/{scope}/chatlog", routes.api(routes.chat_log)),
        ("GET", "/chats/{scope}/usage", routes.api(routes.usage)),
    ]
    for method, path, endpoint in endpoints:
        add(f"{api}{path}", endpoint, methods=[method], include_in_schema=False)
    return router


def _error(status: int, error: str, reason: str) -> JSONResponse:
    return JSONResponse(
        {"error": error, "reason": reason}, status_code=status, headers=_API_HEADERS
    )


def _client(request: Request) -> str:
    """The address failures are counted for (the proxy's, behind a reverse proxy)."""
    return request.client.host if request.client else "?"


def _is_https(request: Request) -> bool:
    forwarded = request.headers.get("X-Forwarded-Proto", "")
    return request.url.scheme == "https" or forwarded.lower() == "https"


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


async def _json_object(request: Request) -> dict[str, Any] | None:
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None
