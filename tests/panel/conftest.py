"""The panel's router mounted on a fresh FastAPI app, over the plugin's real runtime (real
SQLite, fake LLM on 127.0.0.1), reached with httpx through ASGI; `panel_client` is logged
in through the login form like a browser, `anonymous` is not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx
import pytest
from pydantic import SecretStr

if TYPE_CHECKING:
    from fastapi import FastAPI

    from nonebot_plugin_aimemory.panel.views import PanelData
    from tests.fakes.harness import PluginHarness

PANEL_TOKEN = "panel-token-0123456789"
BASE = "/aimemory"


@dataclass
class PanelApp:
    """A FastAPI app serving the panel for the installed runtime."""

    app: FastAPI
    data: PanelData

    def client(self, **kwargs: object) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app)
        return httpx.AsyncClient(transport=transport, base_url="http://testserver", **kwargs)  # type: ignore[arg-type]


def build_panel_app(plugin: PluginHarness, names: object | None = None) -> PanelApp:
    from fastapi import FastAPI

    from nonebot_plugin_aimemory.panel import panel_router
    from nonebot_plugin_aimemory.panel.views import NoNames
    from nonebot_plugin_aimemory.runtime import current_runtime

    config = plugin.config().model_copy(update={"aimemory_panel_token": SecretStr(PANEL_TOKEN)})
    router, data = panel_router(config, names or NoNames(), current_runtime)  # type: ignore[arg-type]
    app = FastAPI()
    app.include_router(router)
    return PanelApp(app, data)


@pytest.fixture
async def panel(plugin: PluginHarness) -> AsyncIterator[PanelApp]:
    built = build_panel_app(plugin)
    yield built
    await built.data.close()


async def log_in(client: httpx.AsyncClient) -> str:
    """Log in through the form; returns the CSRF token the pages send with writes."""
    response = await client.post(f"{BASE}/login", data={"token": PANEL_TOKEN})
    assert response.status_code == 303, response.text
    return client.cookies["aimemory_csrf"]


@pytest.fixture
async def panel_client(panel: PanelApp) -> AsyncIterator[httpx.AsyncClient]:
    async with panel.client() as client:
        csrf = await log_in(client)
        client.headers["X-CSRF-Token"] = csrf
        yield client


@pytest.fixture
async def anonymous(panel: PanelApp) -> AsyncIterator[httpx.AsyncClient]:
    async with panel.client() as client:
        yield client
