"""The panel is a guest in the host's FastAPI app: its routes stay out of the host's OpenAPI
schema, and it answers its own refusals without the host's exception handlers, which it
neither adds to nor relies on."""

from __future__ import annotations

from tests.panel.conftest import BASE, PANEL_TOKEN, PanelApp


async def test_the_panels_routes_stay_out_of_the_hosts_openapi_schema(panel: PanelApp) -> None:
    assert panel.app.openapi()["paths"] == {}


async def test_the_panel_adds_no_exception_handler_or_middleware_to_the_host(plugin) -> None:
    from fastapi import FastAPI

    from tests.panel.conftest import build_panel_app

    bare = FastAPI()
    built = build_panel_app(plugin)

    assert built.app.exception_handlers.keys() == bare.exception_handlers.keys()
    assert built.app.user_middleware == bare.user_middleware
    await built.data.close()


async def test_refusals_keep_their_shape_under_a_host_with_its_own_handlers(
    panel: PanelApp,
) -> None:
    from fastapi import HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import PlainTextResponse

    async def host_handler(request: Request, exc: Exception) -> PlainTextResponse:
        return PlainTextResponse("the host's own answer", status_code=418)

    panel.app.add_exception_handler(HTTPException, host_handler)
    panel.app.add_exception_handler(RequestValidationError, host_handler)
    bearer = {"Authorization": f"Bearer {PANEL_TOKEN}"}
    async with panel.client() as client:
        anonymous = await client.get(f"{BASE}/api/chats")
        bad_body = await client.post(
            f"{BASE}/api/chats/g:111/memories", content=b"{", headers=bearer
        )
        bad_field = await client.post(
            f"{BASE}/api/chats/g:111/memories", json={"content": 5}, headers=bearer
        )

    assert anonymous.status_code == 401
    assert anonymous.json()["error"] == "unauthorized"
    assert (bad_body.status_code, bad_body.json()["error"]) == (400, "bad_request")
    assert (bad_field.status_code, bad_field.json()["error"]) == (400, "bad_request")
