"""Test setup: NoneBot is initialised before collection so test modules can import the
plugin; each test gets its own database file and fake LLM server on 127.0.0.1."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import nonebot
import pytest
from nonebot.adapters.onebot.v11 import Adapter as OneBotV11Adapter

from tests.fakes.openai_server import FakeOpenAI

if TYPE_CHECKING:
    from tests.fakes.harness import PluginHarness

SELF_ID = "42"
SUPERUSER_ID = "10000"
ACCESS_TOKEN = "test-token"
NICKNAME = "小忆"


def pytest_configure(config: pytest.Config) -> None:
    data_root = tempfile.mkdtemp(prefix="aimemory-tests-")
    nonebot.init(
        driver="~fastapi+~httpx+~websockets",
        superusers={SUPERUSER_ID},
        nickname={NICKNAME},
        command_start={"/", "~"},
        onebot_access_token=ACCESS_TOKEN,
        localstore_data_dir=f"{data_root}/data",
        localstore_cache_dir=f"{data_root}/cache",
        localstore_config_dir=f"{data_root}/config",
        log_level="WARNING",
    )
    nonebot.get_driver().register_adapter(OneBotV11Adapter)
    nonebot.load_plugin("nonebot_plugin_aimemory")


@pytest.fixture(scope="session", autouse=True)
def _nonebot_init() -> None:
    """Replaces nonebug's fixture: NoneBot was initialised in pytest_configure."""
    from nonebot.matcher import matchers
    from nonebug.provider import NoneBugProvider

    matchers.set_provider(NoneBugProvider)


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test") as server:
        yield server


@pytest.fixture
def plugin_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Records of the plugin's logger, which feeds loguru and does not propagate to the
    root logger pytest listens on."""
    logger = logging.getLogger("nonebot_plugin_aimemory")
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, logger="nonebot_plugin_aimemory"):
            yield caplog
    finally:
        logger.removeHandler(caplog.handler)


@pytest.fixture
async def plugin(tmp_path, llm: FakeOpenAI) -> AsyncIterator[PluginHarness]:
    from tests.fakes.harness import PluginHarness

    harness = PluginHarness(db_path=str(tmp_path / "aimemory.db"), llm=llm)
    await harness.start()
    yield harness
    await harness.stop()
