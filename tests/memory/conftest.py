"""A MemoryService on a real SQLite file, for rules that read clearer without a chat."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.memory.service import MemoryService


@pytest.fixture
async def memory(tmp_path) -> AsyncIterator[MemoryService]:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.database import Database
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore

    database = await Database.open(tmp_path / "memory.db")
    yield MemoryService(MemoryStore(database))
    await database.close()
