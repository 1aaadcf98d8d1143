"""Switching the panel on: its two settings, mounting on NoneBot's FastAPI app with the
URL logged, and the real `python bot.py` serving it (or saying it cannot, under a driver
without a web server)."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from tests.fakes.bot_process import bot_process
from tests.fakes.openai_server import FakeOpenAI
from tests.panel.conftest import PANEL_TOKEN
from tests.test_startup import LOAD_AND_REPORT, ROOT, run_python


def test_the_panel_is_off_by_default_at_aimemory() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config()

    assert config.aimemory_panel_token.get_secret_value() == ""
    assert config.aimemory_panel_path == "/aimemory"


def test_a_token_shorter_than_16_characters_is_a_configuration_error_naming_the_key() -> None:
    from nonebot_plugin_aimemory.config import Config, describe_validation_error

    with pytest.raises(ValidationError) as caught:
        Config(aimemory_panel_token="short-secret")

    described = describe_validation_error(caught.value)
    assert described.startswith("aimemory_panel_token:")
    assert "16" in described
    assert "short-secret" not in described  # a secret is never repeated in the log


@pytest.mark.parametrize(
    ("raw", "path"), [("aimemory", "/aimemory"), ("/admin/memory/", "/admin/memory")]
)
def test_the_panel_path_is_read_as_one_path(raw: str, path: str) -> None:
    from nonebot_plugin_aimemory.config import Config

    assert Config(aimemory_panel_path=raw).aimemory_panel_path == path


@pytest.mark.parametrize("raw", ["/", "/a b", "/<script>", "/a?b"])
def test_a_panel_path_that_is_not_a_plain_path_is_refused(raw: str) -> None:
    from nonebot_plugin_aimemory.config import Config

    with pytest.raises(ValidationError):
        Config(aimemory_panel_path=raw)


def test_without_a_token_nothing_is_mounted() -> None:
    from nonebot_plugin_aimemory.config import Config
    from nonebot_plugin_aimemory.panel import mount_panel
    from nonebot_plugin_aimemory.panel.views import NoNames
    from nonebot_plugin_aimemory.runtime import current_runtime

    assert mount_panel(Config(), NoNames(), current_runtime) is None


async def test_mounting_adds_the_routes_to_nonebots_app_and_logs_the_url(
    plugin, plugin_log
) -> None:
    import nonebot

    from nonebot_plugin_aimemory.config import Config
    from nonebot_plugin_aimemory.panel import mount_panel
    from nonebot_plugin_aimemory.panel.views import NoNames
    from nonebot_plugin_aimemory.runtime import current_runtime

    config = Config(aimemory_panel_token=PANEL_TOKEN, aimemory_panel_path="/mounted-panel")
    data = mount_panel(config, NoNames(), current_runtime)

    transport = httpx.ASGITransport(app=nonebot.get_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        anonymous = await client.get("/mounted-panel/api/chats")
        bearer = await client.get(
            "/mounted-panel/api/chats", headers={"Authorization": f"Bearer {PANEL_TOKEN}"}
        )

    assert data is not None
    assert anonymous.status_code == 401
    assert bearer.status_code == 200
    driver_config = nonebot.get_driver().config
    assert (
        f"web panel at http://{driver_config.host}:{driver_config.port}/mounted-panel/"
        in plugin_log.text
    )
    await data.close()


def test_under_a_driver_without_a_web_server_the_panel_says_so_and_the_plugin_loads(
    tmp_path: Path,
) -> None:
    script = LOAD_AND_REPORT + (
        "import asyncio\n"
        "from nonebot_plugin_aimemory.panel import mount_panel\n"
        "from nonebot_plugin_aimemory.panel.views import NoNames\n"
        "print('MOUNTED', mount_panel(config, NoNames(), lambda: None))\n"
    )

    result = run_python(["-c", script], tmp_path, AIMEMORY_PANEL_TOKEN=PANEL_TOKEN)

    log = result.stdout + result.stderr
    assert "LOADED" in result.stdout
    assert "MOUNTED None" in result.stdout
    assert "web panel unavailable" in log


def test_bot_py_refuses_a_short_panel_token_naming_the_key(tmp_path: Path) -> None:
    shutil.copy(ROOT / "bot.py", tmp_path / "bot.py")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env.example")

    result = run_python(["bot.py"], tmp_path, AIMEMORY_PANEL_TOKEN="too-short")

    assert result.returncode != 0
    log = result.stdout + result.stderr
    assert "aimemory_panel_token" in log
    assert "too-short" not in log


async def test_the_real_bot_serves_the_panel_behind_the_token(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    async with bot_process(
        tmp_path, llm, HOST="127.0.0.1", AIMEMORY_PANEL_TOKEN=PANEL_TOKEN
    ) as bot:
        # Connected: the server listens.
        base = f"http://127.0.0.1:{bot.port}/aimemory"
        async with httpx.AsyncClient(timeout=5) as client:
            anonymous = await client.get(f"{base}/api/chats")
            bearer = await client.get(
                f"{base}/api/chats", headers={"Authorization": f"Bearer {PANEL_TOKEN}"}
            )
            login_page = await client.get(f"{base}/")
        log = bot.log_path.read_text("utf-8")

    assert anonymous.status_code == 401
    assert bearer.status_code == 200
    assert bearer.json() == []
    assert 'name="token"' in login_page.text
    assert f"web panel at http://127.0.0.1:{bot.port}/aimemory/" in log
