"""Test setup through nonebug: NoneBot's init kwargs go in `NONEBOT_INIT_KWARGS`, and the
adapter and the plugin are loaded in `after_nonebot_init`, so test modules are collected
before NoneBot exists and import the plugin only inside tests and fixtures. Each test gets
its own database file and fake LLM server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import nonebot
import pytest
from nonebot.adapters.onebot.v11 import Adapter as OneBotV11Adapter
from nonebug import NONEBOT_INIT_KWARGS

from tests.fakes.image_server import ImageServer
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.qq import QQBot

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from tests.fakes.harness import PluginHarness
    from tests.fakes.postgres import PostgresServer

SELF_ID = "42"
SUPERUSER_ID = "10000"
ACCESS_TOKEN = "test-token"
NICKNAME = "小忆"


def pytest_configure(config: pytest.Config) -> None:
    data_root = tempfile.mkdtemp(prefix="aimemory-tests-")
    # NoneBot reads `.env` (and `.env.prod`) from the working directory unless told which
    # file to read: an empty one of the tests' own, so the `.env` that `python bot.py`
    # wrote beside bot.py cannot change the test bot (tests/test_startup.py checks it).
    no_settings = Path(data_root, "empty.env")
    no_settings.touch()
    config.stash[NONEBOT_INIT_KWARGS] = {
        "_env_file": (str(no_settings),),
        "driver": "~fastapi+~httpx+~websockets",
        "superusers": {SUPERUSER_ID},
        "nickname": {NICKNAME},
        "command_start": {"/", "~"},
        "onebot_access_token": ACCESS_TOKEN,
        "localstore_data_dir": f"{data_root}/data",
        "localstore_cache_dir": f"{data_root}/cache",
        "localstore_config_dir": f"{data_root}/config",
        "log_level": "WARNING",
    }


@pytest.fixture(scope="session", autouse=True)
def after_nonebot_init(after_nonebot_init: None) -> None:
    """Once NoneBot is initialised, before nonebug starts the driver: the OneBot V11
    adapter, the plugin with its matchers and startup hooks, and another plugin's `/status`
    command beside it (tests/plugins/status_fixture)."""
    nonebot.get_driver().register_adapter(OneBotV11Adapter)
    nonebot.load_plugin("nonebot_plugin_aimemory")
    nonebot.load_plugin("tests.plugins.status_fixture")


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test") as server:
        yield server


@pytest.fixture
def images() -> Iterator[ImageServer]:
    """A host for the pictures QQ users send and the model links to."""
    with ImageServer() as server:
        yield server


@pytest.fixture
def qq() -> QQBot:
    """A OneBot implementation that answers the plugin's lookups from what a test stored."""
    return QQBot()


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


@pytest.fixture
async def chat_store(tmp_path) -> AsyncIterator[ChatLogStore]:
    """A bare chat-log store on a real SQLite file, no runtime around it."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    database = await Database.open(tmp_path / "chat_log.db")
    yield ChatLogStore(database)
    await database.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (initdb and start take about two
    seconds); tests share it through `postgres_url`, each in a database of its own."""
    from tests.fakes.postgres import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of an empty database of this test's own, dropped afterwards (the server is
    started again first if the test left it stopped)."""
    with postgres_server.fresh_database() as url:
        yield url


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PostgresServer]:
    """A second real server, PostgreSQL 16 with pgvector from the `pgserver` wheel (the
    `[test]` extra). Skipped, saying why, only where that wheel does not exist; where the
    extra installs it, a missing one fails."""
    from tests.fakes.postgres import PgvectorNotFoundError, PostgresServer, pgserver_binaries

    with contextlib.ExitStack() as stack:
        try:
            bindir = stack.enter_context(pgserver_binaries())
        except PgvectorNotFoundError as missing:
            if missing.expected:
                pytest.fail(str(missing))
            pytest.skip(str(missing))
        yield stack.enter_context(PostgresServer(bindir))


@pytest.fixture
def pgvector_url(pgvector_server: PostgresServer) -> Iterator[str]:
    """The URL of an empty database of this test's own on the pgvector server; the app role
    owns it but, not being a superuser, may not create the extension (pgvector is not a
    trusted extension): `pgvector_server.admin_url(url)` may."""
    with pgvector_server.fresh_database() as url:
        yield url
