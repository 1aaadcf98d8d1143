"""A MemoryService on a real database, for rules that read clearer without a chat: on each
backend, the SQLite file and a PostgreSQL server (the fixtures of tests/store/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

# The store tests' backend fixtures, shared: `backend` (sqlite, postgresql), `db_path` and
# `open_backend` (the same database at every call, so a reopen is a restart).
from tests.store.conftest import backend, db_path, open_backend

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.memory.service import MemoryService

__all__ = ["backend", "db_path", "memory", "open_backend"]


@pytest.fixture
async def memory(open_backend) -> AsyncIterator[MemoryService]:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    database = await open_backend()
    yield MemoryService(MemoryStore(database))
    await database.close()
