"""The checks of the panel's JSON API as FastAPI dependencies. FastAPI solves an
endpoint's dependencies in the order it lists them, each one's own first, and the first
refusal answers, so a request meets them in this order: a body announced longer than the
API takes (413), who asks (401 / 429, and 403 for a write on the cookie without its CSRF
token), the scope in the URL (400), a running bot (503), a JSON object body of at most
MAX_API_BODY_BYTES (413 / 400), memory switched on (409), the memory in the URL (404), the
body's fields (400). Refusals are PanelErrors, answered by ApiRoute on these routes only:
the host app's exception handlers and middleware are not ours to change. Bodies are read
here (and by the login form) only through `bounded_body`."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Cookie, Depends, Header, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect

from .. import texts
from ..memory import MemoryService
from ..runtime import Runtime
from .auth import CSRF_HEADER, SESSION_COOKIE, PanelAuth, csrf_matches
from .scopes import BadScope, Scope, parse_scope
from .views import (
    MemoryCreate,
    MemoryPatch,
    PanelError,
    bad_request,
    existing_memory,
    memories_of,
    read_body,
    refusal,
    require_service,
)

RuntimeGetter = Callable[[], "Runtime | None"]
API_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
# A memory's fields are a few KB at most.
MAX_API_BODY_BYTES = 64 * 1024
# The rest of a refused body may still be on its way: closing the connection after the
# answer spares the server reading (and throwing away) all of it.
CLOSE_CONNECTION = {"Connection": "close"}


class BodyTooLarge(PanelError):
    """413: a body longer than the route takes, refused without reading the rest."""

    def __init__(self) -> None:
        super().__init__(413, {"error": "too_large", "reason": texts.PANEL_BODY_TOO_LARGE})


def api_json(content: Any, status: int = 200, *, close: bool = False) -> JSONResponse:
    """An API answer, with the headers every one of them carries (and `Connection: close`
    with `close`)."""
    headers = {**API_HEADERS, **CLOSE_CONNECTION} if close else API_HEADERS
    return JSONResponse(content, status_code=status, headers=headers)


async def bounded_body(request: Request, max_bytes: int) -> bytes:
    """The body, read only while it stays within `max_bytes`: a longer Content-Length is
    refused unread, a longer stream (chunked, no length) as soon as it passes the cap."""
    refuse_declared_length_over(request, max_bytes)
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_bytes:
                raise BodyTooLarge()
    except ClientDisconnect:
        # No one is left to read the answer; this only keeps a traceback out of the log.
        raise bad_request(texts.PANEL_BODY_INCOMPLETE) from None
    return bytes(body)


def body_size_within(max_bytes: int) -> Callable[[Request], Coroutine[Any, Any, None]]:
    """The dependency refusing a request whose Content-Length passes `max_bytes`, before
    anything else is checked or read."""

    async def check(request: Request) -> None:
        refuse_declared_length_over(request, max_bytes)

    return check


def refuse_declared_length_over(request: Request, max_bytes: int) -> None:
    """BodyTooLarge when the request's Content-Length passes `max_bytes`."""
    declared = request.headers.get("content-length")
    if declared is None:
        return
    # The server refuses a malformed length before the app sees it; should one get
    # through, it is no length the panel can hold the body to.
    if not (declared.isascii() and declared.isdigit()) or int(declared) > max_bytes:
        raise BodyTooLarge()


class ApiRoute(APIRoute):
    """A route of the JSON API: a PanelError raised by a dependency or an endpoint is
    answered as its status and JSON body, closing the connection when the request came with
    a body (it may not have been read: 401 comes first)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except PanelError as error:
                return api_json(error.body, error.status, close=_carries_body(request))

        return answer


def _carries_body(request: Request) -> bool:
    """Whether the request came with a body (announced, or chunked)."""
    length = request.headers.get("content-length")
    return "transfer-encoding" in request.headers or (length is not None and length != "0")


def client_of(auth: PanelAuth, request: Request) -> str:
    """The client whose failures this request counts among (see ClientAddresses)."""
    peer = request.client.host if request.client else None
    return auth.clients.client_of(peer, request.headers.items())


def api_access(auth: PanelAuth, *, write: bool) -> Callable[..., Coroutine[Any, Any, None]]:
    """The dependency letting a request in: the token as a Bearer header, or a logged-in
    session's cookie (with its CSRF token in the header for a write)."""

    # Async, as every dependency here: FastAPI runs a sync one in a worker thread.
    async def check(
        request: Request,
        authorization: str = Header(""),
        session_id: str | None = Cookie(None, alias=SESSION_COOKIE),
        csrf: str | None = Header(None, alias=CSRF_HEADER),
    ) -> None:
        if authorization[:7].lower() == "bearer ":
            client = client_of(auth, request)
            if auth.limited(client):
                raise refusal(429, "rate_limited", texts.PANEL_TOO_MANY_ATTEMPTS)
            if not auth.token_matches(authorization[7:].strip()):
                auth.note_failure(client)
                raise refusal(401, "unauthorized", texts.PANEL_WRONG_TOKEN)
            return
        session = auth.session(session_id)
        if session is None:
            raise refusal(401, "unauthorized", texts.PANEL_UNAUTHORIZED)
        if write and not csrf_matches(session, csrf):
            raise refusal(403, "csrf", texts.PANEL_CSRF_REJECTED)

    return check


