"""The panel's pages over HTTP: the login form and what it posts to, logging out, the
overview, a chat's page and the try page (static files shipped in `static/`, the base path
filled in) and their scripts and styles. A page needs a logged-in session; without one the
home page is the login form."""

from __future__ import annotations

import html
from importlib import resources
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Cookie, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from .. import texts
from .auth import CSRF_COOKIE, SESSION_COOKIE, SESSION_SECONDS, PanelAuth
from .dependencies import (
    CLOSE_CONNECTION,
    BodyTooLarge,
    RuntimeGetter,
    bounded_body,
    client_of,
)
from .scopes import BadScope, Scope, parse_scope
from .views import PanelError, scope_is_known
from .views.time_zone import page_zone

# The files of static/ the router serves, with their types; nothing else is reachable.
STATIC_TYPES = {
    "panel.css": "text/css; charset=utf-8",
    "panel.js": "text/javascript; charset=utf-8",
    "overview.js": "text/javascript; charset=utf-8",
    "chat.js": "text/javascript; charset=utf-8",
    "try.js": "text/javascript; charset=utf-8",
}
PAGES = ("login.html", "overview.html", "chat.html", "error.html", "try.html")
# Where the login form may lead besides the overview (its hidden `next` field): a page
# named here, never an address, so the form cannot be made to send anyone elsewhere.
AFTER_LOGIN = {"try": "/try"}
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


class PanelPages:
    """The page handlers, bound to one token and one base path."""

    def __init__(self, base: str, auth: PanelAuth, runtime: RuntimeGetter) -> None:
        self.base = base
        self.auth = auth
        self.runtime = runtime
        self._files = {name: static_text(name) for name in (*PAGES, *STATIC_TYPES)}

    def router(self) -> APIRouter:
        """The page routes under the base path (none of them in the OpenAPI schema)."""
        router = APIRouter(include_in_schema=False)
        base, add = self.base, router.add_api_route
        add(base, self.bare_path, methods=["GET"])
        add(f"{base}/", self.home, methods=["GET"])
        add(f"{base}/login", self.login, methods=["POST"])
        add(f"{base}/logout", self.logout, methods=["POST"])
        add(f"{base}/static/{{name}}", self.static, methods=["GET"])
        add(f"{base}/chats/{{scope}}", self.chat_page, methods=["GET"])
        add(f"{base}/people/{{qq}}", self.person_page, methods=["GET"])
        add(f"{base}/try", self.try_page, methods=["GET"])
        return router

    def page(
        self, name: str, status: int = 200, error: str = "", after_login: str = ""
    ) -> HTMLResponse:
        """A page with the base path, the time zone its times are shown in (and maybe an
        error, and for the login form the page it leads to) filled in."""
        # The zone the runtime counts days in (empty before it started: the page's own
        # API calls then say the bot is not running).
        runtime = self.runtime()
        zone = page_zone(runtime.config.zone) if runtime is not None else None
        body = self._files[name].replace("{{base}}", html.escape(self.base))
        body = body.replace("{{zone}}", html.escape(zone.name if zone else ""))
        body = body.replace("{{zone_label}}", html.escape(zone.label if zone else ""))
        body = body.replace("{{error}}", html.escape(error))
        body = body.replace("{{next}}", html.escape(after_login))
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    async def home(self, session_id: str | None = Cookie(None, alias=SESSION_COOKIE)) -> Response:
        """The overview, or the login form."""
        if self.auth.session(session_id) is None:
            return self.page("login.html")
        return self.page("overview.html")

    async def chat_page(
        self, scope: str, session_id: str | None = Cookie(None, alias=SESSION_COOKIE)
    ) -> Response:
        """One scope's page (its data comes from the API); a chat the overview would not
        list is a 404 page saying so (views/known_chats.py decides which)."""
        if self.auth.session(session_id) is None:
            return self.page("login.html", 401, texts.PANEL_UNAUTHORIZED)
        try:
            parsed = parse_scope(scope)
        except BadScope:
            return self.page("error.html", 400, texts.PANEL_BAD_SCOPE)
        runtime = self.runtime()
        if runtime is not None and not await scope_is_known(runtime, parsed):
            return self.page("error.html", 404, texts.panel_chat_not_found(str(parsed)))
        return self.page("chat.html")

    async def try_page(
        self, session_id: str | None = Cookie(None, alias=SESSION_COOKIE)
    ) -> Response:
        """The try page: chat with the bot in test chats (its data comes from the API)."""
        if self.auth.session(session_id) is None:
            return self.page("login.html", 401, texts.PANEL_UNAUTHORIZED, after_login="try")
        return self.page("try.html")

    async def person_page(self, qq: str) -> Response:
        """The overview's "look up a QQ number" form: to that person's page. The key is
        made here, by `Scope`, so the page script never builds one."""
        try:
            scope = Scope.person(qq)
        except ValueError:
            return self.page("error.html", 400, texts.PANEL_BAD_SCOPE)
        return RedirectResponse(f"{self.base}/chats/{quote(str(scope), safe='')}", status_code=303)

    async def bare_path(self) -> Response:
        """The base path without its slash: to the home page."""
        return RedirectResponse(f"{self.base}/", status_code=307)

    async def login(self, request: Request) -> Response:
        """Trade the token from the form for a session (cookie) and its CSRF token."""
        try:
            raw = await bounded_body(request, MAX_LOGIN_BODY_BYTES)
        except PanelError as refused:
            response = self.page("login.html", refused.status, refused.body["reason"])
            if isinstance(refused, BodyTooLarge):
                response.headers.update(CLOSE_CONNECTION)
            return response
        # No `await` from the check to the count: concurrent guesses cannot all pass first.
        client = client_of(self.auth, request)
        if self.auth.limited(client):
            return self.page("login.html", 429, texts.PANEL_TOO_MANY_ATTEMPTS)
        form = parse_qs(raw.decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0]
        after = (form.get("next") or [""])[0]
        after = after if after in AFTER_LOGIN else ""
        if not self.auth.token_matches(token):
            self.auth.note_failure(client)
            return self.page("login.html", 401, texts.PANEL_WRONG_TOKEN, after_login=after)
        sid, session = self.auth.open_session()
        target = f"{self.base}{AFTER_LOGIN.get(after, '/')}"
        response = RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)
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

    async def logout(self, session_id: str | None = Cookie(None, alias=SESSION_COOKIE)) -> Response:
        """End the session and drop its cookies."""
        # The cookie is SameSite=Strict: another site's form cannot log anyone out.
        self.auth.close_session(session_id)
        response = RedirectResponse(f"{self.base}/", status_code=303, headers=SECURITY_HEADERS)
        response.delete_cookie(SESSION_COOKIE, path=f"{self.base}/")
        response.delete_cookie(CSRF_COOKIE, path=f"{self.base}/")
        return response

    async def static(self, name: str) -> Response:
        """A script or style of the pages; nothing else of the package."""
        if name not in STATIC_TYPES:
            return JSONResponse({"error": "not_found"}, status_code=404)
        return Response(
            self._files[name],
            media_type=STATIC_TYPES[name],
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )


def _is_https(request: Request) -> bool:
    forwarded = request.headers.get("X-Forwarded-Proto", "")
    return request.url.scheme == "https" or forwarded.lower() == "https"
