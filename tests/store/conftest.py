"""The stores run against both backends: the SQLite file and a real PostgreSQL server
(tests/fakes/postgres.py), each test on a database of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.backend import Backend
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore

BACKENDS = ("sqlite", "postgresql")
Opener = Callable[[], Awaitable["Backend"]]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Which database the test's stores use (a test may narrow it by parametrising
    `backend` itself)."""
    return str(request.param)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """The SQLite file of a test."""
    return tmp_path / "aimemory.db"


@pytest.fixture
def open_backend(backend: str, db_path: Path, request: pytest.FixtureRequest) -> Opener:
    """Opens the test's database, the same one every time (a reopen is a restart)."""
    if backend == "postgresql":
        from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase

        url = str(request.getfixturevalue("postgres_url"))
        return lambda: PostgresDatabase.open(url)
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    return lambda: Database.open(db_path)


@pytest.fixture
async def any_database(open_backend: Opener) -> AsyncIterator[Backend]:
    """The test's database, open, on each backend."""
    database = await open_backend()
    yield database
    await database.close()


@pytest.fixture
async def any_chat_store(any_database: Backend) -> ChatLogStore:
    """A bare chat-log store, no runtime around it, on each backend (the twin of
    `chat_store`, which is the SQLite file's)."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore

    return ChatLogStore(any_database)