async def chat_scope(scope: str) -> Scope:
    """The scope the URL names, or 400."""
    try:
        return parse_scope(scope)
    except BadScope:
        raise refusal(400, "bad_scope", texts.PANEL_BAD_SCOPE) from None


async def json_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object, whatever its content type says (`curl -d` sends a form's);
    an empty body is an empty object, a longer one than MAX_API_BODY_BYTES 413, anything
    else 400."""
    return await json_object_within(request, MAX_API_BODY_BYTES)


async def json_object_within(request: Request, max_bytes: int) -> dict[str, Any]:
    """`json_object` for a route whose bodies may be up to `max_bytes` long."""
    raw = await bounded_body(request, max_bytes)
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict):
        raise bad_request(texts.PANEL_BAD_JSON)
    return body


@dataclass(frozen=True, slots=True)
class ApiDependencies:
    """The API's dependencies bound to one token and one runtime getter, as `Depends`
    markers: `body_size` for the router's `dependencies`, `read` and `write` for a
    route's, the rest for parameters' defaults. Bound per router rather than at module
    level: a process may serve several panels (the tests do), and FastAPI reads string
    annotations in module globals only."""

    body_size: Any
    read: Any
    write: Any
    runtime: Any
    memory_scope: Any
    service: Any
    creation: Any
    patch: Any


def api_dependencies(auth: PanelAuth, runtime_getter: RuntimeGetter) -> ApiDependencies:
    """Every dependency of the API, bound to `auth` and `runtime_getter`."""
    runtime = Depends(_running(runtime_getter))
    memory_scope = Depends(_memory_scope(runtime))
    service = Depends(_service(runtime))
    return ApiDependencies(
        body_size=Depends(body_size_within(MAX_API_BODY_BYTES)),
        read=Depends(api_access(auth, write=False)),
        write=Depends(api_access(auth, write=True)),
        runtime=runtime,
        memory_scope=memory_scope,
        service=service,
        creation=Depends(_creation(runtime, service)),
        patch=Depends(_patch(memory_scope, service)),
    )


def _running(runtime_getter: RuntimeGetter) -> Callable[[], Coroutine[Any, Any, Runtime]]:
    async def running() -> Runtime:
        runtime = runtime_getter()
        if runtime is None:
            raise refusal(503, "not_running", texts.PANEL_NOT_RUNNING)
        return runtime

    return running


def _memory_scope(runtime: Any) -> Callable[..., Coroutine[Any, Any, Scope]]:
    # The scope in the URL (400), then the running bot (503): the memories its page shows.
    async def memory_scope(scope: Scope = Depends(chat_scope), running: Runtime = runtime) -> Scope:
        return memories_of(running, scope)

    return memory_scope


def _service(runtime: Any) -> Callable[..., Coroutine[Any, Any, MemoryService]]:
    async def service(running: Runtime = runtime) -> MemoryService:
        return require_service(running)

    return service


def _creation(runtime: Any, service: Any) -> Callable[..., Coroutine[Any, Any, MemoryCreate]]:
    # The runtime, the body, the service in this order: 503 before a bad body's 400, before
    # memory being off (409), before the fields' 400.
    async def creation(
        _running: Runtime = runtime,
        body: dict[str, Any] = Depends(json_object),
        _service: MemoryService = service,
    ) -> MemoryCreate:
        return read_body(MemoryCreate, body)

    return creation


def _patch(memory_scope: Any, service: Any) -> Callable[..., Coroutine[Any, Any, MemoryPatch]]:
    # As for a creation, and an unknown memory is 404 before the body's fields are read.
    async def patch(
        memory_id: str,
        scope: Scope = memory_scope,
        body: dict[str, Any] = Depends(json_object),
        memories: MemoryService = service,
    ) -> MemoryPatch:
        await existing_memory(memories, scope, memory_id)
        return read_body(MemoryPatch, body)

    return patch
