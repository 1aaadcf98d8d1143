"""The web panel: what the bot remembers and what it costs, per chat, in a browser. Served
by NoneBot's own FastAPI server under `aimemory_panel_path`, only when `aimemory_panel_token`
is set; with another driver (or none) it logs that it is unavailable and the plugin runs on.
FastAPI is imported only when the panel is mounted: it is not a dependency of the plugin."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .views import ChatNameSource, PanelData

if TYPE_CHECKING:
    from fastapi import APIRouter

    from ..config import Config
    from .dependencies import RuntimeGetter

logger = logging.getLogger("nonebot_plugin_aimemory")


def panel_router(
    config: Config, names: ChatNameSource, runtime: RuntimeGetter
) -> tuple[APIRouter, PanelData]:
    """The panel's routes for this configuration (FastAPI must be importable), and the
    data they read, whose background work is closed at shutdown."""
    from .auth import ClientAddresses, PanelAuth
    from .routes import build_router

    data = PanelData(names)
    auth = PanelAuth(
        config.aimemory_panel_token.get_secret_value(),
        ClientAddresses(config.panel_trusted_proxies),
    )
    return build_router(config.aimemory_panel_path, auth, data, runtime), data


def mount_panel(config: Config, names: ChatNameSource, runtime: RuntimeGetter) -> PanelData | None:
    """Add the panel to NoneBot's FastAPI app and log its address; None (logged) when the
    panel is off or the driver serves no FastAPI app."""
    if not config.aimemory_panel_token.get_secret_value():
        return None
    import nonebot
    from nonebot.drivers import ASGIMixin

    try:
        from fastapi import FastAPI
    except ImportError:
        logger.warning("web panel unavailable: FastAPI is not installed (DRIVER=~fastapi)")
        return None
    driver = nonebot.get_driver()
    app = driver.server_app if isinstance(driver, ASGIMixin) else None
    if not isinstance(app, FastAPI):
        logger.warning(
            "web panel unavailable: driver %s serves no FastAPI app (DRIVER=~fastapi)",
            driver.type,
        )
        return None
    router, data = panel_router(config, names, runtime)
    app.include_router(router)
    host, port = driver.config.host, driver.config.port
    logger.info("web panel at http://%s:%s%s/", host, port, config.aimemory_panel_path)
    return data
