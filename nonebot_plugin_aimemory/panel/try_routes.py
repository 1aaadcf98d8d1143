"""The try page's JSON API under `{base}/api/try` (the page itself is pages.py's): what the
page is built from, a test chat's recent lines, sending a message and clearing a chat. The
same login and checks as the rest of the API (dependencies.py), but a message may be longer
than the other bodies: pasting a long text is part of what is tried, and the conversation
cuts it as QQ's. Only the test chats of trychat/members.py are reachable here."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from ..runtime import Runtime
from .dependencies import (
    ApiDependencies,
    ApiRoute,
    api_json,
    body_size_within,
    chat_scope,
    json_object_within,
)
from .scopes import Scope
from .views import CHAT_LOG_DEFAULT_LIMIT, chat_log_rows, try_chat

# A message of some 20 000 Chinese characters, or 60 000 ASCII ones: far beyond what the
# conversation keeps of one (MAX_PASTE_CHARS), so a long paste is answered, cut, as in QQ.
MAX_MESSAGE_BODY_BYTES = 256 * 1024


def try_router(base: str, deps: ApiDependencies) -> APIRouter:
    """The try page's API routes under `base`."""
    api = APIRouter(
        prefix=f"{base}/api/try",
        route_class=ApiRoute,
        include_in_schema=False,
        dependencies=[Depends(body_size_within(MAX_MESSAGE_BODY_BYTES))],
    )

    @api.get("", dependencies=[deps.read])
    async def get_setup(runtime: Runtime = deps.runtime) -> JSONResponse:
        return api_json(try_chat.setup(runtime, nicknames()))

    @api.get("/{scope}/history", dependencies=[deps.read])
    async def get_history(
        scope: Scope = Depends(_test_chat), runtime: Runtime = deps.runtime
    ) -> JSONResponse:
        return api_json(await chat_log_rows(runtime, scope, None, CHAT_LOG_DEFAULT_LIMIT))

    @api.post("/{scope}/messages", dependencies=[deps.write])
    async def post_message(
        scope: Scope = Depends(_test_chat),
        runtime: Runtime = deps.runtime,
        body: dict[str, Any] = Depends(_message_body),
    ) -> JSONResponse:
        return api_json(await try_chat.send(runtime, scope, body, nicknames()))

    @api.post("/{scope}/clear", dependencies=[deps.write])
    async def post_clear(
        scope: Scope = Depends(_test_chat), runtime: Runtime = deps.runtime
    ) -> JSONResponse:
        return api_json(await try_chat.clear(runtime, scope))

    return api


async def _test_chat(scope: Scope = Depends(chat_scope)) -> Scope:
    """The scope in the URL (400 when malformed), one of the test chats (404 otherwise)."""
    return try_chat.try_chat_scope(scope)


async def _message_body(request: Request) -> dict[str, Any]:
    return await json_object_within(request, MAX_MESSAGE_BODY_BYTES)


def nicknames() -> frozenset[str]:
    """NoneBot's NICKNAME: a group message starting with one is for the bot, as in QQ."""
    import nonebot

    try:
        return frozenset(nonebot.get_driver().config.nickname)
    except ValueError:  # NoneBot not initialised (a panel served on its own)
        return frozenset()
